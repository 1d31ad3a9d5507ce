// How a stage's parameters fall into gradient buckets (PyTorch DDP's rule, Li et al. 2020,
// "PyTorch Distributed", §3.2.3): the one partition that the runtime's buckets
// (runtime/gradient_buckets.hpp) and the simulator's byte count both use.
#pragma once

#include <cstdint>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// The parameters of each bucket, given every parameter's element count in registration order:
/// parameters are taken last first (the order the backward produces their gradients), and a new
/// bucket starts when the next parameter would take a non-empty bucket past `bucket_elements`.
/// Returns the number of parameters in each bucket, the first bucket holding the last
/// parameters; empty for no parameters.
std::vector<int> gradient_bucket_sizes(const std::vector<int64_t>& numels, double bucket_elements);

/// The element counts of an encoder classifier's parameters (model.family bert or distilbert) in
/// the registration order of models/nn/bert.hpp's EncoderClassifier: word, position (and
/// BERT's token-type) embeddings, the embedding LayerNorm's weight and bias; per layer the query,
/// key, value and attention-output weights and biases, the attention LayerNorm, the feed-forward
/// in and out weights and biases and its LayerNorm; the pooler (DistilBERT's pre-classifier) and
/// the classifier, weights then biases. Throws std::invalid_argument for a decoder family.
std::vector<int64_t> encoder_parameter_numels(const ModelSpec& model);

}  // namespace dtwin
