// libdtwin_spm.so: SentencePiece behind the SpmApi table (see spm_api.hpp for why it is a
// separate module). Links libsentencepiece; never LibTorch.
#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>

#include "runtime/data/spm_api.hpp"

namespace {

using sentencepiece::SentencePieceProcessor;

const SentencePieceProcessor& processor(const void* model) {
  return *static_cast<const SentencePieceProcessor*>(model);
}

/// The lines of a text file.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::string& path) : path_(path), in_(path) {
    if (!in_)
      status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                            "cannot read " + path);
    Next();
  }
  bool done() const override { return done_; }
  void Next() override {
    if (!status_.ok() || !std::getline(in_, line_)) {
      done_ = true;
      if (status_.ok() && in_.bad()) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss,
                                              "error while reading " + path_);
      }
    }
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::string line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

bool train(const std::string& input,
           const std::vector<std::pair<std::string, std::string>>& options, unsigned random_seed,
           std::string* model, std::string* vocab, std::string* error) {
  const std::unordered_map<std::string, std::string> kwargs(options.begin(), options.end());
  sentencepiece::SetRandomGeneratorSeed(random_seed);
  LineIterator lines(input);
  auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &lines, model);
  if (!status.ok()) {
    *error = status.ToString();
    return false;
  }
  SentencePieceProcessor sp;
  if (status = sp.LoadFromSerializedProto(*model); !status.ok()) {
    *error = "cannot load the trained model: " + status.ToString();
    return false;
  }
  vocab->clear();
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    *vocab += sp.IdToPiece(id);
    *vocab += fmt::format("\t{:g}\n", static_cast<double>(sp.GetScore(id)));
  }
  return true;
}

void* load(const std::string& path, std::string* error) {
  auto* sp = new SentencePieceProcessor();
  if (const auto status = sp->Load(path); !status.ok()) {
    *error = status.ToString();
    delete sp;
    return nullptr;
  }
  return sp;
}

void unload(void* model) {
  delete static_cast<SentencePieceProcessor*>(model);
}
int piece_size(const void* model) {
  return processor(model).GetPieceSize();
}
int unk_id(const void* model) {
  return processor(model).unk_id();
}
int bos_id(const void* model) {
  return processor(model).bos_id();
}
int eos_id(const void* model) {
  return processor(model).eos_id();
}

bool encode(const void* model, const std::string& text, std::vector<int>* ids, std::string* error) {
  const auto status = processor(model).Encode(text, ids);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

bool decode(const void* model, const std::vector<int>& ids, std::string* text, std::string* error) {
  const auto status = processor(model).Decode(ids, text);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

bool encode_lines(const void* model, const std::string& path, int separator,
                  std::vector<int32_t>* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line;
  std::vector<int> ids;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (const auto status = processor(model).Encode(line, &ids); !status.ok()) {
      *error = status.ToString();
      return false;
    }
    out->insert(out->end(), ids.begin(), ids.end());
    out->push_back(separator);
  }
  if (in.bad()) {
    *error = "error while reading " + path;
    return false;
  }
  return true;
}

constexpr dtwin::rt::SpmApi kApi = {
    dtwin::rt::SpmApi::kAbiVersion,
    train,
    load,
    unload,
    piece_size,
    unk_id,
    bos_id,
    eos_id,
    encode,
    decode,
    encode_lines,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dtwin::rt::SpmApi* dtwin_spm_api() {
  return &kApi;
}
