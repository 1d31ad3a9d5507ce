#include "runtime/calibrate/network_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "runtime/calibrate/comm_benchmark.hpp"
#include "runtime/calibrate/sample_statistics.hpp"
#include "runtime/process_groups.hpp"

namespace dtwin::rt {
void calibrate_network(const Scenario& scenario, const RankEnv& env, double message_bytes,
                       double pipeline_bytes, const std::vector<double>& allreduce_sizes,
                       int repeats, Profile& profile) {
  const double timeout = scenario.runtime.timeout_s;
  const auto store = tcp_store(env.master_addr, env.master_port + 1, env.rank == 0, timeout);
  const std::string address = local_address_toward(env.master_addr);
  const GlooBinding bind{env.gloo_interfaces.empty() ? address : "", env.gloo_interfaces};
  const auto world =
      make_group(Backend::Gloo, store, "net", env.rank, env.world_size, timeout, bind);

  // Hosts in order of their first rank.
  store->set("host/" + std::to_string(env.rank), store_bytes(address));
  std::map<std::string, int> host_of_address;
  std::vector<int> first_rank;  // per host
  std::vector<int> host(env.world_size);
  for (int r = 0; r < env.world_size; ++r) {
    const std::string a = store_text(store->get("host/" + std::to_string(r)));
    const auto [it, added] = host_of_address.emplace(a, static_cast<int>(first_rank.size()));
    if (added) first_rank.push_back(r);
    host[r] = it->second;
  }

  // With several hosts, connections of its own for the late receives that cross the bulk
  // messages of `world` (every rank knows the host count, so all or none make it).
  const auto crossing = first_rank.size() > 1 ? make_group(Backend::Gloo, store, "net-crossing",
                                                           env.rank, env.world_size, timeout, bind)
                                              : nullptr;
  std::vector<double> latencies, bandwidths, queue_delays;
  for (size_t a = 0; a < first_rank.size(); ++a)
    for (size_t b = a + 1; b < first_rank.size(); ++b) {
      const int ra = first_rank[a], rb = first_rank[b];
      const std::string key = fmt::format("pair/{}/{}", ra, rb);
      if (env.rank == ra || env.rank == rb) {
        const int peer = env.rank == ra ? rb : ra;
        const double small = one_way_seconds(*world, peer, env.rank == ra, 4, repeats);
        const double large = one_way_seconds(*world, peer, env.rank == ra, message_bytes, repeats);
        // Four times the repeats: at 1 Gbit/s the receives spread by a millisecond.
        const double late = late_receive_behind_seconds(*world, *crossing, peer, env.rank == ra,
                                                        pipeline_bytes, 4 * repeats);
        const double bandwidth = message_bytes / std::max(large - small, 1e-9);
        // The simulator delays such a receive by the queue delay, then runs its flow.
        const double queue = std::max(0.0, late - (small + pipeline_bytes / bandwidth));
        if (env.rank == ra)
          store->set(key, store_bytes(fmt::format("{} {} {}", small, bandwidth, queue)));
      }
      world->barrier()->wait();
      if (env.rank == 0) {
        const std::string figures = store_text(store->get(key));
        double latency = 0, bandwidth = 0, queue = 0;
        std::sscanf(figures.c_str(), "%lf %lf %lf", &latency, &bandwidth, &queue);
        latencies.push_back(latency);
        bandwidths.push_back(bandwidth);
        queue_delays.push_back(queue);
      }
    }

  const LayoutSpec& l = scenario.layout;
  const int dp = l.dp;
  const int index = env.rank / l.tp;  // ranks of pipeline rank 0: tp-group d at d * tp
  if (dp >= 2 && env.rank % l.tp == 0 && index < dp) {
    const auto group = make_group(Backend::Gloo, store, "net-dp", index, dp, timeout, bind);
    std::vector<AllReducePoint> points = allreduce_points(*group, allreduce_sizes, repeats);
    if (env.rank == 0) {
      bool across = false;
      for (int d = 1; d < dp; ++d) across |= host[d * l.tp] != host[0];
      profile.allreduce = std::move(points);
      profile.allreduce_ranks = dp;
      profile.allreduce_across_hosts = across;
    }
  }
  world->barrier()->wait();
  if (env.rank == 0 && !latencies.empty()) {
    profile.inter_host_latency = median(latencies);
    profile.inter_host_bandwidth = median(bandwidths);
    profile.inter_host_queue_delay = median(queue_delays);
  }
}

}  // namespace dtwin::rt
