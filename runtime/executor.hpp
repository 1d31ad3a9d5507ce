// The executor: walks one rank's lowered action list through a dispatch table from action kind
// to handler, and times every action on the run's common clock.
//
// On the CPU a transfer (SEND/RECV pair) is two Gloo messages on the pipeline group, since a
// Gloo send carries exactly one tensor: first the activation or gradient itself, exactly as
// computed (tag sched::transfer_tag), then the time its sender posted it, one float64 in seconds
// on the run clock (tag transfer_tag + transfer_tag_count, a tag space of its own). The receiver
// counts as exposed communication the part of its wait after both it and the sender were ready:
// now - max(receive start, posted). On a GPU a transfer is the tensor alone, and the timeline
// comes from CUDA events (runtime/action_timer.hpp): a RECV lasts as long as the compute stream
// waited for it.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <map>
#include <vector>

#include "models/cost/collective_bytes.hpp"
#include "models/spec/scenario.hpp"
#include "runtime/action_timer.hpp"
#include "runtime/clock.hpp"
#include "runtime/communicator.hpp"
#include "runtime/data/training_data.hpp"
#include "runtime/gradient_buckets.hpp"
#include "runtime/pass_graphs.hpp"
#include "runtime/rank_model.hpp"
#include "schedules/schedule.hpp"
#include "trace/timeline.hpp"

namespace dtwin::rt {

class Executor {
 public:
  struct StepResult {
    std::vector<trace::TimedAction> events;  ///< one per executed action, in execution order
    double loss_sum = 0;                     ///< sum of microbatch losses (last stage only)
    int loss_count = 0;
  };

  /// `process` is this process's rank (sched::Layout::process); it runs the actions of its
  /// schedule rank. `partition` gives the gradient buckets' size. `stages` are its modules
  /// (build_rank_model, with their ZeroStage when layout.zero > 0, as its member of the
  /// tensor-parallel group) on comm.device(), where the batches go too; all references must outlive
  /// it.
  Executor(const Scenario& scenario, const StagePartition& partition,
           const sched::Schedule& schedule, int process, std::map<int, StageState>& stages,
           Communicator& comm, const TrainingData& data, const RunClock& clock);

  /// Executes the rank's list for training step `step`. F runs the stage forward and keeps its
  /// graph; SEND/RECV move activations and their gradients with isend/irecv on the pipeline
  /// group; B (or I then W) runs the backward of loss/m; ALLREDUCE applies the layout's dp_sync
  /// on the DP group (with layout.overlap_grad_reduce it waits for the gradient buckets that the
  /// stage's last B or W posted as their gradients completed, runtime/gradient_buckets.hpp);
  /// UNSHARD, RESHARD and REDUCE_GRAD gather, release and reduce-scatter the
  /// ZeRO shards (executor_sharding.cpp; with layout.overlap_grad_reduce REDUCE_GRAD waits for
  /// the buckets reduce-scattered during the backward, runtime/bucket_reductions.hpp); OPTIM steps
  /// AdamW (on the shard under ZeRO). Throws std::logic_error for a kind without handler or when an
  /// action needs a module or tensor this rank does not hold (the message names the rank, the
  /// action and what is missing), and RankLost when a peer is gone. Under sequence parallelism the
  /// tensor-parallel group sums the norm weights' gradients (StageModule::replicated_parameters)
  /// at each stage's OPTIM, after the DP reduction (under ZeRO on the shard).
  StepResult run_step(int64_t step);

  /// ZeRO 3: all-gathers every stage's parameters over the DP group (every replica must call
  /// it), so that they can be read between steps (digests, checkpoints); a no-op otherwise.
  void gather_all_parameters();
  /// Releases what gather_all_parameters() gathered.
  void release_all_parameters();

  /// The most bytes of model states (model_state_bytes of rank_model.hpp, summed over this
  /// rank's stages) held at the start of any OPTIM so far.
  double peak_model_state_bytes() const { return peak_model_state_bytes_; }

  /// Bytes this process has sent to and received from the other members of its DP group in the
  /// data-parallel reductions of its dense gradients so far (ALLREDUCE under each dp_sync, and
  /// the buckets' all-reduces), as Gloo's algorithms move the buffers it posted
  /// (models/cost/collective_bytes.hpp); ZeRO's collectives, the expert gradients' reduction and
  /// the replicas' start times are not counted.
  WireBytes gradient_wire_bytes() const {
    return {gradient_sent_.load(), gradient_received_.load()};
  }

 private:
  using Key = std::pair<int, int>;  // (stage, microbatch)
  using Handler = void (Executor::*)(const sched::Action&);

  void forward(const sched::Action& a);
  void backward(const sched::Action& a);
  void input_backward(const sched::Action& a);
  void weight_backward(const sched::Action& a);
  void send(const sched::Action& a);
  void receive(const sched::Action& a);
  void dp_sync(const sched::Action& a);
  /// Under expert parallelism, in a's ALLREDUCE: sums the routed experts' gradients over the
  /// expert data-parallel group and divides them by dp.
  void reduce_expert_gradients(const sched::Action& a);
  /// ALLREDUCE or REDUCE_GRAD under overlap_grad_reduce: waits for a's stage's buckets.
  void finish_buckets(const sched::Action& a);
  /// Arms a's stage's buckets when `index` is its last B or W (all-reducing on the DP group,
  /// or reduce-scattering into the ZeRO shards); returns whether it did.
  bool arm_buckets(const sched::Action& a, std::size_t index);
  void optimizer_step(const sched::Action& a);
  void unshard(const sched::Action& a);
  void reshard(const sched::Action& a);
  void reduce_gradients(const sched::Action& a);

  /// The ZeroStage of a's stage; throws std::logic_error naming the rank and `a` if unsharded.
  ZeroStage& zero_of(const sched::Action& a);
  /// All-gathers the replicas' `start` (run-clock seconds) over the DP group and returns the
  /// latest; `what` names the wait when a peer is lost.
  double latest_start(double start, const std::string& what);
  /// All-gathers `zero`'s shards into its full parameters (announced as `what` when a peer is
  /// lost); returns the latest start among the replicas, in run-clock seconds.
  double gather_parameters(ZeroStage& zero, const std::string& what);
  /// The other processes of this process's DP group.
  std::vector<int> dp_peers() const;
  /// The process of schedule rank `rank` with this process's tensor-parallel index.
  int process_of(int rank) const { return schedule_.layout.rank_of(rank, tp_index_); }
  /// Under sequence parallelism, at a's stage's OPTIM: sums its replicated-parameter gradients
  /// over the tensor-parallel group (under ZeRO the shard's part of them); nothing otherwise.
  void sum_sequence_parallel_gradients(const sched::Action& a);
  /// Under ZeRO, before compute action `a`: throws std::logic_error unless a's stage holds its
  /// full parameters (ZeRO 3 between UNSHARD and RESHARD), and before a backward allocates the
  /// stage's gradient buffer when it is released. Nothing without ZeRO.
  void prepare_compute(const sched::Action& a);

  using Works = std::vector<c10::intrusive_ptr<c10d::Work>>;

  void run_backward(const sched::Action& a, bool split);
  /// Schedule rank at the other end of a's transfer (a is a SEND or RECV).
  int peer_rank(const sched::Action& a) const;
  /// Posts a's transfer on the pipeline group, one Gloo message per tensor of `message` (sends
  /// for a SEND, receives into them for a RECV); tensor i gets tag
  /// transfer_tag + i * transfer_tag_count, so every message of a step has its own tag.
  Works transfer(const sched::Action& a, const std::vector<torch::Tensor>& message);
  /// This rank's module of a's stage; throws std::logic_error naming the rank and `a` if none.
  StageState& stage_of(const sched::Action& a);
  bool local_stage(int stage) const { return stages_.count(stage) > 0; }
  void wait(c10::intrusive_ptr<c10d::Work> work, const sched::Action& a,
            const std::vector<int>& peers);

  const Scenario& scenario_;
  const sched::Schedule& schedule_;
  int rank_;      // schedule rank
  int tp_index_;  // member of the schedule rank's tensor-parallel group
  std::map<int, StageState>& stages_;
  Communicator& comm_;
  const TrainingData& data_;
  const RunClock& clock_;
  torch::Device device_;
  std::unique_ptr<ActionTimer> timer_;
  std::map<sched::ActionKind, Handler> handlers_;

  // Per-step state.
  int64_t step_ = 0;
  double exposed_ = 0;                        // exposed communication of the action being run
  std::map<Key, torch::Tensor> inputs_;       // stage inputs that need their gradient
  std::map<Key, torch::Tensor> outputs_;      // hidden states, or the loss on the last stage
  std::map<Key, torch::Tensor> activations_;  // input activation of (stage, mb), ready for F
  std::map<Key, torch::Tensor> gradients_;    // gradient of (stage, mb)'s output, ready for B/I
  std::map<Key, torch::Tensor> input_grads_;  // gradient of (stage, mb)'s input, for SEND_B
  std::map<Key, nn::WeightGradStash> stashes_;
  // layout.overlap_grad_reduce: each stage's gradient buckets, armed for the stage's last B or
  // W in the rank's list (the index of that action).
  std::map<int, std::unique_ptr<GradientBuckets>> buckets_;
  // runtime.cuda_graphs: the single stage's captured passes (null otherwise).
  std::unique_ptr<PassGraphs> graphs_;
  std::map<int, std::size_t> last_gradient_;
  struct PendingSend {
    Works works;
    std::vector<torch::Tensor> message;  // kept alive until the works complete
    size_t event;                        // index into events_
    int peer;                            // receiving process
  };
  // Waits for `pending` and charges the wait to its SEND's event.
  void finish_send(const PendingSend& pending);
  // sched::send_release_points of this rank's list: a SEND's pending send (its event's index
  // is the action's) is waited for after that action, -1: at the step's end.
  std::vector<int> send_release_;
  std::vector<PendingSend> sends_;
  std::vector<trace::TimedAction> events_;
  torch::Tensor loss_sum_;  // float64 on device_, read once at the step's end
  int loss_count_ = 0;
  double peak_model_state_bytes_ = 0;
  // gradient_wire_bytes(); atomic: a bucket's all-reduce is posted from autograd's hook.
  void count_gradient_bytes(const WireBytes& bytes);
  std::atomic<int64_t> gradient_sent_{0}, gradient_received_{0};
};

}  // namespace dtwin::rt
