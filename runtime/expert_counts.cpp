#include "runtime/expert_counts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "base/file_writer.hpp"

namespace dtwin::rt {

double peak_member_imbalance(std::map<int, StageState>& stages) {
  double peak = 0;
  for (auto& [stage, state] : stages) {
    std::vector<std::pair<std::int64_t, std::int64_t>> per_microbatch;  // {received, sent}
    for (const auto& [layer, moe] : state.module->moe_layers()) {
      const auto& copies = moe->member_copies();
      if (per_microbatch.size() < copies.size()) per_microbatch.resize(copies.size());
      for (std::size_t i = 0; i < copies.size(); ++i) {
        per_microbatch[i].first += copies[i].first;
        per_microbatch[i].second += copies[i].second;
      }
    }
    for (const auto& [received, sent] : per_microbatch)
      if (sent > 0) peak = std::max(peak, double(received) / double(sent));
  }
  return peak;
}

std::vector<ExpertCount> finish_expert_counts(std::map<int, StageState>& stages, Communicator& comm,
                                              std::int64_t step) {
  std::vector<std::pair<int, nn::MoeFeedForward>> layers;
  for (auto& [stage, state] : stages)
    for (const auto& [layer, moe] : state.module->moe_layers()) layers.emplace_back(layer, moe);
  if (layers.empty()) return {};
  std::vector<torch::Tensor> counts;  // per layer: [2, E], the kept copies then the load
  for (const auto& [layer, moe] : layers)
    counts.push_back(torch::stack({moe->tokens_per_expert(), moe->expert_load()}));
  std::vector<torch::Tensor> summed{torch::stack(counts).to(comm.device())};
  const std::string what = "the step-end sum of tokens per expert";
  comm.wait(comm.post(what, {}, [&] { return comm.data_parallel().allreduce(summed); }), what, {});
  const torch::Tensor total = summed[0].cpu();
  std::vector<ExpertCount> rows;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    nn::MoeFeedForward& moe = layers[i].second;
    moe->router->update_bias(total[i][1]);
    moe->reset_counts();
    for (int e = 0; e < total.size(2); ++e)
      rows.push_back({step + 1, layers[i].first, e, total[i][0][e].item<std::int64_t>(),
                      total[i][1][e].item<std::int64_t>()});
  }
  return rows;
}

double measured_load_imbalance(const std::vector<ExpertCount>& rows, int ep,
                               std::int64_t first_step) {
  if (ep < 2) return 0;
  std::map<std::pair<std::int64_t, int>, std::vector<std::int64_t>> experts;  // (step, layer)
  for (const ExpertCount& r : rows) {
    if (r.step < first_step) continue;
    std::vector<std::int64_t>& tokens = experts[{r.step, r.layer}];
    if (static_cast<int>(tokens.size()) <= r.expert) tokens.resize(r.expert + 1, 0);
    tokens[r.expert] = r.tokens;
  }
  double sum = 0;
  int layers = 0;
  for (const auto& [key, tokens] : experts) {
    const std::size_t per_member = tokens.size() / ep;
    std::int64_t busiest = 0, total = 0;
    for (int m = 0; m < ep; ++m) {
      std::int64_t held = 0;
      for (std::size_t e = m * per_member; e < (m + 1) * per_member; ++e) held += tokens[e];
      busiest = std::max(busiest, held);
      total += held;
    }
    if (total == 0) continue;
    sum += double(busiest) * ep / double(total);
    ++layers;
  }
  return layers > 0 ? sum / layers : 0;
}

nlohmann::json to_json(const std::vector<ExpertCount>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ExpertCount& r : rows) out.push_back({r.step, r.layer, r.expert, r.tokens, r.load});
  return out;
}

std::vector<ExpertCount> expert_counts_from_json(const nlohmann::json& rows) {
  std::vector<ExpertCount> out;
  for (const nlohmann::json& r : rows)
    out.push_back({r.at(0).get<std::int64_t>(), r.at(1).get<int>(), r.at(2).get<int>(),
                   r.at(3).get<std::int64_t>(), r.at(4).get<std::int64_t>()});
  return out;
}

void write_expert_counts(std::vector<ExpertCount> rows, const std::string& output_dir) {
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const ExpertCount& a, const ExpertCount& b) {
    return std::tie(a.step, a.layer, a.expert) < std::tie(b.step, b.layer, b.expert);
  });
  std::string csv = "step,layer,expert,tokens,load\n";
  for (const ExpertCount& r : rows)
    csv += fmt::format("{},{},{},{},{}\n", r.step, r.layer, r.expert, r.tokens, r.load);
  write_file(output_dir + "/tokens_per_expert.csv", csv);
}

}  // namespace dtwin::rt
