// A network interface's traffic counters as the kernel keeps them, for the bytes a rank's host put
// on the wire and took off it, protocol headers included (docs/bytes-on-the-wire.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtwin::rt {

/// Totals since the interface came up: bytes of the frames (Ethernet, IP and TCP headers
/// included; no preamble or checksum), and the frames.
struct InterfaceCounters {
  int64_t received_bytes = 0;
  int64_t received_packets = 0;
  int64_t sent_bytes = 0;
  int64_t sent_packets = 0;

  /// The traffic between two readings (`*this` the later one).
  InterfaceCounters operator-(const InterfaceCounters& earlier) const {
    return {received_bytes - earlier.received_bytes, received_packets - earlier.received_packets,
            sent_bytes - earlier.sent_bytes, sent_packets - earlier.sent_packets};
  }
};

/// The name of the interface of this process's network namespace that holds the IPv4 or IPv6
/// `address` (getifaddrs); nullopt when none does or it is a loopback interface (whose counters
/// add up every local rank's traffic).
std::optional<std::string> interface_with_address(const std::string& address);

/// `interface`'s counters from /proc/net/dev, which shows the reading process's network
/// namespace. Throws std::runtime_error when the file or the interface is missing or a line is
/// malformed.
InterfaceCounters read_interface_counters(const std::string& interface);

}  // namespace dtwin::rt
