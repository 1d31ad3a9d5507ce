// Rendezvous and process groups of one rank (a process): c10d's TCPStore and one c10d backend
// (Gloo or NCCL) for the world, one per pipeline, one per data-parallel and, when layout.tp > 1,
// one per tensor-parallel group, plus heartbeats that name a lost rank.
#pragma once

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <thread>
#include <vector>

#include "models/spec/settings.hpp"
#include "runtime/error_text.hpp"
#include "runtime/rank_env.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

class Communicator {
 public:
  /// Connects to the store at MASTER_ADDR:MASTER_PORT (rank 0 hosts it unless the launcher
  /// does), agrees on the run's clock origin, and creates the world group (every process),
  /// this process's pipeline groups (the pp processes of its replica with its tensor-parallel
  /// index, indexed by pipeline rank; see pipeline_channel), DP group (the dp processes of its
  /// pipeline rank and tensor-parallel index, indexed by replica) and, when layout.tp > 1,
  /// tensor-parallel group (the tp processes of its schedule rank, indexed by tp index), all on
  /// `backend` (runtime.backend, see make_group) for tensors on `device` (Gloo takes a GPU's
  /// tensors through host copies). env.rank is the process rank (sched::Layout::process). Every
  /// wait gives up after `timeout_s` seconds. Throws std::runtime_error when the store cannot be
  /// hosted or reached, and RankLost naming the ranks that never joined when a group cannot be
  /// formed; the heartbeat thread is stopped and joined on every path. With `ep` > 1 (expert
  /// parallelism folded over the data-parallel indices, layout.tp 1) also the expert-parallel
  /// group (the ep processes of its pipeline rank whose DP indices share dp_index / ep, indexed
  /// by dp_index mod ep) and, when dp > ep, the expert data-parallel group (those sharing
  /// dp_index mod ep, indexed by dp_index / ep). With `cp` > 1 (context parallelism: the
  /// schedule's DP index is dp_index·cp + cp_index, so the DP group spans dp·cp) also the
  /// context-parallel group (the cp processes of its pipeline rank, tensor-parallel index and
  /// dp_index, indexed by cp_index).
  Communicator(const RankEnv& env, const sched::Layout& layout, Backend backend, double timeout_s,
               torch::Device device = torch::kCPU, int ep = 1, int cp = 1);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  double origin() const { return origin_; }
  /// Where the tensors handed to its groups live (NCCL takes GPU tensors only).
  const torch::Device& device() const { return device_; }
  c10d::Backend& world() { return *world_; }
  /// The pipeline group that carries a transfer: activations (`gradients` false) or gradients,
  /// from a lower to a higher pipeline rank (`upward`) or back. Each of the four has a group of
  /// its own, so that a pair's transfers of one channel never wait behind another's:
  /// - over NCCL, which matches a pair's messages in posting order on one stream (Megatron-LM
  ///   posts them in pairs, batch_isend_irecv, for the same reason); the schedule must then
  ///   receive each channel's messages in the order they are sent (sched::out_of_order_transfer);
  /// - over Gloo, whose pair of ranks writes everything onto one TCP connection in posting
  ///   order, and whose receive first sends the sender a ready notice (its rendezvous): with one
  ///   group, a rank's notice for an activation waited behind its own gradient going the other
  ///   way, so the activation crossed only after the gradient had (tests/test_pipeline_channels).
  c10d::Backend& pipeline_channel(bool gradients, bool upward) {
    return *pipeline_channels_.at(2 * static_cast<std::size_t>(gradients) + upward);
  }
  c10d::Backend& data_parallel() { return *data_parallel_; }
  /// The tensor-parallel group; null when layout.tp is 1.
  const c10::intrusive_ptr<c10d::Backend>& tensor_parallel() const { return tensor_parallel_; }
  c10d::Store& store() { return *store_; }
  /// The expert-parallel group; null when ep is 1.
  const c10::intrusive_ptr<c10d::Backend>& expert_parallel() const { return expert_parallel_; }
  /// The expert data-parallel group; null when dp / ep is 1.
  const c10::intrusive_ptr<c10d::Backend>& expert_data_parallel() const {
    return expert_data_parallel_;
  }

  /// The address of this host that routes to MASTER_ADDR, which its groups' sockets use (empty
  /// under GLOO_SOCKET_IFNAME), and the interface holding it (rt::interface_with_address: empty
  /// on the loopback, under GLOO_SOCKET_IFNAME, or when none holds it).
  const std::string& interface() const { return interface_; }
  const std::string& address() const { return address_; }

  /// The context-parallel group; null when cp is 1.
  const c10::intrusive_ptr<c10d::Backend>& context_parallel() const { return context_parallel_; }

  /// The ranks among `candidates` whose heartbeat stopped (no beat for 2 s), waiting up to 3 s
  /// for one to go stale. Empty if all are alive.
  std::vector<int> lost_ranks(const std::vector<int>& candidates);

  /// Waits for `work` (at most the timeout). On failure throws RankLost naming the lost rank
  /// among `peers` (every other rank when empty) and `what` was waiting for it.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what,
            const std::vector<int>& peers);

  /// Calls `post` (a lambda that starts an operation on a process group and returns its Work);
  /// if starting it fails (a peer's connection is already closed), throws RankLost as wait().
  template <typename Post>
  c10::intrusive_ptr<c10d::Work> post(const std::string& what, const std::vector<int>& peers,
                                      Post&& post) {
    try {
      return post();
    } catch (const std::exception& error) {
      report_lost(what, peers, error_text(error));
    }
  }

  /// Throws RankLost for the failed `work`, as wait() does.
  [[noreturn]] void report_lost(const std::string& what, const std::vector<int>& peers,
                                const std::string& error);

 private:
  void beat();

  /// After the store's host names the ranks it lost, it waits (at most kStale + 1 s) until every
  /// other started rank has named its own, so that none finds the store gone and blames the host.
  void await_peer_reports(const std::vector<int>& candidates, const std::vector<int>& lost);

  int rank_;
  int world_size_;
  bool hosts_store_ = false;
  double origin_ = 0;
  torch::Device device_;
  std::string interface_;
  std::string address_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Store> heartbeat_store_;
  c10::intrusive_ptr<c10d::Backend> world_;
  /// The pipeline groups by 2 * gradients + upward.
  std::vector<c10::intrusive_ptr<c10d::Backend>> pipeline_channels_;
  c10::intrusive_ptr<c10d::Backend> data_parallel_;
  c10::intrusive_ptr<c10d::Backend> tensor_parallel_;
  c10::intrusive_ptr<c10d::Backend> expert_parallel_;
  c10::intrusive_ptr<c10d::Backend> expert_data_parallel_;
  c10::intrusive_ptr<c10d::Backend> context_parallel_;
  std::jthread heartbeat_;  // last: stopped and joined first, also when the constructor throws
};

}  // namespace dtwin::rt
