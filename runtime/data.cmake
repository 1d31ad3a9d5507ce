# dtwin_data: the corpus (the King James Bible), its SentencePiece tokenizer and the token batches each rank reads
# (runtime/data/). Included from runtime/CMakeLists.txt.
#
# SentencePiece sits in its own module, libdtwin_spm.so, which dtwin_data dlopen()s with
# RTLD_LOCAL | RTLD_DEEPBIND: Debian's libsentencepiece exports a bundled protobuf-lite 3.14 that
# clashes with the libprotobuf 3.21 LibTorch loads (a binary linking both crashes at start-up).
# So never link PkgConfig::SentencePiece into a binary that links LibTorch.
if(NOT TARGET torch)
  find_package(Torch REQUIRED)
endif()
if(NOT TARGET PkgConfig::SentencePiece)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SentencePiece REQUIRED IMPORTED_TARGET GLOBAL sentencepiece)
endif()

add_library(dtwin_spm MODULE ${CMAKE_CURRENT_LIST_DIR}/data/spm_module.cpp)
target_include_directories(dtwin_spm PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(dtwin_spm PRIVATE PkgConfig::SentencePiece fmt::fmt)
set_target_properties(dtwin_spm PROPERTIES CXX_VISIBILITY_PRESET hidden
                                           VISIBILITY_INLINES_HIDDEN ON)

add_library(dtwin_data
  ${CMAKE_CURRENT_LIST_DIR}/data/file_util.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/token_dataset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/epoch_order.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/safetensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/classification_dataset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/data/open_training_data.cpp)
target_include_directories(dtwin_data PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(dtwin_data PUBLIC ${TORCH_LIBRARIES} PRIVATE dtwin_spec ${CMAKE_DL_LIBS}
                                                                  nlohmann_json::nlohmann_json)
# Where tokenizer.cpp finds the module (DTWIN_SPM_MODULE in the environment overrides it).
target_compile_definitions(dtwin_data PRIVATE DTWIN_SPM_MODULE="$<TARGET_FILE:dtwin_spm>")
add_dependencies(dtwin_data dtwin_spm)
