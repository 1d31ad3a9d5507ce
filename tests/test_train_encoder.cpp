// `dtwin train` of an encoder classifier end to end (issue 56): a small BERT on kjv-books, the
// shipped classification set (scripts/fetch_data.sh), as real processes over Gloo. Sizes are
// shrunk, the mechanism is not.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/run_process.hpp"
#include "tests/small_training.hpp"

using dtwin::test::losses;
using dtwin::test::run_dtwin;

namespace {

const std::string kSource = DTWIN_SOURCE_DIR;
const std::string kScenario = kSource + "/scenarios/bert-kjv-dp2.yaml";
const std::string kData = " --data-dir " + kSource + "/data";

/// A strided part of kjv-books (every `train_stride`-th training verse, every `dev_stride`-th
/// dev verse: all six labels in both), tokenized by scripts/tokenize_glue.py at 96 positions
/// (the longest verse has 93 tokens) into DIR; returns " --set training.dataset=DIR" and the
/// sequence keys. The real TSVs, tokenizer and tokenization: fewer and shorter rows, for time.
std::string kjv_part(const std::string& dir, int train_stride, int dev_stride) {
  const std::string books = kSource + "/data/kjv-books";
  std::string command = "mkdir -p " + dir + " && cp -r " + books + "/tokenizer " + dir;
  for (const auto& [split, stride] : {std::pair{"train", train_stride}, {"dev", dev_stride}})
    command += " && awk 'NR == 1 || NR % " + std::to_string(stride) + " == 0' " + books + "/" +
               split + ".tsv > " + dir + "/" + split + ".tsv && " + kSource + "/.venv/bin/python " +
               kSource + "/scripts/tokenize_glue.py --task sst2" + " --tokenizer " + books +
               "/tokenizer --labels " + books + "/labels.txt --max-len 96 " + dir + "/" + split +
               ".tsv " + dir + "/" + split + ".safetensors";
  const auto r = dtwin::test::run_process(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return " --set training.dataset=" + std::filesystem::absolute(dir).string() +
         " --set model.seq_len=96 --set model.max_position_embeddings=96";
}

/// `dtwin train` of bert-kjv-dp2 for `steps` steps with dp replicas of `m` microbatches of
/// `mbs` verses, `sync` and `extra`, into `out`; REQUIREs exit 0.
void train(const std::string& out, int steps, int dp, int m, int mbs, const std::string& sync,
           const std::string& extra = "") {
  const auto r = run_dtwin(
      "train " + kScenario + kData + " -o " + out + " --set training.steps=" +
      std::to_string(steps) + " --set training.warmup_steps=1 --set training.eval_every=0" +
      " --set layout.dp=" + std::to_string(dp) + " --set layout.microbatches=" + std::to_string(m) +
      " --set layout.micro_batch_size=" + std::to_string(mbs) + " --set layout.dp_sync=" + sync +
      " --set cluster.ranks_per_device=" + std::to_string(dp) + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

/// The rows of OUT/eval.csv (step, accuracy, f1, majority, examples) as numbers.
std::vector<std::vector<double>> eval_rows(const std::string& out) {
  std::ifstream in(out + "/eval.csv");
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::size_t start = 0;
    for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
      row.push_back(std::stod(line.substr(start, comma - start)));
    row.push_back(std::stod(line.substr(start)));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE(
    "an encoder's losses under dp 2 and dp 4 equal one rank's, for each dp_sync variant and ZeRO 2",
    "[train][encoder]") {
  const std::string base = "train-encoder-dp";
  const std::string part = kjv_part(base + "-data", 16, 32);  // 1,749 and 97 verses
  // One rank reading the whole global batch as dp · m microbatches: the same verses, the same
  // dropout masks (seeded by each microbatch's place in the global batch).
  for (const int dp : {2, 4}) {
    const int mbs = 32 / (2 * dp);  // 2 microbatches per replica, 32 verses a step
    const std::string one = base + std::to_string(dp) + "-one";
    train(one, 3, 1, 2 * dp, mbs, "allreduce", part);
    const std::vector<double> reference = losses(one);
    REQUIRE(reference.size() == 3);
    // ZeRO 2 (DistilBERT's course lab) shards the gradients and optimizer states.
    for (const std::string sync : {"allreduce", "gather-scatter", "buckets", "zero2"}) {
      const std::string out = base + std::to_string(dp) + "-" + sync;
      const bool buckets = sync == "buckets", zero = sync == "zero2";
      train(out, 3, dp, 2, mbs, buckets || zero ? "allreduce" : sync,
            part + (buckets ? " --set layout.overlap_grad_reduce=true --set layout.bucket_size=1MB"
                    : zero  ? " --set layout.zero=2"
                            : ""));
      const std::vector<double> got = losses(out);
      REQUIRE(got.size() == reference.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("dp " << dp << " " << sync << " step " << i + 1);
        CHECK(std::abs(got[i] - reference[i]) <= 1e-5);
      }
      std::filesystem::remove_all(out);
    }
    std::filesystem::remove_all(one);
  }
  std::filesystem::remove_all(base + "-data");
}

TEST_CASE(
    "bf16 encoder training (autocast, fp32 master weights) tracks fp32 within 1% over 50 steps",
    "[train][encoder]") {
  const std::string base = "train-encoder-bf16";
  const std::string part = kjv_part(base + "-data", 16, 32);
  train(base + "-fp32", 50, 1, 1, 16, "allreduce", part);
  train(base + "-bf16", 50, 1, 1, 16, "allreduce", part + " --set training.precision=bf16");
  const std::vector<double> fp32 = losses(base + "-fp32"), bf16 = losses(base + "-bf16");
  REQUIRE(fp32.size() == 50);
  REQUIRE(bf16.size() == fp32.size());
  double largest = 0;
  for (std::size_t i = 0; i < fp32.size(); ++i)
    largest = std::max(largest, std::abs(bf16[i] - fp32[i]) / fp32[i]);
  CAPTURE(largest);
  CHECK(largest <= 0.01);
  CHECK(largest > 0);  // the bf16 run did compute in bf16
  for (const char* dir : {"-data", "-fp32", "-bf16"}) std::filesystem::remove_all(base + dir);
}

TEST_CASE("training.epochs trains ceil(epochs x examples / batch) steps, evaluating after each",
          "[train][encoder]") {
  const std::string base = "train-encoder-epochs";
  const std::string part = kjv_part(base + "-data", 64, 32);  // 437 training verses
  // 2 passes of 437 verses at 32 a step: 28 steps; the first pass ends in step 14 (verses 416 to
  // 447 of the stream), the second in step 28.
  train(base, 1, 1, 1, 32, "allreduce", part + " --set training.epochs=2");
  CHECK(losses(base).size() == 28);
  std::vector<double> evaluated;
  for (const std::vector<double>& row : eval_rows(base)) evaluated.push_back(row.at(0));
  CHECK(evaluated == std::vector<double>{14, 28});
  // More warm-up steps than the epochs give: exit 2 before any rank starts.
  const auto r = run_dtwin("train " + kScenario + kData + " -o " + base + "-bad" + part +
                           " --set training.epochs=1 --set training.warmup_steps=20" +
                           " --set layout.dp=1 --set layout.micro_batch_size=32" +
                           " --set cluster.ranks_per_device=1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("training.warmup_steps: expected at most the 14 steps"));
  for (const char* dir : {"-data", "", "-bad"}) std::filesystem::remove_all(base + dir);
}

TEST_CASE(
    "fine-tuning on kjv-books beats the majority class by 15 points and writes a "
    "checkpoint that training starts from",
    "[train][encoder]") {
  const std::string out = "train-encoder-finetune";
  // Every training verse, every fourth dev verse (777: majority class "history", 176).
  const std::string part = kjv_part(out + "-data", 1, 4);
  train(out, 200, 2, 1, 16, "allreduce",
        part +
            " --set training.eval_every=100 --set training.warmup_steps=20"
            " --set training.lr_decay_style=constant");
  const auto rows = eval_rows(out);
  REQUIRE(rows.size() == 2);  // after steps 100 and 200
  CHECK(rows[0][0] == 100);
  CHECK(rows[1][0] == 200);
  const double accuracy = rows[1][1], majority = rows[1][3];
  CHECK(rows[1][4] == 777);
  CHECK(majority == Approx(176.0 / 777).epsilon(1e-5));
  CHECK(accuracy >= majority + 0.15);
  const std::vector<double> first = losses(out);
  // The Hugging Face folder dtwin wrote: a run started from it begins where this one ended.
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt"})
    CHECK(std::filesystem::exists(out + "/hf-checkpoint/" + file));
  const std::string again = out + "-again";
  train(again, 3, 2, 1, 16, "allreduce",
        part + " --set model.checkpoint=" + out + "/hf-checkpoint --set training.lr=1e-9");
  const std::vector<double> resumed = losses(again);
  REQUIRE(!resumed.empty());
  CHECK(resumed[0] < first[0] - 0.15);  // 1.80 (ln 6) at random initialisation
  std::filesystem::remove_all(out);
  std::filesystem::remove_all(again);
  std::filesystem::remove_all(out + "-data");
}

TEST_CASE("an encoder's bad checkpoint or data set exits 2 naming the file and the expectation",
          "[train][encoder]") {
  const std::string dir = "train-encoder-bad";
  std::filesystem::create_directories(dir);
  {
    std::ofstream config(dir + "/config.json");
    config << R"({"model_type": "bert", "vocab_size": 8000, "hidden_size": 256,
                  "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
                  "max_position_embeddings": 128, "id2label": {"0": "a", "1": "b", "2": "c",
                  "3": "d", "4": "e", "5": "f"}})";
  }
  const auto shape =
      run_dtwin("train " + kScenario + kData + " -o " + dir + "/out --set model.checkpoint=" + dir);
  CHECK(shape.exit_code == 2);
  CHECK_THAT(shape.output, Catch::Contains(dir + "/config.json: hidden size: expected 128 (the "
                                                 "scenario's model.d_model), got 256"));
  const auto missing = run_dtwin("train " + kScenario + kData + " -o " + dir +
                                 "/out --set training.dataset=" + dir + "/nothing");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains(dir + "/nothing/train.safetensors: missing"));
  const auto length =
      run_dtwin("train " + kScenario + kData + " -o " + dir +
                "/out --set model.seq_len=64 --set model.max_position_embeddings=64");
  CHECK(length.exit_code == 2);
  CHECK_THAT(length.output, Catch::Contains("train.safetensors: tensor 'input_ids': expected "
                                            "[27992, 64]"));
  std::filesystem::remove_all(dir);
}
