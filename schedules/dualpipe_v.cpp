#include <deque>
#include <stdexcept>
#include <utility>

#include "schedules/chunk_counter.hpp"
#include "schedules/generators.hpp"

namespace dtwin::sched {
namespace {

// One rank's DualPipe-V list: backwards run whole (B) or split (I now, W from a first-in,
// first-out queue later), as DualPipe's WeightGradStore defers them.
class DualPipeRank {
 public:
  DualPipeRank(const Layout& layout, int rank, ActionList& out) : counter_(layout, rank, out) {}

  void forward(int chunk) { counter_.emit(chunk, ActionKind::F); }
  void backward(int chunk, bool split) {
    if (!split) {
      counter_.emit(chunk, ActionKind::B);
      return;
    }
    deferred_.push_back({chunk, counter_.emit(chunk, ActionKind::I)});
  }
  /// The oldest deferred weight gradient.
  void weight() {
    if (deferred_.empty()) throw std::logic_error("dualpipe_v: no deferred weight gradient");
    counter_.put(deferred_.front().first, ActionKind::W, deferred_.front().second);
    deferred_.pop_front();
  }
  /// DualPipe's F&B slot: forward of one chunk, overlapped with a backward of the other.
  void forward_backward(int forward_chunk, int backward_chunk) {
    forward(forward_chunk);
    backward(backward_chunk, false);
  }

 private:
  ChunkCounter counter_;
  std::deque<std::pair<int, int>> deferred_;  // (chunk, microbatch) of each I without its W
};

}  // namespace

// The eight steps of DualPipeV.step (deepseek-ai/DualPipe, dualpipe/dualpipev.py), which
// PyTorch's ScheduleDualPipeV follows too.
std::vector<ActionList> dualpipe_v(const Layout& layout) {
  const int pp = layout.pp, m = layout.microbatches;
  std::vector<ActionList> pipeline(pp);
  for (int r = 0; r < pp; ++r) {
    DualPipeRank rank(layout, r, pipeline[r]);
    const int behind = pp - r - 1;                         // ranks between this one and the turn
    for (int k = 0; k < 2 * behind; ++k) rank.forward(0);  // 1: nF0
    for (int k = 0; k <= r; ++k) {                         // 2: nF0F1
      rank.forward(0);
      rank.forward(1);
    }
    for (int k = 0; k < behind; ++k) {  // 3: nB1W1F1, zero bubble
      rank.backward(1, true);
      rank.weight();
      rank.forward(1);
    }
    for (int k = 0; k < m - 2 * pp + r + 1; ++k) {  // 4, the main step: nF0B1F1B0
      rank.forward_backward(0, 1);
      rank.forward_backward(1, 0);
    }
    for (int k = 0; k < behind; ++k) {  // 5: nB1F1B0
      rank.backward(1, false);
      rank.forward_backward(1, 0);
    }
    // 6: nB1B0, splitting the backwards of the second half (from the middle pair on: both of it
    // on odd ranks, the chunk-0 one on even ranks).
    bool split = false;
    for (int k = 0; k <= r; ++k) {
      split = split || (k == (r + 1) / 2 && r % 2 == 1);
      rank.backward(1, split);
      split = split || (k == (r + 1) / 2 && r % 2 == 0);
      rank.backward(0, split);
    }
    for (int k = 0; k < behind; ++k) {  // 7: nWB0, zero bubble
      rank.weight();
      rank.backward(0, true);
    }
    for (int k = 0; k <= r; ++k) rank.weight();  // 8: nW
  }
  return pipeline;
}

}  // namespace dtwin::sched
