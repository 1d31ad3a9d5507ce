# LibTorch: the one inside the project's PyTorch (.venv/, scripts/install-deps.sh), found through
# its torch.utils.cmake_prefix_path. -DDTWIN_PYTHON=/path/to/python picks another PyTorch;
# -DTorch_DIR=... bypasses Python altogether.
#
# DTWIN_CUDA (AUTO, ON, OFF) is the one switch for dtwin's CUDA code paths (runtime/cuda/:
# ProcessGroupNCCL, caching-allocator statistics). AUTO turns them on when LibTorch was built
# with CUDA, which the PyPI wheels are: they then compile and link on every build, with or without
# a GPU, and a CUDA build still runs everything on the CPU. OFF is the CPU-only configuration.
# Sources see the choice as DTWIN_HAVE_CUDA (1 or 0) through the dtwin_cuda_switch target.
set(DTWIN_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python whose PyTorch provides LibTorch")
set(DTWIN_CUDA AUTO CACHE STRING "Compile dtwin's CUDA code paths: AUTO, ON or OFF")
set_property(CACHE DTWIN_CUDA PROPERTY STRINGS AUTO ON OFF)

if(NOT Torch_DIR)
  if(NOT EXISTS "${DTWIN_PYTHON}")
    message(FATAL_ERROR "No Python at ${DTWIN_PYTHON}: run scripts/install-deps.sh (it creates "
                        ".venv/ with the pinned PyTorch), or pass -DDTWIN_PYTHON or -DTorch_DIR")
  endif()
  execute_process(
    COMMAND "${DTWIN_PYTHON}" -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE torch_error RESULT_VARIABLE torch_status)
  if(NOT torch_status EQUAL 0)
    message(FATAL_ERROR "${DTWIN_PYTHON} cannot import torch (run scripts/install-deps.sh):\n"
                        "${torch_error}")
  endif()
  list(APPEND CMAKE_PREFIX_PATH "${torch_prefix}")
endif()
# Without an architecture list, a CUDA LibTorch's CMake probes the GPUs with a CUDA try_run, which
# fails to configure here (CMake 3.25 has no flags for CUDA with C++20). dtwin compiles no CUDA
# kernels of its own: Hopper is named so that the probe does not run.
if(NOT TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
find_package(Torch REQUIRED)
message(STATUS "LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}")

# ProcessGroupGloo.hpp includes Gloo's headers, which the PyPI wheel does not ship (its Gloo is
# compiled into libtorch_cpu.so). Debian's libgloo-dev provides the declarations; nothing of
# Debian's libgloo is linked. The header only holds Gloo objects through pointers, so the older
# headers give the same class layout.
find_path(GLOO_INCLUDE_DIR gloo/context.h REQUIRED)

set(torch_has_cuda 0)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(torch_has_cuda 1)
endif()
if(DTWIN_CUDA STREQUAL "AUTO")
  set(dtwin_have_cuda ${torch_has_cuda})
elseif(DTWIN_CUDA AND NOT torch_has_cuda)
  message(FATAL_ERROR "DTWIN_CUDA=ON but LibTorch ${TORCH_INSTALL_PREFIX} has no CUDA")
elseif(DTWIN_CUDA)
  set(dtwin_have_cuda 1)
else()
  set(dtwin_have_cuda 0)
endif()
message(STATUS "dtwin CUDA code paths: ${dtwin_have_cuda} (DTWIN_CUDA=${DTWIN_CUDA})")

add_library(dtwin_cuda_switch INTERFACE)
target_compile_definitions(dtwin_cuda_switch INTERFACE DTWIN_HAVE_CUDA=${dtwin_have_cuda})

# The PyPI wheels' libtorch.so and libtorch_cpu.so export a statically linked copy of parts of
# libstdc++, std::filesystem among them (pytorch/pytorch#133437). An executable that lists
# libtorch before libstdc++ binds its own std::filesystem calls to that copy, and
# std::filesystem::remove_all(path, error_code) there jumps to a null address. Naming libstdc++
# before every other library makes the system's definitions the ones found first.
add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
