#include "models/cost/collective_bytes.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtwin {
namespace {

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

WireBytes ring_allreduce_bytes(int64_t bytes, int64_t element_bytes, int members, int member,
                               int64_t max_segment_bytes) {
  if (element_bytes <= 0 || bytes % element_bytes != 0)
    throw std::invalid_argument("ring_allreduce_bytes: " + std::to_string(bytes) +
                                " bytes are not whole elements of " +
                                std::to_string(element_bytes));
  if (members <= 1 || bytes == 0) return {};
  const int64_t n = members;
  const int64_t max_segment =
      element_bytes * std::max<int64_t>(1, max_segment_bytes / element_bytes);
  const int64_t segments = round_up(std::max((bytes + max_segment - 1) / max_segment, 2 * n), n);
  const int64_t segment = round_up((bytes + segments - 1) / segments, element_bytes);
  const int64_t chunk_capacity = segment * (segments / n);
  auto chunk = [&](int64_t c) {
    c = (c % n + n) % n;
    return std::clamp<int64_t>(bytes - c * chunk_capacity, 0, chunk_capacity);
  };
  return {2 * bytes - chunk(member) - chunk(member - 1),
          2 * bytes - chunk(member + 1) - chunk(member)};
}

WireBytes gather_bytes(int64_t bytes, int members, int member, int root) {
  if (members <= 1) return {};
  return member == root ? WireBytes{0, (members - 1) * bytes} : WireBytes{bytes, 0};
}

WireBytes scatter_bytes(int64_t bytes, int members, int member, int root) {
  if (members <= 1) return {};
  return member == root ? WireBytes{(members - 1) * bytes, 0} : WireBytes{0, bytes};
}

}  // namespace dtwin
