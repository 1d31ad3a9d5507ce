#include "runtime/interface_counters.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dtwin::rt {

std::optional<std::string> interface_with_address(const std::string& address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (const ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = family == AF_INET6
                          ? static_cast<const void*>(
                                &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr)
                          : static_cast<const void*>(
                                &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr);
    inet_ntop(family, raw, text, sizeof text);
    if (address == text) found = i->ifa_name;
  }
  freeifaddrs(list);
  return found;
}

InterfaceCounters read_interface_counters(const std::string& interface) {
  const std::string path = "/proc/net/dev";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the interface counters");
  // Two header lines, then "  name: rx_bytes rx_packets errs drop fifo frame compressed
  // multicast tx_bytes tx_packets ...".
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream name_part(line.substr(0, colon));
    std::string name;
    name_part >> name;
    if (name != interface) continue;
    std::istringstream fields(line.substr(colon + 1));
    InterfaceCounters c;
    int64_t skip = 0;
    fields >> c.received_bytes >> c.received_packets;
    for (int i = 0; i < 6; ++i) fields >> skip;
    fields >> c.sent_bytes >> c.sent_packets;
    if (!fields) throw std::runtime_error(path + ": malformed line for '" + interface + "'");
    return c;
  }
  throw std::runtime_error(path + ": no interface '" + interface + "'");
}

}  // namespace dtwin::rt
