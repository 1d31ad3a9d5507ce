#include "runtime/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "runtime/clock.hpp"
#include "runtime/interface_counters.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_lost.hpp"

namespace dtwin::rt {
namespace {

constexpr double kBeatPeriod = 0.5;  // s between heartbeats
constexpr double kStale = 2.0;       // s without a beat that mark a rank lost

std::string join(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

Communicator::Communicator(const RankEnv& env, const sched::Layout& layout, Backend backend,
                           double timeout_s, torch::Device device, int ep, int cp)
    : rank_(env.rank), world_size_(env.world_size), device_(device) {
  const bool server = env.rank == 0 && !env.store_hosted_elsewhere;
  hosts_store_ = server;
  store_ = tcp_store(env.master_addr, env.master_port, server, timeout_s);
  heartbeat_store_ = tcp_store(env.master_addr, env.master_port, false, timeout_s);
  if (env.rank == 0) store_->set("origin", store_bytes(std::to_string(wall_seconds())));
  origin_ = std::stod(store_text(store_->get("origin")));
  beat();
  heartbeat_ = std::jthread([this](std::stop_token stop) {
    const auto period = to_milliseconds(kBeatPeriod);
    while (!stop.stop_requested()) {
      for (auto slept = std::chrono::milliseconds(0); slept < period && !stop.stop_requested();
           slept += std::chrono::milliseconds(50))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      beat();
    }
  });
  const int rank = layout.group_of(env.rank), tp_index = layout.tp_index(env.rank);
  const int replica = layout.dp_index(rank), stage_rank = layout.pipeline_rank(rank);
  // Group names: the schedule rank's coordinates, and the tensor-parallel index when tp > 1.
  const std::string member = layout.tp > 1 ? "/" + std::to_string(tp_index) : "";
  // Resolved once, outside the rendezvous: a host without a route to MASTER_ADDR is this rank's
  // failure, not a lost peer.
  const GlooBinding bind{env.gloo_interfaces.empty() ? local_address_toward(env.master_addr) : "",
                         env.gloo_interfaces, device.is_cuda()};
  address_ = bind.address;
  interface_ = interface_with_address(address_).value_or("");
  try {
    world_ = make_group(backend, store_, "world", env.rank, env.world_size, timeout_s, bind);
    const std::string pipeline = "pipeline/" + std::to_string(replica) + member;
    for (const char* channel : {"F-down", "F-up", "B-down", "B-up"})
      pipeline_channels_.push_back(make_group(backend, store_, pipeline + "/" + channel, stage_rank,
                                              layout.pp, timeout_s, bind));
    data_parallel_ = make_group(backend, store_, "dp/" + std::to_string(stage_rank) + member,
                                replica, layout.dp, timeout_s, bind);
    if (layout.tp > 1)
      tensor_parallel_ = make_group(backend, store_, "tp/" + std::to_string(rank), tp_index,
                                    layout.tp, timeout_s, bind);
    const std::string pipeline_rank = std::to_string(stage_rank) + "/";
    if (ep > 1)
      expert_parallel_ =
          make_group(backend, store_, "ep/" + pipeline_rank + std::to_string(replica / ep),
                     replica % ep, ep, timeout_s, bind);
    if (ep > 1 && layout.dp > ep)
      expert_data_parallel_ =
          make_group(backend, store_, "edp/" + pipeline_rank + std::to_string(replica % ep),
                     replica / ep, layout.dp / ep, timeout_s, bind);
    if (cp > 1)
      context_parallel_ =
          make_group(backend, store_, "cp/" + pipeline_rank + std::to_string(replica / cp) + member,
                     replica % cp, cp, timeout_s, bind);
  } catch (const std::exception& error) {
    report_lost("the rendezvous", {}, error_text(error));
  }
}

void Communicator::beat() {
  try {
    heartbeat_store_->set("alive/" + std::to_string(rank_),
                          store_bytes(std::to_string(wall_seconds())));
  } catch (const std::exception&) {
    // The store is gone (its host died); the main thread's next wait reports it.
  }
}

std::vector<int> Communicator::lost_ranks(const std::vector<int>& candidates) {
  const double deadline = wall_seconds() + 3.0;
  while (true) {
    std::vector<int> lost;
    for (int r : candidates) {
      try {
        const std::string key = "alive/" + std::to_string(r);
        if (!store_->check({key}) ||
            wall_seconds() - std::stod(store_text(store_->get(key))) > kStale)
          lost.push_back(r);
      } catch (const std::exception&) {
        lost.push_back(r);
      }
    }
    if (!lost.empty() || wall_seconds() > deadline) return lost;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void Communicator::await_peer_reports(const std::vector<int>& candidates,
                                      const std::vector<int>& lost) {
  const double deadline = wall_seconds() + kStale + 1.0;
  for (int r : candidates) {
    if (std::find(lost.begin(), lost.end(), r) != lost.end()) continue;
    try {
      while (!store_->check({"reported/" + std::to_string(r)}) && wall_seconds() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } catch (const std::exception&) {
      return;
    }
  }
}

}  // namespace dtwin::rt

namespace dtwin::rt {

void Communicator::wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what,
                        const std::vector<int>& peers) {
  try {
    work->wait();
  } catch (const std::exception& error) {
    report_lost(what, peers, error_text(error));
  }
}

void Communicator::report_lost(const std::string& what, const std::vector<int>& peers,
                               const std::string& error) {
  std::vector<int> candidates = peers;
  if (candidates.empty())
    for (int r = 0; r < world_size_; ++r)
      if (r != rank_) candidates.push_back(r);
  const std::vector<int> lost = lost_ranks(candidates);
  // A rank that never beat never started (or never reached the store).
  std::string named;
  for (int r : lost) {
    bool started = true;
    try {
      started = store_->check({"alive/" + std::to_string(r)});
    } catch (const std::exception&) {  // the store is gone too: say only that the rank is lost
    }
    named += (named.empty() ? "" : ", ") + std::to_string(r) + (started ? "" : " (never started)");
  }
  try {
    store_->set("reported/" + std::to_string(rank_), store_bytes("1"));
  } catch (const std::exception&) {  // the store is gone: nobody is left to read it
  }
  if (hosts_store_) await_peer_reports(candidates, lost);
  throw RankLost("rank " + std::to_string(rank_) + ": lost rank " +
                 (lost.empty() ? "(one of " + join(candidates) + ")" : named) + " during " + what +
                 ": " + error);
}

}  // namespace dtwin::rt
