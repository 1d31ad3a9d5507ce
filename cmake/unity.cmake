# Unity batches: the sources of a target compiled as one translation unit per batch of up to 8, so
# that heavy headers are parsed once per batch. Used where they dominate the build: LibTorch's
# (torch/torch.h alone takes about 28 s per translation unit, gcc 12, measured 2026-11-24) and the
# command-line sources' CLI11, nlohmann-json, yaml-cpp and fmt (20-30 s each under ASan). Sources
# of a batch share one namespace scope: file-local names must not collide.
function(dtwin_unity target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
endfunction()
