#include "models/cost/encoder_parameters.hpp"

#include <stdexcept>

namespace dtwin {

std::vector<int64_t> encoder_parameter_numels(const ModelSpec& m) {
  if (!is_encoder(m.family))
    throw std::invalid_argument("encoder_parameter_numels: model.family is not an encoder");
  const int64_t d = m.d_model, f = m.ffn_hidden;
  std::vector<int64_t> numels{int64_t{m.vocab_size} * d, int64_t{m.positions()} * d};
  if (m.family == ModelFamily::Bert) numels.push_back(2 * d);  // two token types
  numels.insert(numels.end(), {d, d});
  for (int layer = 0; layer < m.n_layers; ++layer) {
    for (int projection = 0; projection < 4; ++projection) numels.insert(numels.end(), {d * d, d});
    numels.insert(numels.end(), {d, d, f * d, f, d * f, d, d, d});
  }
  numels.insert(numels.end(), {d * d, d, int64_t{m.num_labels} * d, int64_t{m.num_labels}});
  return numels;
}

}  // namespace dtwin
