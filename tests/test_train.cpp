// `dtwin train` end to end: real processes, Gloo over loopback sockets, the King James Bible corpus
// and its SentencePiece tokenizer (scripts/fetch_data.sh must have run). Sizes are shrunk, the
// mechanism is not.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/loss_curves.hpp"
#include "tests/run_process.hpp"
#include "tests/small_training.hpp"

using dtwin::test::losses;
using dtwin::test::run_dtwin;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";
const std::string kDataDir = std::string(DTWIN_SOURCE_DIR) + "/data";

// DTWIN_TEST_DEVICE=cuda runs every training of these tests on the GPU (runtime.device; the
// ranks share it over Gloo), the equivalences included: the GPU acceptance of issue 11.
std::string device_args() {
  const char* device = std::getenv("DTWIN_TEST_DEVICE");
  return device && *device ? std::string(" --set runtime.device=") + device : "";
}

// A small LLaMA (quickstart's vocabulary and 6 layers, narrower) for 3 fp32 steps.
const std::string kSmallModel =
    " --set model.d_model=64 --set model.n_heads=4 --set model.ffn_hidden=128"
    " --set model.seq_len=64 --set training.steps=3 --set training.precision=fp32";
const std::string kSmall = kSmallModel + device_args() + " --data-dir " + kDataDir;

std::string layout_args(int dp, int pp, int m, const std::string& schedule, int v = 1,
                        const std::string& sync = "allreduce", int tp = 1) {
  return " --set layout.dp=" + std::to_string(dp) + " --set layout.pp=" + std::to_string(pp) +
         " --set layout.tp=" + std::to_string(tp) +
         " --set layout.microbatches=" + std::to_string(m) + " --set layout.schedule=" + schedule +
         " --set layout.virtual_stages=" + std::to_string(v) + " --set layout.dp_sync=" + sync +
         " --set cluster.ranks_per_device=" + std::to_string(dp * pp * tp);
}

// `key` of every rank in DIR/FILE (measured.summary.json or predicted.summary.json); 0 where
// an `optional` key is absent (a summary leaves out all_to_all_bytes of 0).
std::vector<double> per_rank(const std::string& dir, const std::string& file,
                             const std::string& key, bool optional = false) {
  std::ifstream in(dir + "/" + file);
  const nlohmann::json summary = nlohmann::json::parse(in);
  std::vector<double> values;
  for (const auto& rank : summary.at("ranks"))
    values.push_back(optional ? rank.value(key, 0.0) : rank.at(key).get<double>());
  return values;
}

// The file's bytes, "" when it does not exist.
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Trained {
  std::vector<double> losses;
  std::vector<double> model_states;  ///< measured, bytes per rank
  std::vector<double> comm_s;        ///< measured exposed communication, seconds per rank
  std::vector<double> peak_memory;   ///< measured peak bytes of live tensors per rank
  std::string tokens_per_expert;     ///< tokens_per_expert.csv ("" for a dense model)
  std::vector<double> all_to_all;    ///< measured all-to-all bytes per step per rank
  std::vector<double> cp_exchange;   ///< measured context-parallel ring bytes per step per rank
};

// Trains into train-<name>-<pid>: CTest runs each test case as its own process, several at once,
// and each computes the single-rank reference, so the folders must not be shared.
Trained train_run(const std::string& name, const std::string& args) {
  const std::string dir = "train-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const auto result = run_dtwin("train " + kQuickstart + kSmall + args + " -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  Trained trained{losses(dir),
                  per_rank(dir, "measured.summary.json", "model_state_bytes"),
                  per_rank(dir, "measured.summary.json", "comm_s"),
                  per_rank(dir, "measured.summary.json", "peak_memory_bytes"),
                  read_text(dir + "/tokens_per_expert.csv"),
                  per_rank(dir, "measured.summary.json", "all_to_all_bytes", true),
                  per_rank(dir, "measured.summary.json", "cp_exchange_bytes", true)};
  std::filesystem::remove_all(dir);  // kept only when the run failed, to look at
  return trained;
}

std::vector<double> train(const std::string& name, const std::string& args) {
  return train_run(name, args).losses;
}

// The simulator's `key` per rank (model_state_bytes by default) for the same scenario.
std::vector<double> predicted_per_rank(const std::string& name, const std::string& args,
                                       const std::string& key = "model_state_bytes") {
  const std::string dir = "simulate-" + name + "-" + std::to_string(getpid());
  const auto result = run_dtwin("simulate " + kQuickstart + kSmallModel + args + " -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::vector<double> bytes = per_rank(dir, "predicted.summary.json", key, true);
  std::filesystem::remove_all(dir);
  return bytes;
}

const std::vector<double>& single_rank_losses() {
  static const std::vector<double> reference = train("single", layout_args(1, 1, 4, "1f1b"));
  return reference;
}

// Losses equal to `reference`'s (by default the single-rank run's) within 1e-5 relative.
void check_equal(const std::vector<double>& losses,
                 const std::vector<double>& reference = single_rank_losses()) {
  REQUIRE(losses.size() == reference.size());
  for (size_t i = 0; i < losses.size(); ++i) {
    CAPTURE(i, losses[i], reference[i]);
    CHECK(std::abs(losses[i] - reference[i]) <= 1e-5 * std::abs(reference[i]));
  }
}

}  // namespace

TEST_CASE("pipeline schedules train the single-rank model: pp=3 GPipe, 1F1B, ZB-H1, ZB-1p, ZB-2p") {
  REQUIRE(single_rank_losses().size() == 3);
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1", "zb-1p", "zb-2p"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("pp3-") + schedule, layout_args(1, 3, 4, schedule)));
  }
}

TEST_CASE("a 1F1B rank frees what it sent once a receive proves it delivered") {
  // 1F1B holds pp - rank microbatches whatever m is. Were the sends kept to the step's end, the
  // middle rank would hold 2 more messages (an output and an input gradient, 16 KiB each here)
  // per extra microbatch: 256 KiB from m = 4 to m = 12.
  const double message = 64.0 * 64 * 4;
  const std::vector<double> four = train_run("sends-m4", layout_args(1, 3, 4, "1f1b")).peak_memory;
  const std::vector<double> twelve =
      train_run("sends-m12", layout_args(1, 3, 12, "1f1b")).peak_memory;
  REQUIRE(four.size() == 3);
  REQUIRE(twelve.size() == 3);
  CHECK(twelve[1] - four[1] < 2 * message);
}

TEST_CASE("interleaved 1F1B, pp=2 with v=3, trains the single-rank model") {
  check_equal(train("pp2-interleaved", layout_args(1, 2, 4, "interleaved-1f1b", 3)));
}

TEST_CASE(
    "V placement, pp=2 with 2 chunks per rank, trains the single-rank model: ZB-V, DualPipe-V") {
  // Rank 0 holds stages 0 and 3 (the loss), rank 1 stages 1 and 2 (the turn, no transfer).
  for (const char* schedule : {"zb-v", "dualpipe-v"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("pp2-") + schedule,
                      layout_args(1, 2, 4, schedule, 2) + " --set layout.stage_layers=[2,1,1,2]"));
  }
}

TEST_CASE("stages of 0 layers, the embedding or the head alone, train the single-rank model") {
  // pp=3 with the 6 layers on the middle rank, under 1F1B and ZB-2p; interleaved pp=2, v=2 with
  // the embedding alone on stage 0 (rank 0) and the head alone on stage 3 (rank 1).
  for (const char* schedule : {"1f1b", "zb-2p"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("pp3-0-layer-") + schedule,
                      layout_args(1, 3, 4, schedule) + " --set layout.stage_layers=[0,6,0]"));
  }
  check_equal(train("pp2-v2-0-layer", layout_args(1, 2, 4, "interleaved-1f1b", 2) +
                                          " --set layout.stage_layers=[0,3,3,0]"));
}

TEST_CASE("data parallelism trains the single-rank model: dp=2 allreduce and gather-scatter") {
  check_equal(train("dp2-allreduce", layout_args(2, 1, 2, "1f1b")));
  check_equal(train("dp2-gather-scatter", layout_args(2, 1, 2, "1f1b", 1, "gather-scatter")));
}

TEST_CASE(
    "gradient buckets all-reduced during the backward train the single-rank model: dp=2, "
    "and dp=2 x pp=2 with 1F1B and ZB-H1",
    "[threads]") {
  // 64 KiB buckets (16,384 fp32 gradients): several per layer, the embedding and head alone.
  const std::string buckets =
      " --set layout.overlap_grad_reduce=true --set layout.bucket_size=64KiB";
  check_equal(train("dp2-buckets", layout_args(2, 1, 2, "1f1b") + buckets));
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("dp2-pp2-buckets-") + schedule,
                      layout_args(2, 2, 2, schedule) + buckets));
  }
}

// dp=2 with ZeRO 1, 2 and 3; dp=2 x pp=2 ZB-H1 with ZeRO 3; dp=2 x tp=2 with sequence
// parallelism and ZeRO 2.
TEST_CASE("ZeRO's gradient buckets reduce-scattered in the backward train the single-rank model") {
  // 64 KiB buckets: several per layer, so they straddle the replicas' shard boundary.
  const std::string buckets =
      " --set layout.overlap_grad_reduce=true --set layout.bucket_size=64KiB --set layout.zero=";
  const std::string stage = " --set layout.zero3_gather=stage";  // the runtime's ZeRO-3
  for (const std::string zero : {"1", "2", "3"}) {
    CAPTURE(zero);
    check_equal(train("dp2-zero-buckets-" + zero,
                      layout_args(2, 1, 2, "1f1b") + buckets + zero + (zero == "3" ? stage : "")));
  }
  check_equal(
      train("dp2-pp2-zero3-buckets", layout_args(2, 2, 2, "zb-h1") + buckets + "3" + stage));
  check_equal(train("dp2-tp2-sp-zero2-buckets", layout_args(2, 1, 2, "1f1b", 1, "allreduce", 2) +
                                                    buckets + "2" +
                                                    " --set layout.sequence_parallel=true"));
}

TEST_CASE("hybrid dp=2 x pp=2 trains the single-rank model", "[threads]") {
  check_equal(train("dp2-pp2", layout_args(2, 2, 2, "1f1b")));
}

TEST_CASE("ZeRO 1, 2 and 3 over dp=2 train the single-rank model, ZeRO 3 with half the states") {
  const std::string dp2 = layout_args(2, 1, 2, "1f1b");
  const Trained unsharded = train_run("zero0", dp2);
  REQUIRE(unsharded.model_states.size() == 2);
  std::map<int, std::vector<double>> measured;
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    const std::string args = dp2 + " --set layout.zero=" + std::to_string(zero) +
                             (zero == 3 ? " --set layout.zero3_gather=stage" : "");
    const Trained sharded = train_run("zero" + std::to_string(zero), args);
    check_equal(sharded.losses);
    // Measured weights, gradients and AdamW state at the optimizer step are what the
    // simulator's memory model predicts for the same layout.
    const std::vector<double> predicted = predicted_per_rank("zero" + std::to_string(zero), args);
    REQUIRE(predicted.size() == sharded.model_states.size());
    for (size_t r = 0; r < predicted.size(); ++r)
      CHECK(sharded.model_states[r] == Approx(predicted[r]).epsilon(0.1));
    measured[zero] = sharded.model_states;
  }
  for (size_t r = 0; r < unsharded.model_states.size(); ++r) {
    CAPTURE(r);
    // fp32 AdamW: 16 bytes per parameter unsharded; 8 + 8/2 (ZeRO 1), 4 + 12/2 (ZeRO 2) and
    // 16/2 (ZeRO 3) over two replicas (Rajbhandari et al. 2020, §5).
    CHECK(measured[1][r] / unsharded.model_states[r] == Approx(12.0 / 16).epsilon(0.02));
    CHECK(measured[2][r] / unsharded.model_states[r] == Approx(10.0 / 16).epsilon(0.02));
    CHECK(measured[3][r] / unsharded.model_states[r] == Approx(0.5).epsilon(0.1));
  }
}

TEST_CASE("ZeRO 3 under pipelines: dp=2 x pp=2 with 1F1B and ZB-H1 train the single-rank model",
          "[threads]") {
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    CAPTURE(schedule);
    check_equal(train(
        std::string("dp2-pp2-zero3-") + schedule,
        layout_args(2, 2, 2, schedule) + " --set layout.zero=3 --set layout.zero3_gather=stage"));
  }
}

TEST_CASE(
    "tensor parallelism trains the single-rank model: tp=2 with and without sequence "
    "parallelism, each member holding the predicted model states") {
  const std::string tp2 = layout_args(1, 1, 4, "1f1b", 1, "allreduce", 2);
  for (const char* sequence_parallel : {"false", "true"}) {
    CAPTURE(sequence_parallel);
    const std::string args = tp2 + " --set layout.sequence_parallel=" + sequence_parallel;
    const Trained trained = train_run(std::string("tp2-sp-") + sequence_parallel, args);
    check_equal(trained.losses);
    // Half the weights, gradients and AdamW state of the single rank's (the norm weights,
    // 0.1% of them, are whole on both members), as the simulator predicts per GPU.
    const std::vector<double> predicted = predicted_per_rank("tp2", args);
    REQUIRE(predicted.size() == trained.model_states.size());
    for (size_t r = 0; r < predicted.size(); ++r) {
      CHECK(trained.model_states[r] == Approx(predicted[r]).epsilon(0.1));
      // With one stage and one replica the only communication is the passes' tensor-parallel
      // collectives, counted apart from their compute as the simulator counts them.
      CHECK(trained.comm_s[r] > 0);
    }
  }
}

TEST_CASE(
    "grouped-query attention trains the single-rank model under tp=2, each member holding one "
    "key/value head and the predicted model states") {
  const std::string gqa = " --set model.n_kv_heads=2";  // of 4 query heads
  const std::vector<double> reference = train("gqa-single", layout_args(1, 1, 4, "1f1b") + gqa);
  CHECK(reference != single_rank_losses());  // another model than multi-head attention's
  const std::string args = layout_args(1, 1, 4, "1f1b", 1, "allreduce", 2) + gqa;
  const Trained trained = train_run("gqa-tp2", args);
  check_equal(trained.losses, reference);
  const std::vector<double> predicted = predicted_per_rank("gqa-tp2", args);
  REQUIRE(predicted.size() == trained.model_states.size());
  for (size_t r = 0; r < predicted.size(); ++r)
    CHECK(trained.model_states[r] == Approx(predicted[r]).epsilon(0.1));
}

TEST_CASE(
    "a mixture of experts trains the single-rank model: pp=2 1F1B, dp=2 with ZeRO 1, full "
    "recomputation, and the sigmoid router whose bias steps with the replicas' summed load") {
  // 4 experts of width 64, top-2, a shared expert, the first layer dense.
  const std::string moe =
      " --set model.moe.num_experts=4 --set model.moe.top_k=2 --set model.moe.expert_ffn_hidden=64"
      " --set model.moe.shared_expert_ffn_hidden=32 --set model.moe.first_dense_layers=1";
  for (const char* router : {"softmax", "sigmoid"}) {
    CAPTURE(router);
    // A bias rate large enough to change routing within 3 steps.
    const std::string model =
        moe + " --set model.moe.router=" + router + " --set model.moe.bias_update_rate=0.05";
    const std::vector<double> reference =
        train(std::string("moe-single-") + router, layout_args(1, 1, 4, "1f1b") + model);
    CHECK(reference != single_rank_losses());
    if (std::string(router) == "sigmoid")  // the bias did change the routing
      CHECK(train("moe-single-unbiased", layout_args(1, 1, 4, "1f1b") + moe +
                                             " --set model.moe.router=sigmoid"
                                             " --set model.moe.bias_update_rate=0")
                .back() != reference.back());
    check_equal(train(std::string("moe-pp2-") + router, layout_args(1, 2, 4, "1f1b") + model),
                reference);
    check_equal(train(std::string("moe-dp2-zero1-") + router,
                      layout_args(2, 1, 2, "1f1b") + model + " --set layout.zero=1"),
                reference);
    check_equal(train(std::string("moe-recompute-") + router,
                      layout_args(1, 2, 4, "zb-h1") + model + " --set layout.recompute=full"),
                reference);
  }
}

TEST_CASE(
    "expert parallelism trains the single-rank model: ep=2 over dp=2, dp=4 x ep=2 (experts "
    "reduced over 2 replicas), pp=2 x dp=2 x ep=2 with ZB-H1, dropless, and the last with "
    "capacity",
    "[threads]") {
  const std::string moe =
      " --set model.moe.num_experts=4 --set model.moe.top_k=2 --set model.moe.expert_ffn_hidden=64"
      " --set model.moe.shared_expert_ffn_hidden=32 --set model.moe.first_dense_layers=1"
      " --set layout.ep=2";
  for (const std::string capacity : {"", "1.0"}) {  // dropless; GShard's capacity, copies dropped
    CAPTURE(capacity);
    const std::string model =
        moe + (capacity.empty() ? "" : " --set model.moe.capacity_factor=" + capacity);
    const std::string one = layout_args(1, 1, 8, "1f1b") + model + " --set layout.ep=1";
    const Trained reference = train_run("ep-single-" + capacity, one);
    REQUIRE(!reference.tokens_per_expert.empty());
    for (const auto& [name, layout] :
         {std::pair<std::string, std::string>{"ep2-dp2-", layout_args(2, 1, 4, "1f1b")},
          {"ep2-dp4-", layout_args(4, 1, 2, "1f1b")},
          {"ep2-dp2-pp2-", layout_args(2, 2, 4, "zb-h1")}}) {
      // The capacity's drops are the layer's (test_moe_layer.cpp): on the layout with every
      // exchange, pipeline and expert-parallel, only (2 trainings fewer under the sanitizers).
      if (!capacity.empty() && name != "ep2-dp2-pp2-") continue;
      CAPTURE(name);
      const Trained trained = train_run(name + capacity, layout + model);
      check_equal(trained.losses, reference.losses);
      // The same copies computed by every expert, each step and layer.
      CHECK(trained.tokens_per_expert == reference.tokens_per_expert);
    }
  }
}

TEST_CASE(
    "the runtime's all-to-all bytes equal the simulator's padded to capacity and come within "
    "10% of them dropless") {
  const std::string moe =
      " --set model.moe.num_experts=4 --set model.moe.top_k=2 --set model.moe.expert_ffn_hidden=64"
      " --set layout.ep=2" +
      layout_args(2, 2, 4, "1f1b");
  const std::string padded = moe +
                             " --set model.moe.capacity_factor=1.25"
                             " --set model.moe.pad_to_capacity=true";
  const std::vector<double> predicted =
      predicted_per_rank("a2a-padded", padded, "all_to_all_bytes");
  const Trained trained = train_run("a2a-padded", padded);
  REQUIRE(predicted.size() == 4);
  CHECK(predicted == trained.all_to_all);
  // 6 MoE layers over 2 stages, 4 microbatches, 4 all-to-alls each of 2 experts · capacity
  // ceil(1.25·64·2/4) = 40 rows of 64 floats for the other member.
  CHECK(predicted[0] == 3 * 4 * 4 * 2 * 40 * 64 * 4.0);
  const std::vector<double> balanced = predicted_per_rank("a2a-dropless", moe, "all_to_all_bytes");
  const Trained dropless = train_run("a2a-dropless", moe);
  for (size_t r = 0; r < balanced.size(); ++r) {
    CAPTURE(r, dropless.all_to_all[r], balanced[r]);
    CHECK(dropless.all_to_all[r] == Approx(balanced[r]).epsilon(0.10));
  }
  // The bytes the mean rank sends: an imbalance changes where copies go, not how many leave.
  CHECK(predicted_per_rank("a2a-imbalanced", moe + " --set model.moe.load_imbalance=1.5",
                           "all_to_all_bytes") == balanced);
}

TEST_CASE(
    "context parallelism trains the single-rank model: cp=2, cp=2 x dp=2, cp=2 with full "
    "recomputation, cp=2 x pp=2 with ZB-H1, cp=2 x tp=2 with sequence parallelism, its ring "
    "bytes equal to the simulator's",
    "[threads]") {
  // Ring attention runs on the fused kernel: the reference too.
  const std::string flash = " --set model.attention=flash";
  const std::vector<double> reference = train("cp-single", layout_args(1, 1, 4, "1f1b") + flash);
  const auto cp2 = [&](int processes) {
    return flash + " --set layout.cp=2 --set cluster.ranks_per_device=" + std::to_string(processes);
  };
  for (const auto& [name, layout] :
       {std::pair<std::string, std::string>{"cp2", layout_args(1, 1, 4, "1f1b") + cp2(2)},
        {"cp2-dp2", layout_args(2, 1, 2, "1f1b") + cp2(4)},
        {"cp2-recompute", layout_args(1, 1, 4, "1f1b") + cp2(2) + " --set layout.recompute=full"},
        {"cp2-pp2", layout_args(1, 2, 4, "zb-h1") + cp2(4)},
        {"cp2-tp2", layout_args(1, 1, 4, "1f1b", 1, "allreduce", 2) + cp2(4) +
                        " --set layout.sequence_parallel=true"}}) {
    CAPTURE(name);
    const Trained trained = train_run(name, layout);
    check_equal(trained.losses, reference);
    const std::vector<double> predicted = predicted_per_rank(name, layout, "cp_exchange_bytes");
    CHECK(trained.cp_exchange == predicted);
    // Per layer and microbatch 3 sends of one chunk pair of keys and values (forward 1, backward
    // 2; 4 when the recomputed forward sends again): [b = 1, 32 tokens, kv·hd = 64 / tp columns]
    // floats each for K and V.
    const double tp = name == "cp2-tp2" ? 2 : 1, sends = name == "cp2-recompute" ? 4 : 3;
    const double layers = name == "cp2-pp2" ? 3 : 6, microbatches = name == "cp2-dp2" ? 2 : 4;
    CHECK(predicted.at(0) == layers * microbatches * sends * 2 * 32 * (64 / tp) * 4);
  }
}

TEST_CASE("dp=2 x tp=2 x pp=2 (8 processes) trains the single-rank model with 1F1B and ZB-H1",
          "[threads]") {
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    CAPTURE(schedule);
    check_equal(train(std::string("dp2-tp2-pp2-") + schedule,
                      layout_args(2, 2, 2, schedule, 1, "allreduce", 2)));
  }
}

TEST_CASE("recomputation, selective and full, trains the single-rank model: pp=3 1F1B and ZB-H1") {
  for (const char* recompute : {"selective", "full"})
    for (const char* schedule : {"1f1b", "zb-h1"}) {
      CAPTURE(recompute, schedule);
      check_equal(train(std::string("recompute-") + recompute + "-" + schedule,
                        layout_args(1, 3, 4, schedule) + " --set layout.recompute=" + recompute));
    }
}

// Two layers (one per stage at pp=2) and four 64-token sequences per microbatch: a third of the
// layers and half the tokens of the earlier 6-layer, 128-token run, the sanitizer build's longest
// test (ASan, run alone: 96 s -> 29 s). The bound stays 1%. The largest drift over the 50 steps,
// measured at 13 seeds (training.seed=1-12 and the scenario's 1234): 0.09-0.60%, once 1.24% (seed
// 10), 0.18% at 1234; the earlier sizes: 0.25-0.98%, twice over 1% (1.48%, 2.74%), 0.57% at 1234.
// The curves agree within 0.07% up to step 25 at every seed, then drift apart to either side as
// the rounding seeds it (bf16 below fp32 at 41% of the 13 x 50 steps).
TEST_CASE("bf16 training tracks fp32 within 1% over 50 steps, single rank and pp=2 1F1B") {
  const std::string steps =
      " --set training.steps=50 --set layout.micro_batch_size=4 --set model.n_layers=2";
  const std::vector<double> fp32 = train("fp32-50", layout_args(1, 1, 4, "1f1b") + steps);
  for (const std::string& layout : {layout_args(1, 1, 4, "1f1b"), layout_args(1, 2, 4, "1f1b")}) {
    const std::vector<double> bf16 =
        train("bf16-50", layout + steps + " --set training.precision=bf16");
    CHECK(dtwin::test::check_tracks(bf16, fp32, 0.01) > 0);  // computed in bf16
    CHECK(bf16.back() < 0.9 * bf16.front());                 // and it learns
  }
}

// fp8 needs a device with fp8 tensor cores in the scenario (the H100's description); the ranks
// run on the CPU, where ATen emulates _scaled_mm. Under ZB-H1 the deferred W multiplies the
// dequantised inputs in bf16 (models/nn/fp8_linear.hpp). One layout: the ASan build takes 105 s
// a layout (test_fp8_linear.cpp trains a single-rank model in fp8).
TEST_CASE("fp8 training tracks bf16 within 1% over 50 steps, pp=2 ZB-H1") {
  const std::string setup =
      " --set training.steps=50 --set layout.micro_batch_size=4 --set model.n_layers=2"
      " --set cluster.device.model=h100-sxm --set cluster.device.kind=gpu";
  const std::string layout = layout_args(1, 2, 4, "zb-h1");
  const std::vector<double> bf16 =
      train("fp8-bf16-50", layout + setup + " --set training.precision=bf16");
  const std::vector<double> fp8 = train("fp8-50", layout + setup + " --set training.precision=fp8");
  const double largest = dtwin::test::check_tracks(fp8, bf16, 0.01);
  WARN("largest relative difference " << largest);
  CHECK(largest > 0);                     // computed in fp8
  CHECK(fp8.back() < 0.9 * fp8.front());  // and it learns
}

// The fused head computes its weight gradient in the forward, so under ZB-H1 W has one layer
// fewer to apply; dp=2 averages it like any other.
TEST_CASE("fused kernels train the single-rank model: pp=2 ZB-H1 and dp=2 1F1B") {
  for (const auto& [name, layout] : {std::pair{"fused-pp2-zb-h1", layout_args(1, 2, 4, "zb-h1")},
                                     std::pair{"fused-dp2-1f1b", layout_args(2, 1, 2, "1f1b")}}) {
    CAPTURE(name);
    check_equal(train(name, layout + " --set runtime.fused_kernels=true"));
  }
}

// On an H100/H200 (bench/gpu_acceptance.sh tests; hidden from CTest): from step 3 every
// microbatch replays the captured forward and backward, which compute what the eager passes do.
TEST_CASE("CUDA graphs replay one GPU rank's passes with the eager run's losses", "[.cuda]") {
  const std::string args =
      layout_args(1, 1, 4, "1f1b") + " --set training.steps=6 --set runtime.device=cuda";
  for (const char* fused : {"false", "true"}) {
    CAPTURE(fused);
    const std::string kernels = std::string(" --set runtime.fused_kernels=") + fused;
    const std::vector<double> eager = train(std::string("eager-") + fused, args + kernels);
    check_equal(
        train(std::string("graphs-") + fused, args + kernels + " --set runtime.cuda_graphs=true"),
        eager);
  }
}

TEST_CASE("resuming a ZeRO run is refused before any rank starts (exit 2)") {
  const auto result = run_dtwin("train " + kQuickstart + kSmall + layout_args(2, 1, 2, "1f1b") +
                                " --set layout.zero=2 --resume -o train-zero-resume");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Catch::Contains("layout.zero") && Catch::Contains("--resume"));
  CHECK_FALSE(std::filesystem::exists("train-zero-resume/loss.csv"));
}

TEST_CASE("weight-average keeps every replica's weights identical after each step") {
  const std::string dir = "train-dp2-weight-average";
  std::filesystem::remove_all(dir);
  const auto result =
      run_dtwin("train " + kQuickstart + kSmall +
                layout_args(2, 2, 2, "1f1b", 1, "weight-average") + " --digests -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // digests.csv rows: step,rank,stage,digest — replicas of a stage must agree at every step.
  std::ifstream in(dir + "/digests.csv");
  std::string line;
  std::map<std::pair<int, int>, std::set<std::string>> digests;  // (step, stage) -> digests
  int rows = 0;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string step, rank, stage, digest;
    std::getline(fields, step, ',');
    std::getline(fields, rank, ',');
    std::getline(fields, stage, ',');
    std::getline(fields, digest, ',');
    digests[{std::stoi(step), std::stoi(stage)}].insert(digest);
    ++rows;
  }
  CHECK(rows == 3 * 4);  // 3 steps x 4 ranks, one stage each
  for (const auto& [key, values] : digests) {
    CAPTURE(key.first, key.second);
    CHECK(values.size() == 1);
  }
}

TEST_CASE(
    "resume from a checkpoint reproduces the uninterrupted run exactly: pp=3, and tp=2 x "
    "pp=2 from its members' shards") {
  const std::vector<std::pair<std::string, std::string>> layouts{
      {"pp3", layout_args(1, 3, 4, "1f1b")},
      {"tp2-pp2", layout_args(1, 2, 4, "1f1b", 1, "allreduce", 2)}};
  for (const auto& [name, layout] : layouts) {
    CAPTURE(name);
    const std::string args = layout + " --set training.checkpoint_every=2";
    const std::vector<double> full = train("resume-full-" + name, args + " --set training.steps=4");
    const std::string dir = "train-resume-split-" + name;
    std::filesystem::remove_all(dir);
    auto first =
        run_dtwin("train " + kQuickstart + kSmall + args + " --set training.steps=2 -o " + dir);
    REQUIRE(first.exit_code == 0);
    auto second = run_dtwin("train " + kQuickstart + kSmall + args +
                            " --set training.steps=4 --resume -o " + dir);
    INFO(second.output);
    REQUIRE(second.exit_code == 0);
    CHECK_THAT(second.output, Catch::Contains("step 3/4"));
    CHECK_THAT(second.output, !Catch::Contains("step 1/4"));
    CHECK(losses(dir) == full);
  }
}

// 60 of the scenario's 150 steps (the sanitizer build's longest test, ASan: 216 s for 150): the
// mean loss of steps 51-60 is 5.68 nats at its seed, 0.64 under the bound; 5.12 at 150 steps.
TEST_CASE(
    "the quickstart scenario trains on the King James Bible: loss falls well below ln(vocab)") {
  const std::string dir = "train-quickstart";
  std::filesystem::remove_all(dir);
  const auto result = run_dtwin("train " + kQuickstart + " --set training.steps=60 --data-dir " +
                                kDataDir + " -o " + dir);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::vector<double> values = losses(dir);
  REQUIRE(values.size() == 60);
  CHECK(values.front() == Approx(std::log(4096.0)).epsilon(0.05));  // untrained: ln V
  // The mean of the last 10 steps, 2 nats below ln V = 8.32.
  double tail = 0;
  for (size_t i = values.size() - 10; i < values.size(); ++i) tail += values[i] / 10;
  CHECK(tail < std::log(4096.0) - 2);
  for (const char* file :
       {"/measured.trace.json", "/measured.summary.json", "/checkpoints/step-60/stage-2.pt"})
    CHECK(std::filesystem::exists(dir + file));
}
