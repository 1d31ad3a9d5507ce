// Tests of StagePartition (models/spec/stage_partition.hpp): the layer split and the bucket size
// the runtime builds its stages from, and that the cost model prices the same split.
#include <catch2/catch.hpp>

#include "models/cost/cost_model.hpp"
#include "models/spec/scenario_loader.hpp"
#include "models/spec/stage_partition.hpp"

using namespace dtwin;

namespace {
const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";
}  // namespace

TEST_CASE("the partition splits the layers evenly or as stage_layers says",
          "[scenario][partition]") {
  const StagePartition even(load_scenario(kQuickstart));  // 6 layers, pp 3
  REQUIRE(even.stages.size() == 3);
  for (int s = 0; s < 3; ++s) {
    CHECK(even.stage(s).first_layer == 2 * s);
    CHECK(even.stage(s).num_layers == 2);
    CHECK(even.stage(s).has_embedding == (s == 0));
    CHECK(even.stage(s).has_head == (s == 2));
  }
  CHECK_THROWS_AS(even.stage(3), std::out_of_range);

  const StagePartition listed(load_scenario(kQuickstart, {"layout.stage_layers=[1, 3, 2]"}));
  CHECK(listed.stage(1).first_layer == 1);
  CHECK(listed.stage(1).num_layers == 3);
  CHECK(listed.stage(2).first_layer == 4);

  Scenario broken = load_scenario(kQuickstart);
  broken.layout.pp = 4;  // does not divide 6 layers: a scenario validate() refuses
  CHECK_THROWS_AS(StagePartition(broken), std::invalid_argument);
}

TEST_CASE("a first or last stage may hold the embedding or the head alone, no inner stage",
          "[scenario][partition]") {
  const StagePartition alone(load_scenario(kQuickstart, {"layout.stage_layers=[0, 6, 0]"}));
  CHECK(alone.stage(0).num_layers == 0);
  CHECK(alone.stage(0).has_embedding);
  CHECK(alone.stage(1).first_layer == 0);
  CHECK(alone.stage(1).num_layers == 6);
  CHECK(alone.stage(2).first_layer == 6);
  CHECK(alone.stage(2).num_layers == 0);
  CHECK(alone.stage(2).has_head);

  CHECK(layerless_inner_stage({0, 6, 0}) == -1);
  CHECK(layerless_inner_stage({0, 0}) == -1);
  CHECK(layerless_inner_stage({2, 0, 0, 4}) == 1);
  CHECK(layerless_inner_stage({6}) == -1);
  CHECK(layerless_inner_stage({}) == -1);
  Scenario broken = load_scenario(kQuickstart);
  broken.layout.stage_layers = {3, 0, 3};  // a stage of nothing: validate() refuses it
  CHECK_THROWS_AS(StagePartition(broken), std::invalid_argument);
}

TEST_CASE("the bucket size is layout.bucket_size in gradients, else Megatron-LM's rule",
          "[scenario][partition]") {
  Scenario s = load_scenario(kQuickstart);
  CHECK(StagePartition(s).bucket_params == 4e7);  // max(4e7, 1e6 dp), dp 1
  s.layout.dp = 128;
  CHECK(StagePartition(s).bucket_params == 1.28e8);
  s.layout.bucket_size = 100e6;  // bytes of fp32 gradients
  CHECK(StagePartition(s).bucket_params == 25e6);
  s.training.precision = Precision::Bf16;
  s.training.grad_precision = Precision::Bf16;
  CHECK(StagePartition(s).bucket_params == 50e6);
}

TEST_CASE("the cost model prices the partition's stages", "[scenario][partition]") {
  const Scenario s = load_scenario(kQuickstart, {"layout.stage_layers=[1, 3, 2]"});
  const StagePartition partition(s);
  const CostModel cost(s);
  REQUIRE(cost.num_stages() == static_cast<int>(partition.stages.size()));
  for (int i = 0; i < cost.num_stages(); ++i) {
    CHECK(cost.stage(i).first_layer == partition.stage(i).first_layer);
    CHECK(cost.stage(i).num_layers == partition.stage(i).num_layers);
    CHECK(cost.stage(i).has_embedding == partition.stage(i).has_embedding);
    CHECK(cost.stage(i).has_head == partition.stage(i).has_head);
  }
  CHECK(cost.bucket_params() == partition.bucket_params);
}
