// The error a rank raises when a peer died or stalled.
#pragma once

#include <stdexcept>
#include <string>

namespace dtwin::rt {

/// A peer rank is gone: what() names it, the action that was waiting for it, and the
/// transport's own message.
class RankLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtwin::rt
