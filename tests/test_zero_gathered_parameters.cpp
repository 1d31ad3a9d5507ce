// ZeRO 3 shards the weights over the data-parallel group: after training, the parameters it
// gathers into the checkpoint equal the single-rank run's (real processes through `dtwin train`,
// the checkpoints loaded back into LibTorch modules).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "models/scenario_loader.hpp"
#include "models/stage_module.hpp"
#include "tests/run_process.hpp"

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";
const std::vector<std::string> kSmall{"model.d_model=64",     "model.n_heads=4",
                                      "model.ffn_hidden=128", "model.seq_len=64",
                                      "training.steps=3",     "training.precision=fp32"};

// Trains the small model with `layout` overrides into a fresh folder; returns the folder.
std::string train(const std::string& name, const std::vector<std::string>& layout) {
  const std::string dir = "zero-params-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::string args = "train " + kQuickstart + " --data-dir " + DTWIN_DATA_DIR + " -o " + dir;
  for (const std::string& set : kSmall) args += " --set " + set;
  for (const std::string& set : layout) args += " --set " + set;
  const auto result = dtwin::test::run_dtwin(args);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return dir;
}

// The whole model (one stage) of the small scenario, loaded from DIR's step-3 checkpoint.
std::shared_ptr<dtwin::nn::StageModule> checkpointed(const std::string& dir) {
  const dtwin::Scenario scenario = dtwin::load_scenario(kQuickstart, kSmall);
  const dtwin::ModelSpec& m = scenario.model;
  auto module = std::make_shared<dtwin::nn::StageModule>(m, 0, m.n_layers, true, true,
                                                         scenario.training.seed + 1);
  torch::load(module, dir + "/checkpoints/step-3/stage-0.pt");
  return module;
}

}  // namespace

TEST_CASE("ZeRO 3 over dp=2 gathers the single-rank run's parameters into its checkpoint") {
  const std::string single = train("single", {"layout.dp=1", "layout.pp=1", "layout.microbatches=4",
                                              "cluster.ranks_per_device=1"});
  const std::string sharded = train("zero3", {"layout.dp=2", "layout.pp=1", "layout.microbatches=2",
                                              "cluster.ranks_per_device=2", "layout.zero=3"});
  const auto reference = checkpointed(single);
  const auto gathered = checkpointed(sharded);
  const auto initial = std::make_shared<dtwin::nn::StageModule>(
      reference->spec(), 0, reference->spec().n_layers, true, true,
      dtwin::load_scenario(kQuickstart, kSmall).training.seed);
  const auto expected = reference->named_parameters();
  const auto start = initial->named_parameters();
  REQUIRE(gathered->named_parameters().size() == expected.size());
  for (const auto& p : gathered->named_parameters()) {
    CAPTURE(p.key());
    const torch::Tensor& want = expected[p.key()];
    // Training moved the weights, and both runs moved them alike.
    CHECK((want - start[p.key()]).abs().max().item<double>() > 1e-4);
    CHECK((p.value() - want).abs().max().item<double>() <= 1e-6);
  }
  std::filesystem::remove_all(single);
  std::filesystem::remove_all(sharded);
}
