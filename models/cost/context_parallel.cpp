#include "models/cost/context_parallel.hpp"

#include <algorithm>

#include "models/cost/attention_split.hpp"
#include "models/cost/group_links.hpp"

namespace dtwin {

double cp_exchange_bytes(const ModelSpec& model, const LayoutSpec& layout, double tokens_per_gpu,
                         double e, bool backward) {
  const double cp = layout.cp;
  if (layout.cp == 1) return 0;
  const AttentionSplit heads = attention_split(model, layout.tp);
  const double q = heads.q_per_gpu * heads.head_dim, c = heads.kv_per_gpu * heads.head_dim;
  if (layout.cp_comm_type == CpCommType::A2a)
    return (cp - 1) / cp * tokens_per_gpu * (2 * q + 2 * c) * e;
  const double forward = (cp - 1) * 2 * tokens_per_gpu * c * e;
  return backward ? 2 * forward : forward;
}

double cp_exchange_seconds(const Scenario& scenario, double bytes) {
  const LayoutSpec& l = scenario.layout;
  if (l.cp == 1) return 0;
  if (l.cp_comm_type == CpCommType::A2a)
    return group_all_to_all_seconds(scenario.cluster, l.cp, l.tp, bytes);
  const LinkSpec hop = group_ring_hop(scenario.cluster, l.cp, l.tp);
  return (l.cp - 1) * hop.latency + bytes / hop.bandwidth;
}

double cp_exposed_seconds(const Scenario& scenario, double bytes, double attention_s,
                          bool backward) {
  const LayoutSpec& l = scenario.layout;
  if (l.cp == 1) return 0;
  if (l.cp_comm_type != CpCommType::P2p) return cp_exchange_seconds(scenario, bytes);
  const LinkSpec hop = group_ring_hop(scenario.cluster, l.cp, l.tp);
  const double chunk = bytes / ((backward ? 2 : 1) * (l.cp - 1));  // one K/V chunk
  const double hidden = attention_s / l.cp;
  const auto exposed = [&](double sent) {
    return std::max(0.0, hop.latency + sent / hop.bandwidth - hidden);
  };
  if (!backward) return (l.cp - 1) * exposed(chunk);
  return 2 * exposed(chunk) + (l.cp - 2) * exposed(2 * chunk);
}

}  // namespace dtwin
