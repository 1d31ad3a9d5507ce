// The wire bytes of Gloo's collectives (models/cost/collective_bytes.hpp): a worked example by
// hand, and the closed form against a walk of gloo/allreduce.cc's ring loops, segment by segment.
#include <catch2/catch.hpp>

#include <algorithm>

#include "models/cost/collective_bytes.hpp"

using namespace dtwin;

namespace {

// The segments gloo's ring() sends, iteration by iteration: the reduce-scatter's offsets
// ((r+1)·perRank + i)·segment and the all-gather's (r·perRank + i)·segment, modulo the
// segments' span, each clipped to the buffer, for i < numSegments − perRank.
int64_t walked_ring_sent(int64_t bytes, int64_t element, int64_t n, int64_t r,
                         int64_t max_segment) {
  auto round_up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  const int64_t max_bytes = element * std::max<int64_t>(1, max_segment / element);
  const int64_t segments = round_up(std::max((bytes + max_bytes - 1) / max_bytes, 2 * n), n);
  const int64_t per_rank = segments / n;
  const int64_t segment = round_up((bytes + segments - 1) / segments, element);
  int64_t sent = 0;
  for (int64_t first : {r + 1, r})
    for (int64_t i = 0; i < segments - per_rank; ++i) {
      const int64_t offset = ((first * per_rank + i) * segment) % (segments * segment);
      sent += std::max<int64_t>(0, std::min(segment, bytes - offset));
    }
  return sent;
}

}  // namespace

TEST_CASE("a ring all-reduce of 10 floats over 4 members, by hand") {
  // 8 segments (2 per member, the minimum) of 8 bytes: chunks of 16, 16, 8 and 0 bytes.
  // Member r sends all chunks but r and r-1 once each phase: 80 - |r| - |r-1|.
  CHECK(ring_allreduce_bytes(40, 4, 4, 0).sent == 80 - 16 - 0);
  CHECK(ring_allreduce_bytes(40, 4, 4, 1).sent == 80 - 16 - 16);
  CHECK(ring_allreduce_bytes(40, 4, 4, 2).sent == 80 - 8 - 16);
  CHECK(ring_allreduce_bytes(40, 4, 4, 3).sent == 80 - 0 - 8);
  CHECK(ring_allreduce_bytes(40, 4, 4, 3).received == ring_allreduce_bytes(40, 4, 4, 0).sent);
  CHECK(ring_allreduce_bytes(40, 4, 1, 0).sent == 0);
  CHECK_THROWS_AS(ring_allreduce_bytes(42, 4, 4, 0), std::invalid_argument);
}

TEST_CASE(
    "the ring's closed form equals a walk of gloo's loops, and the members send 2(n-1) buffers") {
  const int64_t bytes = GENERATE(4, 40, 4000, 1'048'576, 5'813'016, 437'929'992);
  const int n = GENERATE(2, 3, 4, 8);
  const int64_t max_segment = GENERATE(int64_t{1} << 20, 1000);
  CAPTURE(bytes, n, max_segment);
  int64_t sent = 0, received = 0;
  for (int r = 0; r < n; ++r) {
    const WireBytes mine = ring_allreduce_bytes(bytes, 4, n, r, max_segment);
    CHECK(mine.sent == walked_ring_sent(bytes, 4, n, r, max_segment));
    CHECK(mine.received == walked_ring_sent(bytes, 4, n, (r + 1) % n, max_segment));
    sent += mine.sent;
    received += mine.received;
  }
  CHECK(sent == 2 * (n - 1) * bytes);
  CHECK(received == sent);
}

TEST_CASE("gather to and scatter from the root: each other member's buffer once") {
  CHECK(gather_bytes(100, 4, 0).received == 300);
  CHECK(gather_bytes(100, 4, 0).sent == 0);
  CHECK(gather_bytes(100, 4, 2).sent == 100);
  CHECK(scatter_bytes(100, 4, 0).sent == 300);
  CHECK(scatter_bytes(100, 4, 3).received == 100);
  CHECK(scatter_bytes(100, 1, 0).sent == 0);
}
