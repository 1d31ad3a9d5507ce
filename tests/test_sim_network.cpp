// The simulated network against closed forms: a transfer costs α + S/B, flows share a link
// fairly, ring all-reduce costs 2(N-1)(α + S/(N·B)) (Patarasuk & Yuan 2009), and the Flow
// collective model against the message-level one.
#include <catch2/catch.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "models/cost/profile.hpp"
#include "models/spec/scenario_loader.hpp"
#include "sim/collectives.hpp"
#include "sim/platform.hpp"
#include "tests/fresh_process.hpp"

namespace sg4 = simgrid::s4u;
using namespace dtwin;

namespace {

constexpr double kBandwidth = 12.5e9;  // bytes/s between nodes
constexpr double kLatency = 5e-6;      // s between nodes
int token = 0;

// `nodes` x `devices` with an ideal intra-node fabric and the figures above between nodes.
Scenario cluster(int nodes, int devices, const std::string& topology = "star") {
  const std::string world = std::to_string(nodes * devices);
  return load_scenario(
      std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
      {"layout.pp=1", "cluster.topology=" + topology, "cluster.nodes_per_switch=2",
       "layout.dp=" + world, "cluster.ranks_per_device=1", "cluster.nodes=" + std::to_string(nodes),
       "cluster.devices_per_node=" + std::to_string(devices), "cluster.intra_node.bandwidth=1e15",
       "cluster.intra_node.latency=0", "cluster.inter_node.bandwidth=" + std::to_string(kBandwidth),
       "cluster.inter_node.latency=" + std::to_string(kLatency)});
}

// Sends `bytes` from rank pairs (from[i] -> to[i]) at once on the platform of `scenario` (and
// `profile`, if any); returns each transfer's seconds.
std::vector<double> transfers(const Scenario& scenario, std::vector<std::pair<int, int>> pairs,
                              double bytes, const Profile* profile = nullptr) {
  return test::in_fresh_process([&] {
    auto engine = sim::make_engine();
    const sim::Platform platform = sim::build_platform(scenario, profile);
    std::vector<double> seconds(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto [from, to] = pairs[i];
      const std::string box = std::string("t").append(std::to_string(i));
      sg4::Actor::create("s" + box, platform.rank_hosts[from],
                         [box, bytes] { sg4::Mailbox::by_name(box)->put(&token, bytes); });
      sg4::Actor::create("r" + box, platform.rank_hosts[to], [box, &seconds, i] {
        sg4::Mailbox::by_name(box)->get<int>();
        seconds[i] = sg4::Engine::get_clock();
      });
    }
    engine->run();
    return seconds;
  });
}

// Runs a DP collective over all ranks of `scenario`; returns the time the last rank ends.
double collective(const Scenario& scenario, double bytes, bool gather, sim::CollectiveModel model) {
  return test::in_fresh_process([&] {
    auto engine = sim::make_engine();
    const sim::Platform platform = sim::build_platform(scenario);
    double end = 0;
    const int n = scenario.world_size();
    for (int rank = 0; rank < n; ++rank) {
      sim::Group group{{}, rank, "test"};
      for (int r = 0; r < n; ++r) group.ranks.push_back(r);
      sg4::Actor::create("rank" + std::to_string(rank), platform.rank_hosts[rank],
                         [=, &end, &platform] {
                           if (gather)
                             sim::gather_scatter(group, bytes, platform);
                           else
                             sim::ring_allreduce(group, bytes, model, platform);
                           end = std::max(end, sg4::Engine::get_clock());
                         });
    }
    engine->run();
    return std::vector<double>{end};
  })[0];
}

}  // namespace

TEST_CASE("a single transfer takes latency + size / bandwidth") {
  for (double bytes : {1e3, 1e6, 1e9}) {
    const double seconds = transfers(cluster(2, 1), {{0, 1}}, bytes)[0];
    CHECK(seconds == Approx(kLatency + bytes / kBandwidth).epsilon(0.005));
  }
}

TEST_CASE("two flows sharing one link each get half its bandwidth") {
  const double bytes = 1e9;
  // Devices 0 and 1 of node 0 send to devices 0 and 1 of node 1: both cross node 0's link.
  const std::vector<double> seconds = transfers(cluster(2, 2), {{0, 2}, {1, 3}}, bytes);
  for (double s : seconds) CHECK(s == Approx(kLatency + bytes / (kBandwidth / 2)).epsilon(0.005));
}

TEST_CASE("transfers between the ranks of one device share its loopback as profiled") {
  // Four ranks on one device whose loopback carries 1 GB/s; transfers of 10 MB.
  const Scenario scenario =
      load_scenario(std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml",
                    {"layout.pp=1", "layout.dp=4", "cluster.nodes=1", "cluster.devices_per_node=1",
                     "cluster.ranks_per_device=4", "cluster.intra_node.bandwidth=1e9",
                     "cluster.intra_node.latency=0"});
  const std::vector<std::pair<int, int>> two{{0, 1}, {2, 3}}, four{{0, 1}, {1, 2}, {2, 3}, {3, 0}};
  CHECK(transfers(scenario, {{0, 1}}, 1e7)[0] == Approx(0.01));
  // Not measured: one link, shared fairly.
  for (double seconds : transfers(scenario, two, 1e7)) CHECK(seconds == Approx(0.02));
  // Measured: each of two at once takes 1.25 times its time alone; beyond the curve, the last
  // point's throughput is time-sliced (1.25 x 4/2 at k = 4).
  Profile profile;
  profile.p2p_concurrency = {1, 1.25};
  for (double seconds : transfers(scenario, two, 1e7, &profile)) CHECK(seconds == Approx(0.0125));
  for (double seconds : transfers(scenario, four, 1e7, &profile)) CHECK(seconds == Approx(0.025));
}

TEST_CASE("ring all-reduce on a star matches 2(N-1)(α + S/(N·B))") {
  const double bytes = 1e9;
  for (int n : {2, 4, 8}) {
    const double closed = 2 * (n - 1) * (kLatency + bytes / (n * kBandwidth));
    CAPTURE(n);
    CHECK(collective(cluster(n, 1), bytes, false, sim::CollectiveModel::Message) ==
          Approx(closed).epsilon(0.005));
    CHECK(collective(cluster(n, 1), bytes, false, sim::CollectiveModel::Flow) ==
          Approx(closed).epsilon(0.005));
  }
}

TEST_CASE("gather-scatter on a star moves 2(N-1) messages through the root's link") {
  const double bytes = 1e8;
  const int n = 4;
  const double closed = 2 * (kLatency + (n - 1) * bytes / kBandwidth);
  CHECK(collective(cluster(n, 1), bytes, true, sim::CollectiveModel::Message) ==
        Approx(closed).epsilon(0.005));
}

TEST_CASE("Flow all-reduce against Message on a two-level cluster") {
  // 4 nodes x 4 devices: the ring crosses node links on some steps and stays inside a node on
  // others; each step is paced by its slowest hop, so both models agree.
  const double bytes = 1e9;
  const double message = collective(cluster(4, 4), bytes, false, sim::CollectiveModel::Message);
  const double flow = collective(cluster(4, 4), bytes, false, sim::CollectiveModel::Flow);
  CHECK(flow == Approx(message).epsilon(0.01));
}

TEST_CASE("fat-tree: one latency inside a leaf switch, two across the spine") {
  const double bytes = 1e8;
  const std::vector<double> seconds = transfers(cluster(4, 1, "fat-tree"), {{0, 1}}, bytes);
  CHECK(seconds[0] == Approx(kLatency + bytes / kBandwidth).epsilon(0.005));
  const std::vector<double> across = transfers(cluster(4, 1, "fat-tree"), {{0, 2}}, bytes);
  CHECK(across[0] == Approx(2 * kLatency + bytes / kBandwidth).epsilon(0.005));
}
