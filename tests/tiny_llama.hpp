// Shared fixtures of the LibTorch model tests: a tiny LLaMA and a fixed batch.
#pragma once

#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "models/nn/stage_module.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::test {

/// vocab 64, d 32, 4 layers, 4 heads, ffn 64, seq 16.
inline ModelSpec tiny_llama() {
  ModelSpec spec;
  spec.family = dtwin::ModelFamily::Llama;
  spec.vocab_size = 64;
  spec.d_model = 32;
  spec.n_layers = 4;
  spec.n_heads = 4;
  spec.ffn_hidden = 64;
  spec.seq_len = 16;
  return spec;
}

/// Uniform random token ids int64 [batch, seq] in [0, vocab), from its own generator.
inline torch::Tensor random_tokens(int64_t batch, int64_t seq, int64_t vocab, uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return torch::randint(vocab, {batch, seq}, generator, torch::kLong);
}

/// name -> tensor (parameter values, or their gradients when `grads`), cloned.
inline std::map<std::string, torch::Tensor> snapshot(const torch::nn::Module& module,
                                                     bool grads = false) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : module.named_parameters()) {
    const torch::Tensor& t = grads ? item.value().grad() : item.value();
    out[item.key()] = t.defined() ? t.detach().clone() : torch::Tensor();
  }
  return out;
}

/// max |a - b| relative to max |b| (0 when both are zero).
inline double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a - b).abs().max().item<double>();
  return scale == 0 ? diff : diff / scale;
}

/// The whole model of `spec` (seed 5) on a fixed batch of 2 sequences (token seeds 3 and 4):
/// the reference that split models are checked against.
struct WholeModel {
  torch::Tensor ids, targets;                  ///< int64 [2, seq_len]
  double loss = 0;                             ///< its mean cross-entropy
  std::map<std::string, torch::Tensor> grads;  ///< every parameter's gradient
  double largest = 0;                          ///< the largest gradient element's magnitude
};

inline WholeModel whole_model(const ModelSpec& spec) {
  WholeModel w;
  w.ids = random_tokens(2, spec.seq_len, spec.vocab_size, 3);
  w.targets = random_tokens(2, spec.seq_len, spec.vocab_size, 4);
  nn::StageModule whole(spec, 0, spec.n_layers, true, true, 5);
  const torch::Tensor loss = whole.forward(w.ids, w.targets);
  loss.backward();
  w.loss = loss.item<double>();
  w.grads = snapshot(whole, true);
  for (const auto& [name, g] : w.grads)
    w.largest = std::max(w.largest, g.abs().max().item<double>());
  return w;
}

/// True when `name` is the weight of a SplitLinear layer (its gradient is deferred under a stash).
inline bool is_split_linear(const std::string& name) {
  return name != "embed.weight" && name.find("norm.weight") == std::string::npos;
}

}  // namespace dtwin::test
