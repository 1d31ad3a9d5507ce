// The parameter tensors of an encoder classifier, as the runtime's module registers them: what
// the simulator needs to bucket an encoder's gradients as the runtime does.
#pragma once

#include <cstdint>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// The element counts of an encoder classifier's parameters (model.family bert or distilbert) in
/// the registration order of models/nn/bert.hpp's EncoderClassifier: word, position (and
/// BERT's token-type) embeddings, the embedding LayerNorm's weight and bias; per layer the query,
/// key, value and attention-output weights and biases, the attention LayerNorm, the feed-forward
/// in and out weights and biases and its LayerNorm; the pooler (DistilBERT's pre-classifier) and
/// the classifier, weights then biases. Throws std::invalid_argument for a decoder family.
std::vector<int64_t> encoder_parameter_numels(const ModelSpec& model);

}  // namespace dtwin
