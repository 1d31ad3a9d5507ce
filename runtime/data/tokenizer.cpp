#include "runtime/data/tokenizer.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "runtime/data/file_util.hpp"
#include "runtime/data/spm_api.hpp"

namespace dtwin::rt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModuleName = "libdtwin_spm.so";
constexpr unsigned kTrainingSeed = 20240101u;

std::vector<std::string> module_candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("DTWIN_SPM_MODULE"); env && *env) paths.emplace_back(env);
#ifdef DTWIN_SPM_MODULE
  paths.emplace_back(DTWIN_SPM_MODULE);
#endif
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / kModuleName).string());
    paths.push_back((exe.parent_path().parent_path() / "lib" / "dtwin" / kModuleName).string());
  }
  return paths;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDeepBind = 0;  // the sanitizers' runtimes refuse RTLD_DEEPBIND
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

const SpmApi* load_module() {
  std::string tried;
  for (const std::string& path : module_candidates()) {
    if (!fs::exists(path)) {
      tried += "\n  " + path + ": no such file";
      continue;
    }
    // RTLD_LOCAL | RTLD_DEEPBIND: SentencePiece and its bundled protobuf-lite bind to their own
    // symbols and stay invisible to LibTorch's libprotobuf (see spm_api.hpp).
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
    if (!handle) {
      tried += "\n  " + path + ": " + ::dlerror();
      continue;
    }
    using Entry = const SpmApi* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, "dtwin_spm_api"));
    const SpmApi* api = entry ? entry() : nullptr;
    if (!api || api->abi_version != SpmApi::kAbiVersion) {
      tried += "\n  " + path + ": not a dtwin_spm module of ABI version " +
               std::to_string(SpmApi::kAbiVersion);
      continue;
    }
    return api;  // never unloaded
  }
  throw std::runtime_error("cannot load the SentencePiece module " + std::string(kModuleName) +
                           " (build target dtwin_spm; set DTWIN_SPM_MODULE to its path):" + tried);
}

const SpmApi& spm() {
  static const SpmApi* api = load_module();
  return *api;
}

}  // namespace

std::string corpus_path(const std::string& data_dir) {
  const fs::path corpus = fs::path(data_dir) / "corpus.txt";
  if (!fs::is_regular_file(corpus)) {
    throw UserError("corpus " + corpus.string() + " is missing: run scripts/fetch_data.sh " +
                    data_dir + " to write the King James Bible corpus");
  }
  return corpus.string();
}

std::string ensure_tokenizer(const std::string& data_dir, int vocab_size) {
  if (vocab_size <= 0) {
    throw std::runtime_error("tokenizer vocab_size must be positive, got " +
                             std::to_string(vocab_size));
  }
  const fs::path corpus = corpus_path(data_dir);
  const std::string stem = "tokenizer-" + std::to_string(vocab_size);
  const fs::path model = fs::path(data_dir) / (stem + ".model");
  if (data::up_to_date(model, {corpus})) return model.string();

  data::FileLock lock(fs::path(data_dir) / ("." + stem + ".lock"));
  if (data::up_to_date(model, {corpus})) return model.string();  // another rank trained it

  const std::vector<std::pair<std::string, std::string>> options = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocab_size)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      // Every sentence (the corpus has ~57k), in file order: no sampling, no shuffling.
      {"input_sentence_size", "100000000"},
      {"shuffle_input_sentence", "false"},
      {"max_sentence_length", "65536"},
      {"num_threads", "1"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"minloglevel", "1"},  // warnings and errors only
  };
  std::string serialized, vocab, error;
  if (!spm().train(corpus.string(), options, kTrainingSeed, &serialized, &vocab, &error)) {
    throw std::runtime_error("training the SentencePiece tokenizer (vocab_size " +
                             std::to_string(vocab_size) + ") on " + corpus.string() +
                             " failed: " + error);
  }
  // The vocabulary (for people to read) first, the model last: its presence means done.
  write_file(fs::path(data_dir) / (stem + ".vocab"), vocab);
  write_file(model, serialized);
  return model.string();
}

Tokenizer::Tokenizer(const std::string& model_path) : path_(model_path) {
  std::string error;
  model_ = spm().load(model_path, &error);
  if (!model_) throw std::runtime_error("cannot load tokenizer " + model_path + ": " + error);
}

Tokenizer::~Tokenizer() {
  if (model_) spm().unload(model_);
}

int Tokenizer::vocab_size() const {
  return spm().piece_size(model_);
}
int Tokenizer::unk_id() const {
  return spm().unk_id(model_);
}
int Tokenizer::bos_id() const {
  return spm().bos_id(model_);
}
int Tokenizer::eos_id() const {
  return spm().eos_id(model_);
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  std::string error;
  if (!spm().encode(model_, text, &ids, &error)) {
    throw std::runtime_error("cannot encode with " + path_ + ": " + error);
  }
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  const int n = vocab_size();
  for (int id : ids) {
    if (id < 0 || id >= n) {
      throw std::out_of_range("cannot decode id " + std::to_string(id) + " with " + path_ + " (" +
                              std::to_string(n) + " pieces)");
    }
  }
  std::string text, error;
  if (!spm().decode(model_, ids, &text, &error)) {
    throw std::runtime_error("cannot decode with " + path_ + ": " + error);
  }
  return text;
}

std::vector<int32_t> Tokenizer::encode_lines(const std::string& path) const {
  std::vector<int32_t> ids;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec) ids.reserve(static_cast<size_t>(size / 3));
  std::string error;
  if (!spm().encode_lines(model_, path, eos_id(), &ids, &error)) {
    throw std::runtime_error("cannot encode " + path + " with " + path_ + ": " + error);
  }
  return ids;
}

}  // namespace dtwin::rt
