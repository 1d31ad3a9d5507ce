// Emits the actions of a V-schedule rank (two chunks) in order, numbering each (chunk, kind)'s
// microbatches 0, 1, ... as it goes. Shared by zb_v.cpp and dualpipe_v.cpp.
#pragma once

#include <array>
#include <initializer_list>
#include <utility>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

class ChunkCounter {
 public:
  ChunkCounter(const Layout& layout, int rank, ActionList& out)
      : layout_(layout), rank_(rank), out_(out) {}

  /// Appends `kind` of `chunk` (0 or 1) for that pair's next microbatch, unless that microbatch
  /// is past the last (microbatches - 1); returns the microbatch. B and I share their numbers:
  /// a microbatch's backward is one or the other.
  int emit(int chunk, ActionKind kind) {
    const int microbatch = next_[chunk][slot(kind)]++;
    put(chunk, kind, microbatch);
    return microbatch;
  }
  /// Emits the (chunk, kind) pairs of `round` in order, `times` times over.
  void repeat(int times, std::initializer_list<std::pair<int, ActionKind>> round) {
    for (int k = 0; k < times; ++k)
      for (const auto& [chunk, kind] : round) emit(chunk, kind);
  }
  /// Appends `kind` of `chunk` for `microbatch`, unless it is past the last; numbers nothing.
  void put(int chunk, ActionKind kind, int microbatch) {
    if (microbatch < layout_.microbatches)
      out_.push_back({layout_.stage_of(rank_, chunk), kind, microbatch});
  }
  /// How many `kind` of `chunk` emit() numbered so far, those left out included.
  int count(int chunk, ActionKind kind) const { return next_[chunk][slot(kind)]; }

 private:
  static int slot(ActionKind kind) {
    return static_cast<int>(kind == ActionKind::B ? ActionKind::I : kind);
  }

  const Layout& layout_;
  int rank_;
  ActionList& out_;
  std::array<std::array<int, 4>, 2> next_{};  // per chunk, per F, (B or I), W
};

}  // namespace dtwin::sched
