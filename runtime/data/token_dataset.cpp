#include "runtime/data/token_dataset.hpp"

#include <ATen/ops/empty.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "runtime/data/file_util.hpp"
#include "runtime/data/tokenizer.hpp"

namespace dtwin::rt {

namespace fs = std::filesystem;

namespace {

// tokens-<vocab>.bin: this 24-byte header, then `count` int32 token ids, native byte order.
constexpr char kMagic[8] = {'D', 'T', 'W', 'N', 'T', 'O', 'K', '1'};
struct CacheHeader {
  char magic[8];
  int32_t vocab_size;
  int32_t reserved;
  int64_t count;
};
static_assert(sizeof(CacheHeader) == 24);

constexpr double kTrainFraction = 0.95;

bool read_cache(const fs::path& path, int vocab_size, std::vector<int32_t>& tokens) {
  std::ifstream in(path, std::ios::binary);
  CacheHeader header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return false;
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.vocab_size != vocab_size ||
      header.count <= 0) {
    return false;
  }
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size != sizeof header + static_cast<uint64_t>(header.count) * sizeof(int32_t)) {
    return false;
  }
  tokens.resize(static_cast<size_t>(header.count));
  if (!in.read(reinterpret_cast<char*>(tokens.data()),
               static_cast<std::streamsize>(tokens.size() * sizeof(int32_t)))) {
    return false;
  }
  for (int32_t id : tokens) {
    if (id < 0 || id >= vocab_size) return false;
  }
  return true;
}

void write_cache(const fs::path& path, int vocab_size, const std::vector<int32_t>& tokens) {
  CacheHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.vocab_size = vocab_size;
  header.count = static_cast<int64_t>(tokens.size());
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int32_t));
  write_file(path, bytes);
}

void check_range(const char* what, int64_t value, int64_t lo, int64_t hi_exclusive) {
  if (value < lo || value >= hi_exclusive) {
    throw UserError(std::string("TokenDataset: ") + what + " = " + std::to_string(value) +
                    " is outside [" + std::to_string(lo) + ", " + std::to_string(hi_exclusive) +
                    ")");
  }
}

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace

TokenDataset::TokenDataset(const std::string& data_dir, int vocab_size, int seq_len)
    : vocab_size_(vocab_size), seq_len_(seq_len) {
  if (seq_len < 1) {
    throw UserError("TokenDataset: seq_len must be positive, got " + std::to_string(seq_len));
  }
  const fs::path corpus = corpus_path(data_dir);
  tokenizer_path_ = ensure_tokenizer(data_dir, vocab_size);
  tokenizer_ = std::make_unique<Tokenizer>(tokenizer_path_);
  if (tokenizer_->vocab_size() != vocab_size) {
    throw std::runtime_error("tokenizer " + tokenizer_path_ + " has " +
                             std::to_string(tokenizer_->vocab_size()) + " pieces, expected " +
                             std::to_string(vocab_size));
  }

  const fs::path cache = fs::path(data_dir) / ("tokens-" + std::to_string(vocab_size) + ".bin");
  const fs::path model = tokenizer_path_;
  auto cached = [&] {
    return data::up_to_date(cache, {corpus, model}) && read_cache(cache, vocab_size, tokens_);
  };
  if (!cached()) {
    data::FileLock lock(fs::path(data_dir) / (".tokens-" + std::to_string(vocab_size) + ".lock"));
    if (!cached()) {  // no other rank wrote it meanwhile
      tokens_ = tokenizer_->encode_lines(corpus.string());
      write_cache(cache, vocab_size, tokens_);
    }
  }

  const int64_t n = static_cast<int64_t>(tokens_.size());
  const int64_t span = static_cast<int64_t>(seq_len) + 1;
  train_tokens_ = static_cast<int64_t>(static_cast<double>(n) * kTrainFraction);
  train_sequences_ = train_tokens_ / span;
  validation_sequences_ = (n - train_tokens_) / span;
  if (train_sequences_ == 0) {
    throw std::runtime_error("TokenDataset: the training split of " + corpus.string() + " (" +
                             std::to_string(train_tokens_) + " tokens) holds no sequence of " +
                             std::to_string(span) + " tokens (seq_len " + std::to_string(seq_len) +
                             " + 1)");
  }
  order_ = std::make_unique<EpochOrder>(train_sequences_, "TokenDataset");
}

TokenDataset::~TokenDataset() = default;

int64_t TokenDataset::train_sequence_at(int64_t position, uint64_t seed) const {
  return order_->at(position, seed);
}

Batch TokenDataset::gather(const std::vector<int64_t>& starts) const {
  const int64_t span = static_cast<int64_t>(seq_len_) + 1;
  at::Tensor all = at::empty({static_cast<int64_t>(starts.size()), span}, at::dtype(at::kLong));
  int64_t* out = all.data_ptr<int64_t>();
  for (size_t i = 0; i < starts.size(); ++i) {
    const int32_t* in = tokens_.data() + starts[i];
    for (int64_t k = 0; k < span; ++k) *out++ = in[k];
  }
  return {all.slice(1, 0, seq_len_).contiguous(), all.slice(1, 1, span).contiguous()};
}

Batch TokenDataset::batch(int64_t step, int replica, int microbatch, int dp, int microbatches,
                          int micro_batch_size, uint64_t seed) const {
  const int64_t first =
      order_->first_position(step, replica, microbatch, dp, microbatches, micro_batch_size);
  const int64_t span = static_cast<int64_t>(seq_len_) + 1;
  std::vector<int64_t> starts(static_cast<size_t>(micro_batch_size));
  for (int k = 0; k < micro_batch_size; ++k) starts[k] = order_->at(first + k, seed) * span;
  return gather(starts);
}

int64_t TokenDataset::validation_batches(int micro_batch_size) const {
  check_range("micro_batch_size", micro_batch_size, 1, kMaxInt);
  return validation_sequences_ / micro_batch_size;
}

Batch TokenDataset::validation_batch(int64_t index, int micro_batch_size) const {
  check_range("micro_batch_size", micro_batch_size, 1, kMaxInt);
  if (validation_sequences_ == 0) {
    throw std::runtime_error("TokenDataset: the validation split holds no sequence of " +
                             std::to_string(seq_len_ + 1) + " tokens");
  }
  check_range("validation batch index", index, 0,
              std::numeric_limits<int64_t>::max() / micro_batch_size);
  const int64_t span = static_cast<int64_t>(seq_len_) + 1;
  std::vector<int64_t> starts(static_cast<size_t>(micro_batch_size));
  for (int k = 0; k < micro_batch_size; ++k) {
    starts[k] = train_tokens_ + (index * micro_batch_size + k) % validation_sequences_ * span;
  }
  return gather(starts);
}

}  // namespace dtwin::rt
