// Tests of models/cost_model: parameter counts against published model sizes, per-stage FLOPs,
// activation and static memory, and communication sizes, each checked against arithmetic done
// by hand here (not by calling the model's own formulas).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/spec/scenario_loader.hpp"

using dtwin::CostModel;
using dtwin::load_scenario;
using dtwin::Scenario;
using dtwin::StageCost;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// The quickstart scenario with `overrides` on top (as --set would apply them).
Scenario quickstart(std::vector<std::string> overrides = {}) {
  return load_scenario(kQuickstart, overrides);
}

/// LLaMA-2 7B (Touvron et al. 2023): vocab 32000, d 4096, 32 layers, 32 heads, ffn 11008, seq 4096.
Scenario llama_7b(std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"model.vocab_size=32000",
                                "model.d_model=4096",
                                "model.n_layers=32",
                                "model.n_heads=32",
                                "model.ffn_hidden=11008",
                                "model.seq_len=4096",
                                "layout.pp=1",
                                "cluster.ranks_per_device=1"};
  o.insert(o.end(), extra.begin(), extra.end());
  return quickstart(o);
}

/// GPT-2 small (Radford et al. 2019): vocab 50257, d 768, 12 layers, 12 heads, ffn 3072, seq 1024.
Scenario gpt2_small(std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"model.family=gpt2",         "model.vocab_size=50257",
                                "model.d_model=768",         "model.n_layers=12",
                                "model.n_heads=12",          "model.ffn_hidden=3072",
                                "model.seq_len=1024",        "layout.pp=1",
                                "cluster.ranks_per_device=1"};
  o.insert(o.end(), extra.begin(), extra.end());
  return quickstart(o);
}

double sum_params(const CostModel& m) {
  double sum = 0;
  for (int s = 0; s < m.num_stages(); ++s) sum += m.stage(s).params;
  return sum;
}

}  // namespace

TEST_CASE("LLaMA-2 7B has 6.74B parameters", "[cost]") {
  const CostModel m(llama_7b());
  // per layer: q,k,v,o 4·4096² = 67,108,864; SwiGLU 3·4096·11008 = 135,266,304; 2 RMSNorms 8,192
  const double layer = 67108864.0 + 135266304.0 + 8192.0;
  // embedding 32000·4096 = 131,072,000; final norm 4,096; untied head 131,072,000
  const double total = 32 * layer + 131072000.0 + 4096.0 + 131072000.0;
  CHECK(total == 6738415616.0);
  CHECK(m.total_params() == total);
  CHECK(m.total_params() == Approx(6.738e9).epsilon(0.001));
  CHECK(m.num_stages() == 1);
  CHECK(m.stage(0).params == total);
  CHECK(m.non_embedding_params() == 6738415616.0 - 131072000.0);
}

TEST_CASE("LLaMA-2 7B model FLOPs per token follow PaLM's 6N + 12·L·d·s", "[cost]") {
  const CostModel m(llama_7b());
  // N = 6,607,343,616; 6N = 39,644,061,696; 12·32·4096·4096 = 6,442,450,944
  CHECK(m.model_flops_per_token() == 46086512640.0);
  CHECK(m.tokens_per_microbatch() == 4096);
  // bf16 does not change the FLOPs, only the bytes
  CHECK(CostModel(llama_7b({"training.precision=bf16"})).model_flops_per_token() == 46086512640.0);
}

TEST_CASE("GPT-2 small has 124M parameters with its tied embedding", "[cost]") {
  const CostModel m(gpt2_small());
  // per layer: attention 4·768² + 4·768 = 2,362,368; MLP 2·768·3072 + 3072 + 768 = 4,722,432;
  // two LayerNorms 4·768 = 3,072
  const double layer = 2362368.0 + 4722432.0 + 3072.0;
  // token 50257·768 = 38,597,376 and position 1024·768 = 786,432 embeddings; final LN 1,536
  const double total = 12 * layer + 38597376.0 + 786432.0 + 1536.0;
  CHECK(total == 124439808.0);
  CHECK(m.total_params() == total);
  CHECK(m.total_params() == Approx(124.4e6).epsilon(0.005));
  CHECK(m.stage(0).params == total);  // one stage: the tied matrix once
  // nanoGPT reports 123.65M "non-embedding" parameters for gpt2: all but the position table
  CHECK(m.non_embedding_params() == 123653376.0);
  CHECK(m.model_flops_per_token() == 6 * 123653376.0 + 12.0 * 12 * 768 * 1024);
}

TEST_CASE("per-stage parameters add up to the model's", "[cost]") {
  const std::vector<std::string> pp4 = {"model.n_layers=8", "layout.pp=4",
                                        "cluster.ranks_per_device=4"};
  SECTION("llama, even split") {
    const CostModel m(quickstart(pp4));
    REQUIRE(m.num_stages() == 4);
    CHECK(sum_params(m) == m.total_params());
    // 4096·288 embedding; 2 layers of 4·288² + 3·288·768 + 2·288; final norm 288 + head 4096·288
    const double layer = 4.0 * 288 * 288 + 3.0 * 288 * 768 + 2 * 288;
    CHECK(m.stage(0).params == 4096.0 * 288 + 2 * layer);
    CHECK(m.stage(1).params == 2 * layer);
    CHECK(m.stage(2).params == 2 * layer);
    CHECK(m.stage(3).params == 2 * layer + 288 + 4096.0 * 288);
  }
  SECTION("llama, stage_layers") {
    auto o = pp4;
    o.push_back("layout.stage_layers=[1, 3, 2, 2]");
    const CostModel m(quickstart(o));
    CHECK(sum_params(m) == m.total_params());
    CHECK(m.stage(1).params == 3 * (4.0 * 288 * 288 + 3.0 * 288 * 768 + 2 * 288));
  }
  SECTION("gpt2 with pp > 1: the last stage holds a copy of the tied head") {
    auto o = pp4;
    o.push_back("model.family=gpt2");
    const CostModel even(quickstart(o));
    CHECK(sum_params(even) == even.total_params() + 4096.0 * 288);
    o.push_back("layout.stage_layers=[3, 1, 1, 3]");
    const CostModel uneven(quickstart(o));
    CHECK(sum_params(uneven) == uneven.total_params() + 4096.0 * 288);
    CHECK(uneven.total_params() == even.total_params());
    // stage 3: 3 layers + final LayerNorm 2·288 + head copy 4096·288
    const double layer = 4.0 * 288 * 288 + 2.0 * 288 * 768 + 9 * 288 + 768;
    CHECK(uneven.stage(3).params == 3 * layer + 2 * 288 + 4096.0 * 288);
    CHECK(uneven.stage(0).params == 3 * layer + 4096.0 * 288 + 256.0 * 288);
  }
}

TEST_CASE("stages split the layers in order", "[cost]") {
  SECTION("stage_layers") {
    const CostModel m(quickstart({"model.n_layers=8", "layout.pp=4", "cluster.ranks_per_device=4",
                                  "layout.stage_layers=[1, 3, 2, 2]"}));
    const int first[] = {0, 1, 4, 6}, count[] = {1, 3, 2, 2};
    for (int s = 0; s < 4; ++s) {
      INFO("stage " << s);
      CHECK(m.stage(s).first_layer == first[s]);
      CHECK(m.stage(s).num_layers == count[s]);
      CHECK(m.stage(s).has_embedding == (s == 0));
      CHECK(m.stage(s).has_head == (s == 3));
    }
  }
  SECTION("interleaved: pp * virtual_stages stages") {
    const CostModel m(quickstart({"model.n_layers=8", "layout.pp=2", "cluster.ranks_per_device=2",
                                  "layout.schedule=interleaved-1f1b", "layout.virtual_stages=2"}));
    REQUIRE(m.num_stages() == 4);
    for (int s = 0; s < 4; ++s) CHECK(m.stage(s).first_layer == 2 * s);
    CHECK(m.stage(3).has_head);
    CHECK_FALSE(m.stage(1).has_head);
  }
  SECTION("out of range") {
    const CostModel m(quickstart());
    CHECK_THROWS_AS(m.stage(3), std::out_of_range);
    CHECK_THROWS_AS(m.stage(-1), std::out_of_range);
  }
}

TEST_CASE("forward and backward FLOPs of the quickstart stages", "[cost]") {
  // quickstart: llama, d 288, f 768, s 256, V 4096, 6 layers over 3 stages, b 1 -> T = 256
  const CostModel m(quickstart());
  const double T = 256, s = 256, d = 288, V = 4096;
  const double weights = 4 * 288.0 * 288 + 3 * 288.0 * 768;  // 995,328 matmul weights per layer
  const double layer_f = 2 * T * weights + 4 * T * s * d;    // 509,607,936 + 75,497,472
  CHECK(layer_f == 585105408.0);

  const auto& middle = m.stage(1);
  CHECK(middle.forward_flops == 2 * layer_f);
  CHECK(middle.weight_backward_flops == 2 * (2 * T * weights));
  CHECK(middle.input_backward_flops == 2 * (2 * T * weights + 8 * T * s * d));
  // B = I + W = 2F; I carries the attention backward: I = F + 4·T·s·d per layer
  CHECK(middle.input_backward_flops + middle.weight_backward_flops == 2 * middle.forward_flops);
  CHECK(middle.input_backward_flops == middle.forward_flops + 2 * (4 * T * s * d));

  CHECK(m.stage(0).forward_flops == 2 * layer_f);  // the embedding lookup is free
  const auto& last = m.stage(2);
  CHECK(last.forward_flops == 2 * layer_f + 2 * T * d * V);
  CHECK(last.weight_backward_flops == 2 * (2 * T * weights) + 2 * T * d * V);
  CHECK(last.input_backward_flops + last.weight_backward_flops == 2 * last.forward_flops);

  SECTION("FLOPs scale with the microbatch's tokens") {
    const CostModel m2(quickstart({"layout.micro_batch_size=2"}));
    CHECK(m2.tokens_per_microbatch() == 512);
    CHECK(m2.stage(1).forward_flops == 2 * m.stage(1).forward_flops);
  }
  SECTION("gpt2 layer: 4d² + 2df matmul weights") {
    const CostModel g(quickstart({"model.family=gpt2"}));
    const double gw = 4 * 288.0 * 288 + 2 * 288.0 * 768;
    CHECK(g.stage(1).forward_flops == 2 * (2 * T * gw + 4 * T * s * d));
  }
}

TEST_CASE("a stage of 0 layers costs its embedding or its head alone", "[cost]") {
  // quickstart with stage_layers [0, 6, 0]: T = 256 tokens, d 288, V 4096, fp32
  const CostModel m(quickstart({"layout.stage_layers=[0, 6, 0]"}));
  const CostModel even(quickstart());
  const double T = 256, d = 288, V = 4096;
  const StageCost& embedding = m.stage(0);
  CHECK(embedding.params == V * d);
  CHECK(embedding.forward_flops == 0);  // the lookup is free
  CHECK(embedding.input_backward_flops == 0);
  CHECK(embedding.activation_bytes == T * d * 4);  // its output, kept for the embedding's backward
  const StageCost& head = m.stage(2);
  CHECK(head.params == d + V * d);  // final norm and head
  CHECK(head.forward_flops == 2 * T * d * V);
  CHECK(head.weight_backward_flops == 2 * T * d * V);
  CHECK(head.tp_forward_collectives == 0);
  CHECK(m.stage(1).forward_flops == 3 * even.stage(1).forward_flops);
  CHECK(sum_params(m) == m.total_params());
}

TEST_CASE("summed stage FLOPs match the model FLOPs up to the norm parameters", "[cost]") {
  const CostModel m(quickstart());
  double flops = 0;
  for (const auto& st : m.stages()) {
    flops += st.forward_flops + st.input_backward_flops + st.weight_backward_flops;
  }
  // 6N counts the RMSNorm weights (2 per layer + the final one), which do no matrix product
  const double norms = 6 * 2 * 288.0 + 288;
  CHECK(flops / m.tokens_per_microbatch() + 6 * norms == Approx(m.model_flops_per_token()));
}

TEST_CASE("optimizer FLOPs are 12 per parameter", "[cost]") {
  const CostModel m(quickstart());
  for (const auto& st : m.stages()) CHECK(st.optimizer_flops == 12 * st.params);
}

TEST_CASE("activation memory per microbatch: LLaMA's saved tensors, GPT's Korthikanti eq. 1",
          "[cost]") {
  // The quickstart: s 256, b 1, d 288, a 6, f 768, eager attention; 2 layers per stage.
  const double sbh = 256.0 * 288, sbf = 256.0 * 768, softmax = 6 * 256.0 * 256;
  SECTION("llama, fp32: 10 sbh + 4 sbf + the softmax per layer, 4 bytes each") {
    const CostModel m(quickstart());
    const double layer = 4 * (10 * sbh + 4 * sbf + softmax);
    CHECK(m.stage(1).activation_bytes == Approx(2 * layer));
    CHECK(m.stage(0).activation_bytes == Approx(2 * layer + 256.0 * 288 * 4));  // + embedding
    // + the loss's log-softmax; its backward holds the two logit-sized gradients more
    CHECK(m.stage(2).activation_bytes == Approx(2 * layer + 256.0 * 4096 * 4));
    CHECK(m.stage(2).backward_workspace_bytes == Approx(2 * 256.0 * 4096 * 4));
    CHECK(m.stage(1).backward_workspace_bytes == 0);
  }
  SECTION("llama, bf16: each RMSNorm also keeps an fp32 copy of its input; the loss is fp32") {
    const CostModel m(quickstart({"training.precision=bf16"}));
    const double layer = 2 * (4 + 2 * 2) * sbh + 2 * (4 * sbh + 4 * sbf + softmax);
    CHECK(m.stage(1).activation_bytes == Approx(2 * layer));
    CHECK(m.stage(2).activation_bytes == Approx(2 * layer + 256.0 * 4096 * 4));
    CHECK(m.stage(2).backward_workspace_bytes == Approx(2 * 256.0 * 4096 * 4));
  }
  SECTION("gpt2: s·b·d·(34 + 5·a·s/d) at 16 bits, doubled in fp32") {
    const CostModel m(quickstart({"model.family=gpt2"}));
    const double layer16 = sbh * 34 + 5 * softmax;  // 4,472,832 bytes
    CHECK(m.stage(1).activation_bytes == Approx(2 * 2 * layer16));
  }
}

TEST_CASE("static memory and reduced bytes follow the weight and gradient precisions", "[cost]") {
  struct Case {
    std::vector<std::string> sets;
    double weight, grad, state;  // bytes per parameter
  };
  // fp32: 4 + 4 + 8; bf16 with fp32 gradients (the default): 2 + 4 + 12 = 18 (Megatron-LM);
  // bf16 with bf16 gradients: 2 + 2 + 12 = 16 (ZeRO).
  for (const Case& c :
       {Case{{"training.precision=fp32"}, 4, 4, 16}, Case{{"training.precision=bf16"}, 2, 4, 18},
        Case{{"training.precision=bf16", "training.grad_precision=bf16"}, 2, 2, 16}}) {
    INFO(c.sets.back());
    const CostModel m(quickstart(c.sets));
    CHECK(m.bytes_per_element() == c.weight);
    CHECK(m.grad_bytes_per_element() == c.grad);
    for (int s = 0; s < m.num_stages(); ++s) {
      CHECK(m.static_memory_bytes(s) == Approx(c.state * m.stage(s).params));
      CHECK(m.gradient_bytes(s) == c.grad * m.stage(s).params);
      CHECK(m.weight_bytes(s) == c.weight * m.stage(s).params);
      CHECK(m.parameter_bytes(s) == 4 * m.stage(s).params);  // fp32 master weights
    }
  }
}

TEST_CASE("boundary bytes are one microbatch's hidden states", "[cost]") {
  CHECK(CostModel(quickstart()).boundary_bytes() == 294912);  // 1·256·288·4
  CHECK(CostModel(quickstart({"training.precision=bf16"})).boundary_bytes() == 147456);
  CHECK(CostModel(quickstart({"layout.micro_batch_size=3"})).boundary_bytes() == 3 * 294912);
}

TEST_CASE("a scenario the loader would reject is refused", "[cost]") {
  Scenario s = quickstart();
  s.model.family = static_cast<dtwin::ModelFamily>(7);  // no such family
  CHECK_THROWS_AS(CostModel(s), std::logic_error);
  s = quickstart();
  s.training.precision = static_cast<dtwin::Precision>(7);  // no such precision
  CHECK_THROWS_AS(CostModel(s), std::logic_error);
  s = quickstart();
  s.layout.stage_layers = {1, 2};
  CHECK_THROWS_AS(CostModel(s), std::invalid_argument);
}

TEST_CASE("recomputation adds the forward it repeats to I, and tp divides the per-GPU work",
          "[cost]") {
  // LLaMA-2 7B, pp 4: stage 1 has 8 layers and neither embedding nor head.
  const auto stage = [](std::vector<std::string> sets) {
    sets.push_back("layout.pp=4");
    sets.push_back("layout.tp=2");
    sets.push_back("cluster.devices_per_node=8");
    return CostModel(llama_7b(sets)).stage(1);
  };
  const StageCost none = stage({}), full = stage({"layout.recompute=full"}),
                  selective = stage({"layout.recompute=selective"});
  const double T = 4096, s = 4096, d = 4096, t = 2, L = 8;
  CHECK(full.input_backward_flops - none.input_backward_flops ==
        Approx(none.forward_flops).epsilon(0.005));
  CHECK(selective.input_backward_flops - none.input_backward_flops ==
        Approx(L * 4 * T * s * d / t).epsilon(0.005));
  // Full recomputation repeats the forward's 2 tensor-parallel all-reduces per layer.
  CHECK(full.tp_input_backward_s == Approx(2 * none.tp_input_backward_s).epsilon(0.005));
  CHECK(none.tp_forward_s == Approx(none.tp_input_backward_s).epsilon(0.005));
  CHECK(none.tp_forward_collectives == 2 * L);
  CHECK(none.tp_input_backward_collectives == 2 * L);
  CHECK(full.tp_input_backward_collectives == 4 * L);
  // The first stage sums the vocabulary-parallel lookup in F, the last the head input's
  // gradient in I; without tp there are none.
  const CostModel pipeline(llama_7b({"layout.pp=4", "layout.tp=2", "cluster.devices_per_node=8"}));
  CHECK(pipeline.stage(0).tp_forward_collectives == 2 * 8 + 1);
  CHECK(pipeline.stage(0).tp_input_backward_collectives == 2 * 8);
  CHECK(pipeline.stage(3).tp_input_backward_collectives == 2 * 8 + 1);
  CHECK(CostModel(llama_7b({"layout.pp=4", "cluster.devices_per_node=4"}))
            .stage(0)
            .tp_forward_collectives == 0);
  // Per GPU: half of the tp = 1 matrix products.
  const StageCost single =
      CostModel(llama_7b({"layout.pp=4", "cluster.devices_per_node=4"})).stage(1);
  CHECK(none.forward_flops == Approx(single.forward_flops / 2).epsilon(0.005));
}

TEST_CASE("overlapped tensor-parallel collectives add what the GEMMs do not hide", "[cost]") {
  // LLaMA-2 7B, pp 4, tp 2 with sequence parallelism: stage 1 has 8 layers.
  const auto stage = [](std::vector<std::string> sets) {
    for (const char* s : {"layout.pp=4", "layout.tp=2", "layout.sequence_parallel=true",
                          "cluster.devices_per_node=8"})
      sets.push_back(s);
    return CostModel(llama_7b(sets)).stage(1);
  };
  const double T = 4096, s = 4096, d = 4096, t = 2, L = 8;
  {
    // FLOPs path, a fast device on a slow link: the collectives outlast the GEMMs.
    const std::string fast = "cluster.device.peak_flops=1000TFLOP/s";
    const StageCost plain = stage({fast}), over = stage({fast, "layout.tp_comm_overlap=true"});
    const double gemm = (plain.forward_flops / L - 4 * T * s * d / t) / (1000e12 * 0.5);
    const double comm_f = plain.tp_forward_s / L, comm_i = plain.tp_input_backward_s / L;
    REQUIRE(comm_f > gemm);
    CHECK(over.tp_forward_s == Approx(L * (comm_f - gemm)).epsilon(0.005));
    // The backward's collectives run beside I's and W's GEMMs.
    CHECK(over.tp_input_backward_s == Approx(L * (comm_i - 2 * gemm)).epsilon(0.005));
    CHECK(over.forward_flops == plain.forward_flops);
  }
  {
    // Device description (H100, overlap_slowdown 1.05) on NVLink: the GEMMs hide the
    // collectives and are stretched by 5% of the collectives' time.
    const auto h100 = [&](std::vector<std::string> sets) {
      for (const char* s : {"training.precision=bf16", "cluster.intra_node.bandwidth=450GB/s"})
        sets.push_back(s);
      for (const char* s : {"layout.pp=4", "layout.tp=2", "layout.sequence_parallel=true",
                            "cluster.devices_per_node=8"})
        sets.push_back(s);
      Scenario sc = llama_7b(sets);
      sc.cluster.device.description = dtwin::load_device_description("h100-sxm", "");
      return CostModel(sc).stage(1);
    };
    const StageCost plain = h100({}), over = h100({"layout.tp_comm_overlap=true"});
    REQUIRE(plain.tp_forward_s > 0);
    CHECK(over.tp_forward_s == Approx(0.05 * plain.tp_forward_s).epsilon(0.005));
    CHECK(over.tp_input_backward_s == Approx(0.05 * plain.tp_input_backward_s).epsilon(0.005));
  }
}
