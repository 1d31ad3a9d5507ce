#include "runtime/data/classification_dataset.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <map>

#include "base/user_error.hpp"
#include "runtime/data/safetensors.hpp"

namespace dtwin::rt {
namespace {

namespace fs = std::filesystem;

struct ReadSplit {
  at::Tensor ids, types, mask, labels;
  std::vector<std::string> names;
};

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    names.push_back(text.substr(start, comma - start));
  names.push_back(text.substr(start));
  return names;
}

ReadSplit read_split(const fs::path& path, int seq_len, int vocab_size, int num_labels) {
  const std::string file = path.string();
  if (!fs::exists(path))
    throw UserError(file + ": missing (expected a tokenized split: scripts/tokenize_glue.py)");
  std::map<std::string, std::string> metadata;
  std::map<std::string, at::Tensor> t = read_safetensors(file, &metadata);
  for (const char* name : {"input_ids", "token_type_ids", "attention_mask", "labels"})
    if (!t.count(name))
      throw UserError(file + ": tensor '" + name + "': missing (expected input_ids, " +
                      "token_type_ids, attention_mask [N, S] and labels [N])");
  const at::Tensor& ids = t["input_ids"];
  const auto n = t["labels"].size(0);
  if (t["labels"].dim() != 1 || n < 1)
    throw UserError(file + ": tensor 'labels': expected [N] with N >= 1, got " +
                    c10::str(t["labels"].sizes()));
  for (const char* name : {"input_ids", "token_type_ids", "attention_mask"})
    if (t[name].dim() != 2 || t[name].size(0) != n || t[name].size(1) != seq_len)
      throw UserError(file + ": tensor '" + name + "': expected [" + std::to_string(n) + ", " +
                      std::to_string(seq_len) + "] (the labels' count, model.seq_len), got " +
                      c10::str(t[name].sizes()));
  const auto [lowest, highest] = at::aminmax(ids);
  if (lowest.item<std::int64_t>() < 0 || highest.item<std::int64_t>() >= vocab_size)
    throw UserError(file + ": tensor 'input_ids': expected ids in [0, " +
                    std::to_string(vocab_size) + ") (model.vocab_size), got ids from " +
                    std::to_string(lowest.item<std::int64_t>()) + " to " +
                    std::to_string(highest.item<std::int64_t>()));
  const at::Tensor labels = t["labels"].to(at::kLong);
  if (labels.min().item<std::int64_t>() < 0 || labels.max().item<std::int64_t>() >= num_labels)
    throw UserError(file + ": tensor 'labels': expected label indices in [0, " +
                    std::to_string(num_labels) + ") (model.num_labels), got " +
                    std::to_string(labels.max().item<std::int64_t>()));
  ReadSplit split;
  split.names =
      metadata.count("labels") ? split_names(metadata["labels"]) : std::vector<std::string>{};
  if (split.names.empty())
    for (int i = 0; i < num_labels; ++i) split.names.push_back("label_" + std::to_string(i));
  if (static_cast<int>(split.names.size()) != num_labels)
    throw UserError(file + ": metadata 'labels': expected " + std::to_string(num_labels) +
                    " names (model.num_labels), got " + std::to_string(split.names.size()));
  split.ids = ids;
  split.types = t["token_type_ids"];
  split.mask = t["attention_mask"];
  split.labels = labels.contiguous();
  return split;
}

}  // namespace

ClassificationDataset::ClassificationDataset(const std::string& dir, int seq_len, int vocab_size,
                                             int num_labels) {
  ReadSplit train =
      read_split(fs::path(dir) / "train.safetensors", seq_len, vocab_size, num_labels);
  ReadSplit dev = read_split(fs::path(dir) / "dev.safetensors", seq_len, vocab_size, num_labels);
  if (train.names != dev.names)
    throw UserError((fs::path(dir) / "dev.safetensors").string() +
                    ": metadata 'labels': expected the training split's label names");
  train_ = {train.ids, train.types, train.mask, train.labels};
  dev_ = {dev.ids, dev.types, dev.mask, dev.labels};
  labels_ = train.names;
  order_ = std::make_unique<EpochOrder>(train_.labels.size(0), "ClassificationDataset");
}

Batch ClassificationDataset::rows_of(const Split& split, const at::Tensor& rows) {
  const auto take = [&](const at::Tensor& t) { return t.index_select(0, rows).to(at::kLong); };
  return {at::stack({take(split.ids), take(split.types), take(split.mask)}, 1).contiguous(),
          split.labels.index_select(0, rows).contiguous()};
}

Batch ClassificationDataset::batch(std::int64_t step, int replica, int microbatch, int dp,
                                   int microbatches, int micro_batch_size,
                                   std::uint64_t seed) const {
  const std::int64_t first =
      order_->first_position(step, replica, microbatch, dp, microbatches, micro_batch_size);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(micro_batch_size));
  for (int k = 0; k < micro_batch_size; ++k) rows[k] = order_->at(first + k, seed);
  return rows_of(train_, at::tensor(rows, at::kLong));
}

Batch ClassificationDataset::dev_range(std::int64_t first, std::int64_t count) const {
  order_->check_range("dev range end", first + count, 1, dev_examples() + 1);
  return rows_of(dev_, at::arange(first, first + count, at::kLong));
}

}  // namespace dtwin::rt
