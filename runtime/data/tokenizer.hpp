// The SentencePiece BPE tokenizer that dtwin trains on the King James Bible (data/corpus.txt,
// written by scripts/fetch_data.sh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtwin::rt {

/// Path of the corpus in `data_dir`, data_dir/corpus.txt. Throws std::runtime_error, naming
/// scripts/fetch_data.sh, when it is missing.
std::string corpus_path(const std::string& data_dir);

/// Returns the path of data_dir/tokenizer-<vocab_size>.model, a SentencePiece BPE model of exactly
/// `vocab_size` pieces trained on data_dir/corpus.txt, and trains it first when it is missing or
/// older than the corpus. Training is deterministic (same corpus and vocab_size, same model):
/// every sentence in file order, one thread, a fixed seed; byte fallback, full character
/// coverage, identity normalization; ids 0 <unk>, 1 <s>, 2 </s>, no padding piece.
/// Ranks that call it at once are safe: one trains under a lock file while the others wait,
/// and the model appears by an atomic rename.
/// Throws std::runtime_error when corpus.txt is missing (run scripts/fetch_data.sh) or training
/// fails (e.g. a vocab_size too small for the 256 byte pieces and the corpus' characters).
std::string ensure_tokenizer(const std::string& data_dir, int vocab_size);

/// A loaded SentencePiece model. The const methods are safe to call from several threads.
/// SentencePiece lives in the libdtwin_spm.so module, loaded on first use (see spm_api.hpp); set
/// DTWIN_SPM_MODULE to its path to override where it is looked for.
class Tokenizer {
 public:
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  int vocab_size() const;
  int unk_id() const;
  int bos_id() const;
  int eos_id() const;
  const std::string& path() const { return path_; }

  std::vector<int> encode(const std::string& text) const;
  std::string decode(const std::vector<int>& ids) const;
  /// Every non-empty line of a text file, encoded, each followed by </s>.
  std::vector<int32_t> encode_lines(const std::string& path) const;

 private:
  std::string path_;
  void* model_ = nullptr;
};

}  // namespace dtwin::rt
