# Enforces the folder dependency rule on #include lines:
#   schedules/ includes no other folder of the project and no LibTorch; models/ includes only
#   schedules/ (LibTorch only in models/'s torch-modules library);
#   trace/ includes only schedules/ and models/ (no LibTorch, no SimGrid);
#   sim/ never includes LibTorch or runtime/; runtime/ never includes SimGrid or sim/.
# Usage: cmake -DROOT=<repo root> -P check_layering.cmake
set(rules
  "schedules|sim/|runtime/|models/|trace/|cli/|torch|simgrid"
  "trace|sim/|runtime/|cli/|torch|ATen/|c10/|simgrid|xbt/"
  "sim|torch/|ATen/|c10/|runtime/|cli/"
  "runtime|simgrid|xbt/|sim/|cli/")
set(failures "")
foreach(rule IN LISTS rules)
  string(REPLACE "|" ";" parts "${rule}")
  list(POP_FRONT parts folder)
  file(GLOB_RECURSE sources "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.cpp")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" includes REGEX "^#include")
    foreach(line IN LISTS includes)
      foreach(forbidden IN LISTS parts)
        string(FIND "${line}" "${forbidden}" at)
        if(NOT at EQUAL -1)
          string(APPEND failures "${source}: '${line}' breaks the ${folder}/ dependency rule\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
# models/: no other folder of the project but schedules/, and no SimGrid.
file(GLOB spec_sources "${ROOT}/models/*.hpp" "${ROOT}/models/*.cpp")
foreach(source IN LISTS spec_sources)
  file(STRINGS "${source}" includes REGEX "^#include")
  foreach(line IN LISTS includes)
    if(line MATCHES "sim/|runtime/|trace/|cli/|simgrid")
      string(APPEND failures "${source}: '${line}' breaks the models/ dependency rule\n")
    endif()
  endforeach()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "layering ok")
