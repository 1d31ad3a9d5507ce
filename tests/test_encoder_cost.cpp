// Tests of the encoder families (model.family bert and distilbert) in the cost model: parameter
// counts against the published ones (transformers' BertForSequenceClassification of
// bert-base-uncased: 109,483,778 with 2 labels; DistilBertForSequenceClassification of
// distilbert-base-uncased: 66,955,010), the head's operators and FLOPs, bidirectional attention,
// each by hand here, not by a call to the model's own formulas.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/layer_ops.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::CostModel;
using dtwin::Op;
using dtwin::Scenario;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// BERT-base's shape (vocab 30522, d 768, 12 heads, ffn 3072, seq 128; 512 positions for an
/// encoder) as `family` with `layers` layers, 16 sequences per microbatch, with `extra` on top.
Scenario base(const std::string& family, int layers, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {
      "model.family=" + family,     "model.vocab_size=30522",
      "model.d_model=768",          "model.n_layers=" + std::to_string(layers),
      "model.n_heads=12",           "model.ffn_hidden=3072",
      "model.seq_len=128",          "layout.pp=1",
      "layout.micro_batch_size=16", "cluster.ranks_per_device=1"};
  if (family != "llama") o.push_back("model.max_position_embeddings=512");
  o.insert(o.end(), extra.begin(), extra.end());
  return dtwin::load_scenario(kQuickstart, o);
}

const Op& find(const std::vector<Op>& ops, const std::string& name) {
  const auto it =
      std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  REQUIRE(it != ops.end());
  return *it;
}

}  // namespace

TEST_CASE("BERT-base and DistilBERT-base classifiers have their published parameter counts",
          "[cost][encoder]") {
  // per layer: q, k, v, o 4·768² + 4·768 biases; ffn 2·768·3072 + 3072 + 768; 2 LayerNorms 4·768
  const double layer = 4 * 768.0 * 768 + 4 * 768 + 2 * 768.0 * 3072 + 3072 + 768 + 4 * 768;
  CHECK(layer == 7087872.0);
  // embeddings: (30522 + 512 + 2)·768 and their LayerNorm 2·768; pooler 768² + 768; classifier
  // 2·768 + 2
  const double bert =
      12 * layer + (30522 + 512 + 2) * 768.0 + 2 * 768 + 768.0 * 768 + 768 + 2 * 768 + 2;
  CHECK(bert == 109483778.0);
  CHECK(CostModel(base("bert", 12)).total_params() == bert);
  // DistilBERT: 6 layers, no token types, the pre-classifier in the pooler's place
  const double distil =
      6 * layer + (30522 + 512) * 768.0 + 2 * 768 + 768.0 * 768 + 768 + 2 * 768 + 2;
  CHECK(distil == 66955010.0);
  CHECK(CostModel(base("distilbert", 6)).total_params() == distil);
  // 3 labels: one more classifier row and bias
  CHECK(CostModel(base("bert", 12, {"model.num_labels=3"})).total_params() == bert + 769);
}

TEST_CASE("An encoder's model FLOPs count its head once per sequence", "[cost][encoder]") {
  const CostModel m(base("bert", 12));
  const double lookups = (30522 + 512 + 2) * 768.0;
  CHECK(m.non_embedding_params() == Approx(109483778.0 - lookups));
  const double head = 768.0 * 768 + 768 + 2 * 768 + 2;
  // 6 per weight per token, the head's on 1 token of 128, and 12·L·d·s of attention
  const double expected =
      6 * (109483778.0 - lookups - head) + 6 * head / 128 + 12 * 12 * 768.0 * 128;
  CHECK(m.model_flops_per_token() == Approx(expected).epsilon(1e-12));
  // the head's forward FLOPs on the stage: pooler 2·16·768·768, classifier 2·16·768·2
  const CostModel one(base("bert", 1));
  const double layer_forward =
      2 * 16 * 128.0 * (4 * 768.0 * 768 + 2 * 768.0 * 3072) + 4 * 16 * 128.0 * 128 * 768;
  CHECK(one.stage(0).forward_flops ==
        Approx(layer_forward + 2 * 16 * 768.0 * 768 + 2 * 16 * 768.0 * 2));
}

TEST_CASE("An encoder's operators: bidirectional attention, embeddings, pooler and classifier",
          "[cost][encoder]") {
  const Scenario sc = base("bert", 12, {"model.attention=flash"});
  const auto precision = sc.training.precision;
  const auto layer = dtwin::layer_ops(sc.model, sc.layout, precision, dtwin::Pass::Forward);
  CHECK_FALSE(find(layer, "attention").attention.causal);
  const Scenario llama = base("llama", 12, {"model.attention=flash"});
  CHECK(find(dtwin::layer_ops(llama.model, llama.layout, precision, dtwin::Pass::Forward),
             "attention")
            .attention.causal);
  const auto head = dtwin::head_ops(sc.model, sc.layout, precision, dtwin::Pass::Forward);
  const Op& pooler = find(head, "pooler");
  CHECK((pooler.m == 16.0 && pooler.n == 768.0 && pooler.k == 768.0));
  const Op& classifier = find(head, "classifier");
  CHECK((classifier.m == 16.0 && classifier.n == 2.0 && classifier.k == 768.0));
  CHECK(std::none_of(head.begin(), head.end(), [](const Op& op) { return op.name == "lm_head"; }));
  // three lookup tables summed (read 3 rows, write 1) and their LayerNorm, per token
  const auto embedding = dtwin::embedding_ops(sc.model, sc.layout, precision, dtwin::Pass::Forward);
  const double rows = 16 * 128.0 * 768 * 4;
  CHECK(find(embedding, "embedding").bytes == 4 * rows);
  CHECK(find(embedding, "embedding_norm").bytes == 2 * rows);
  const Scenario distil = base("distilbert", 6);
  CHECK(find(dtwin::embedding_ops(distil.model, distil.layout, precision, dtwin::Pass::Forward),
             "embedding")
            .bytes == 3 * rows);
}
