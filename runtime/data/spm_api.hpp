// The table of SentencePiece functions that the dtwin_spm module (spm_module.cpp) exports.
//
// Why a module: Debian's libsentencepiece bundles its own protobuf-lite (3.14) and exports its
// symbols, which clash with the system libprotobuf (3.21) that LibTorch loads: a process that
// links both crashes at start-up inside libprotobuf. So no LibTorch binary may link
// libsentencepiece; the runtime dlopen()s libdtwin_spm.so with RTLD_LOCAL | RTLD_DEEPBIND
// instead (tokenizer.cpp), which keeps SentencePiece's protobuf symbols to itself.
// Both sides share the process' libstdc++, so the table passes standard library types.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtwin::rt {

struct SpmApi {
  static constexpr int kAbiVersion = 1;
  int abi_version;
  /// Trains a model with SentencePieceTrainer on the lines of the text file `input` (read
  /// through a SentenceIterator, so that the model does not record the file's path) with
  /// key=value options, and returns it serialized in *model, with its vocabulary as
  /// "piece<TAB>score" lines in *vocab; false + *error on failure.
  bool (*train)(const std::string& input,
                const std::vector<std::pair<std::string, std::string>>& options,
                unsigned random_seed, std::string* model, std::string* vocab, std::string* error);
  /// A loaded SentencePieceProcessor, or nullptr + *error.
  void* (*load)(const std::string& path, std::string* error);
  void (*unload)(void* model);
  int (*piece_size)(const void* model);
  int (*unk_id)(const void* model);
  int (*bos_id)(const void* model);
  int (*eos_id)(const void* model);
  bool (*encode)(const void* model, const std::string& text, std::vector<int>* ids,
                 std::string* error);
  bool (*decode)(const void* model, const std::vector<int>& ids, std::string* text,
                 std::string* error);
  /// Encodes every non-empty line of a text file, appending `separator` after each line.
  bool (*encode_lines)(const void* model, const std::string& path, int separator,
                       std::vector<int32_t>* ids, std::string* error);
};

}  // namespace dtwin::rt

/// The module's one exported symbol.
extern "C" const dtwin::rt::SpmApi* dtwin_spm_api();
