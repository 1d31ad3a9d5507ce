// The data pipeline: data/corpus.txt (scripts/fetch_data.sh), the SentencePiece tokenizer and the
// batches each rank reads. Without data/corpus.txt every test fails and says how to fetch it.
// LibTorch first: it pulls in glog, whose CHECK macro must not replace Catch's.
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/data/token_dataset.hpp"
#include "runtime/data/tokenizer.hpp"

namespace fs = std::filesystem;
using dtwin::rt::Batch;
using dtwin::rt::TokenDataset;

namespace {

constexpr int kVocab = 512;  // small, so that training takes seconds
constexpr int kSeqLen = 64;

/// The data folder, or a failed test that says how to fill it.
std::string data_dir() {
  const std::string dir = DTWIN_DATA_DIR;
  if (!fs::is_regular_file(fs::path(dir) / "corpus.txt")) {
    FAIL(dir << "/corpus.txt is missing: run scripts/fetch_data.sh to write the King James Bible "
                "corpus");
  }
  return dir;
}

const TokenDataset& dataset() {
  static const TokenDataset ds(data_dir(), kVocab, kSeqLen);
  return ds;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::vector<int64_t>> rows(const at::Tensor& t) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < t.size(0); ++i) {
    const at::Tensor row = t[i].contiguous();
    out.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
  }
  return out;
}

void check_batch(const Batch& b, int micro_batch_size) {
  REQUIRE(b.inputs.dtype() == at::kLong);
  REQUIRE(b.targets.dtype() == at::kLong);
  REQUIRE(b.inputs.sizes() == at::IntArrayRef({micro_batch_size, kSeqLen}));
  REQUIRE(b.targets.sizes() == at::IntArrayRef({micro_batch_size, kSeqLen}));
  CHECK(b.inputs.is_contiguous());
  CHECK(b.targets.is_contiguous());
  CHECK(at::equal(b.inputs.slice(1, 1, kSeqLen), b.targets.slice(1, 0, kSeqLen - 1)));
  CHECK(b.inputs.min().item<int64_t>() >= 0);
  CHECK(b.targets.max().item<int64_t>() < kVocab);
}

bool same(const Batch& a, const Batch& b) {
  return at::equal(a.inputs, b.inputs) && at::equal(a.targets, b.targets);
}

/// A fresh empty folder, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("dtwin-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

}  // namespace

TEST_CASE("corpus.txt is the whole King James Bible as plain text, one verse per line", "[data]") {
  std::istringstream text(read_file(fs::path(data_dir()) / "corpus.txt"));
  std::vector<std::string> verses;
  for (std::string line; std::getline(text, line);) verses.push_back(line);
  REQUIRE(verses.size() == 31102);  // the verses of the King James Version
  CHECK(verses.front() == "In the beginning God created the heaven and the earth.");
  CHECK(verses.back() == "The grace of our Lord Jesus Christ be with you all. Amen.");
  int64_t words = 0;
  for (size_t i = 0; i < verses.size(); ++i) {
    const std::string& v = verses[i];
    INFO("line " << i + 1 << ": '" << v << "'");
    REQUIRE_FALSE(v.empty());
    // No verse numbers in front, no chapter headings ("Genesis 1", "1 Kings 3") behind.
    CHECK_FALSE(std::isdigit(static_cast<unsigned char>(v.front())));
    CHECK_FALSE(std::isdigit(static_cast<unsigned char>(v.back())));
    // Single spaces, printable ASCII only.
    CHECK(v.find("  ") == std::string::npos);
    CHECK(v.front() != ' ');
    CHECK(std::all_of(v.begin(), v.end(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; }));
    std::istringstream in(v);
    words +=
        std::distance(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>());
  }
  CHECK(words == 789634);
}

TEST_CASE("ensure_tokenizer trains a model of the requested vocabulary once", "[data]") {
  const std::string dir = data_dir();
  const std::string path = dtwin::rt::ensure_tokenizer(dir, kVocab);
  CHECK(path == (fs::path(dir) / "tokenizer-512.model").string());
  REQUIRE(fs::is_regular_file(path));
  const dtwin::rt::Tokenizer tokenizer(path);
  CHECK(tokenizer.vocab_size() == kVocab);
  CHECK(tokenizer.unk_id() == 0);
  CHECK(tokenizer.bos_id() == 1);
  CHECK(tokenizer.eos_id() == 2);

  // Cached: a second call returns the same file untouched.
  const auto mtime = fs::last_write_time(path);
  CHECK(dtwin::rt::ensure_tokenizer(dir, kVocab) == path);
  CHECK(fs::last_write_time(path) == mtime);
}

TEST_CASE("training is deterministic and safe when ranks race for it", "[data]") {
  const std::string reference = dtwin::rt::ensure_tokenizer(data_dir(), kVocab);
  TempDir tmp;
  fs::copy_file(fs::path(data_dir()) / "corpus.txt", tmp.path / "corpus.txt");
  // Two "ranks" at once: one trains under the lock, the other waits and reuses the model.
  std::string paths[2];
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      try {
        paths[i] = dtwin::rt::ensure_tokenizer(tmp.path.string(), kVocab);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
  CHECK(paths[0] == paths[1]);
  CHECK(read_file(paths[0]) == read_file(reference));
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(tmp.path)) {
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE("missing corpus: a clear error that names scripts/fetch_data.sh", "[data]") {
  TempDir empty;
  REQUIRE_THROWS_WITH(dtwin::rt::ensure_tokenizer(empty.path.string(), kVocab),
                      Catch::Contains("scripts/fetch_data.sh"));
  REQUIRE_THROWS_WITH(TokenDataset(empty.path.string(), kVocab, kSeqLen),
                      Catch::Contains("scripts/fetch_data.sh"));
}

TEST_CASE("encode and decode round-trip", "[data]") {
  const TokenDataset& ds = dataset();
  const std::string sentence =
      "And God said, Let there be light: and there was light. Zerubbabel's 7 qubits?";
  const std::vector<int> ids = ds.encode(sentence);
  CHECK(ids.size() > 10);
  CHECK(ids.size() < sentence.size());
  CHECK(ds.decode(ids) == sentence);
  // Byte fallback: characters the corpus lacks still round-trip.
  const std::string unicode = "na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe6\x9d\xb1\xe4\xba\xac";
  CHECK(ds.decode(ds.encode(unicode)) == unicode);
}

TEST_CASE("the token stream splits 95/5 into whole sequences", "[data]") {
  const TokenDataset& ds = dataset();
  CHECK(ds.vocab_size() == kVocab);
  CHECK(ds.seq_len() == kSeqLen);
  CHECK(ds.num_tokens() > 1000000);
  const double span = kSeqLen + 1;
  CHECK(ds.train_sequences() == static_cast<int64_t>(ds.num_tokens() * 0.95) / (kSeqLen + 1));
  CHECK(ds.validation_sequences() > 0);
  CHECK(ds.validation_sequences() * span <= ds.num_tokens() * 0.05 + 1);
  CHECK(ds.validation_sequences() * span > ds.num_tokens() * 0.05 - 2 * span);
  // A second instance reads the token cache and sees the same stream.
  const TokenDataset again(data_dir(), kVocab, kSeqLen);
  CHECK(again.num_tokens() == ds.num_tokens());
  CHECK(fs::is_regular_file(fs::path(data_dir()) / "tokens-512.bin"));
}

TEST_CASE("batches: targets are the inputs shifted by one", "[data]") {
  const TokenDataset& ds = dataset();
  for (int64_t step : {0, 1, 17}) {
    for (int mbs : {1, 3}) check_batch(ds.batch(step, 1, 2, 2, 4, mbs, 42), mbs);
  }
  check_batch(ds.validation_batch(0, 4), 4);
  check_batch(ds.validation_batch(5, 2), 2);
  // The decoded inputs read as English.
  std::string text;
  for (const auto& row : rows(ds.batch(0, 0, 0, 1, 1, 8, 0).inputs)) {
    text += ds.decode(std::vector<int>(row.begin(), row.end())) + "\n";
  }
  INFO(text);
  CHECK(text.size() > 8 * 80);
  CHECK(text.find(" the ") != std::string::npos);
  const auto letters = std::count_if(text.begin(), text.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == ' ';
  });
  CHECK(letters > static_cast<long>(text.size() * 8 / 10));
}

TEST_CASE("batches: DP replicas read disjoint sequences within a step", "[data]") {
  const TokenDataset& ds = dataset();
  const int dp = 4, m = 3, mbs = 2;
  for (int64_t step : {0, 5, 123}) {
    std::set<std::vector<int64_t>> seen;
    std::set<int64_t> indices;
    for (int d = 0; d < dp; ++d) {
      for (int j = 0; j < m; ++j) {
        for (const auto& row : rows(ds.batch(step, d, j, dp, m, mbs, 7).inputs)) seen.insert(row);
      }
    }
    const int64_t g = dp * m * mbs;
    for (int64_t p = step * g; p < step * g + g; ++p) indices.insert(ds.train_sequence_at(p, 7));
    CHECK(seen.size() == static_cast<size_t>(g));
    CHECK(indices.size() == static_cast<size_t>(g));
  }
}

TEST_CASE("batches: dp=2 x m=2 reads what one rank with m=4 reads, in order", "[data]") {
  const TokenDataset& ds = dataset();
  for (int64_t step : {0, 1, 9}) {
    for (int d = 0; d < 2; ++d) {
      for (int j = 0; j < 2; ++j) {
        const Batch split = ds.batch(step, d, j, 2, 2, 3, 11);
        const Batch single = ds.batch(step, 0, d * 2 + j, 1, 4, 3, 11);
        CHECK(same(split, single));
      }
    }
  }
}

TEST_CASE("batches: deterministic across instances, different across seeds", "[data]") {
  const TokenDataset& ds = dataset();
  const TokenDataset other(data_dir(), kVocab, kSeqLen);
  for (int64_t step : {0, 3, 50}) {
    CHECK(same(ds.batch(step, 1, 1, 2, 2, 4, 1234), other.batch(step, 1, 1, 2, 2, 4, 1234)));
    CHECK_FALSE(same(ds.batch(step, 1, 1, 2, 2, 4, 1234), ds.batch(step, 1, 1, 2, 2, 4, 1235)));
    CHECK(same(ds.validation_batch(step, 4), other.validation_batch(step, 4)));
  }
  // Different steps read different data.
  CHECK_FALSE(same(ds.batch(0, 0, 0, 1, 1, 4, 1), ds.batch(1, 0, 0, 1, 1, 4, 1)));
}

TEST_CASE("batches: epochs wrap with a fresh permutation", "[data]") {
  const TokenDataset& ds = dataset();
  const int64_t n = ds.train_sequences();
  const uint64_t seed = 3;
  // Each epoch is a permutation of all training sequences, and epochs differ.
  std::vector<int64_t> epoch0, epoch1;
  for (int64_t p = 0; p < n; ++p) epoch0.push_back(ds.train_sequence_at(p, seed));
  for (int64_t p = n; p < 2 * n; ++p) epoch1.push_back(ds.train_sequence_at(p, seed));
  for (const auto* epoch : {&epoch0, &epoch1}) {
    std::vector<int64_t> sorted = *epoch;
    std::sort(sorted.begin(), sorted.end());
    bool is_permutation = true;
    for (int64_t i = 0; i < n; ++i) is_permutation = is_permutation && sorted[i] == i;
    CHECK(is_permutation);
  }
  CHECK(epoch0 != epoch1);

  // A step that straddles the end of epoch 0, and one deep in epoch 2, both work and read the
  // stream positions they should.
  const int dp = 2, m = 2, mbs = 5;
  const int64_t g = dp * m * mbs;
  const int64_t straddle = n / g;  // [straddle*g, straddle*g + g) contains position n
  REQUIRE(straddle * g < n);
  REQUIRE(straddle * g + g > n);
  for (int64_t step : {straddle, (2 * n) / g + 7}) {
    for (int d = 0; d < dp; ++d) {
      for (int j = 0; j < m; ++j) {
        const Batch b = ds.batch(step, d, j, dp, m, mbs, seed);
        check_batch(b, mbs);
        const auto got = rows(b.inputs);
        for (int k = 0; k < mbs; ++k) {
          const int64_t p = step * g + (d * m + j) * mbs + k;
          const Batch one = ds.batch(p, 0, 0, 1, 1, 1, seed);  // G = 1: step p is position p
          CHECK(got[k] == rows(one.inputs)[0]);
        }
      }
    }
  }
  // Validation indices wrap around the split.
  const int64_t vb = ds.validation_batches(1);
  CHECK(same(ds.validation_batch(0, 1), ds.validation_batch(ds.validation_sequences(), 1)));
  CHECK(vb == ds.validation_sequences());
}

TEST_CASE("batches: bad arguments are rejected", "[data]") {
  const TokenDataset& ds = dataset();
  CHECK_THROWS(ds.batch(-1, 0, 0, 1, 1, 1, 0));
  CHECK_THROWS(ds.batch(0, 2, 0, 2, 1, 1, 0));
  CHECK_THROWS(ds.batch(0, 0, 4, 1, 4, 1, 0));
  CHECK_THROWS(ds.batch(0, 0, 0, 0, 1, 1, 0));
  CHECK_THROWS(ds.batch(0, 0, 0, 1, 1, 0, 0));
  CHECK_THROWS(ds.validation_batch(-1, 1));
  CHECK_THROWS(TokenDataset(data_dir(), kVocab, 0));
}
