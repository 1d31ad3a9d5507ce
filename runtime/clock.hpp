// The runtime's clock: wall-clock seconds since a run-wide origin, comparable across ranks of
// one machine and, with synchronised clocks (NTP/PTP), across machines.
#pragma once

#include <chrono>

namespace dtwin::rt {

/// Seconds since the Unix epoch, from the system clock (µs resolution).
inline double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

/// `seconds` as whole milliseconds (truncated), the unit of c10d's and Gloo's timeouts.
inline std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
}

/// Seconds since `origin` (a wall_seconds() value every rank agreed on).
class RunClock {
 public:
  explicit RunClock(double origin) : origin_(origin) {}
  /// Seconds since the origin (µs resolution).
  double now() const { return wall_seconds() - origin_; }
  double origin() const { return origin_; }

 private:
  double origin_;
};

}  // namespace dtwin::rt
