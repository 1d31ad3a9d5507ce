// Hosts for the multi-host tests, on one machine: network namespaces (iproute2) joined through a
// bridge by veth pairs, each link shaped by tc's token bucket filter. Needs root, as CI has.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/run_process.hpp"

namespace dtwin::test {

/// `count` hosts: network namespaces "dtwin<PID>h<i>", each with the address 10.77.0.<i+1>/24 on
/// its interface eth0, a veth pair to the bridge of the namespace "dtwin<PID>sw". Both ends of
/// every pair send at most `rate` (tc's syntax: "100mbit", "1gbit"), so each host's link carries
/// `rate` each way. The destructor deletes the namespaces, and with them the links.
class NetHosts {
 public:
  /// Throws std::runtime_error naming the command that failed and its output (not root, no
  /// iproute2, no veth or tbf in the kernel).
  NetHosts(int count, const std::string& rate) : switch_(prefix() + "sw") {
    try {
      sh("ip netns add " + switch_);
      sh("ip -n " + switch_ + " link add br0 type bridge");
      sh("ip -n " + switch_ + " link set br0 up");
      for (int i = 0; i < count; ++i) {
        const std::string host = prefix() + "h" + std::to_string(i), port = "p" + std::to_string(i);
        hosts_.push_back(host);
        sh("ip netns add " + host);
        sh("ip -n " + host + " link set lo up");
        sh("ip -n " + host + " link add eth0 type veth peer name " + port + " netns " + switch_);
        sh("ip -n " + host + " addr add " + address(i) + "/24 dev eth0");
        sh("ip -n " + host + " link set eth0 up");
        sh("ip -n " + switch_ + " link set " + port + " master br0 up");
        shape(host, "eth0", rate);
        shape(switch_, port, rate);
      }
    } catch (...) {
      remove();
      throw;
    }
  }
  ~NetHosts() { remove(); }
  NetHosts(const NetHosts&) = delete;
  NetHosts& operator=(const NetHosts&) = delete;

  /// The namespace of host `i` (for start_dtwin's `netns`).
  const std::string& name(int i) const { return hosts_.at(i); }
  /// Host `i`'s IPv4 address.
  static std::string address(int i) { return "10.77.0." + std::to_string(i + 1); }

 private:
  static std::string prefix() { return "dtwin" + std::to_string(getpid()); }

  static void sh(const std::string& command) {
    const ProcessResult result = run_process(command);
    if (result.exit_code != 0)
      throw std::runtime_error("test hosts: '" + command + "' failed (exit " +
                               std::to_string(result.exit_code) + "): " + result.output);
  }

  // A token bucket of `rate` on the egress of `device`, with the burst of a wire: 1 ms at the
  // rate (tbf splits larger GSO segments), at least two full frames. A larger bucket lets an
  // idle link's next message through faster than its rate: 128 KB, 10 ms at 100 Mbit/s, made a
  // 295 KB message cross in 15 ms instead of the rate's 24.
  static void shape(const std::string& netns, const std::string& device, const std::string& rate) {
    sh("tc -n " + netns + " qdisc add dev " + device + " root tbf rate " + rate + " burst " +
       std::to_string(wire_burst_bytes(rate)) + " latency 100ms");
  }

  // The bytes a link of `rate` ("100mbit", "1gbit", "500kbit") sends in 1 ms, at least 3028.
  static long wire_burst_bytes(const std::string& rate) {
    std::size_t digits = 0;
    const double number = std::stod(rate, &digits);
    const std::string unit = rate.substr(digits);
    const double scale = unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : unit == "gbit" ? 1e9 : 0;
    if (scale == 0) throw std::runtime_error("test hosts: rate '" + rate + "' is not N[kmg]bit");
    return std::max(3028L, static_cast<long>(number * scale / 8 / 1000));
  }

  void remove() noexcept {
    try {
      for (const std::string& host : hosts_) run_process("ip netns del " + host);
      run_process("ip netns del " + switch_);
    } catch (const std::exception&) {  // popen failed: nothing more can be done here
    }
  }

  std::string switch_;
  std::vector<std::string> hosts_;
};

}  // namespace dtwin::test
