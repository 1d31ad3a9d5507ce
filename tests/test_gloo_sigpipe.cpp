// A process holding a Gloo group survives writing to a socket whose peer is gone: the write
// fails with EPIPE (which Gloo turns into an error naming the peer) instead of SIGPIPE ending it.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>

#include "runtime/process_groups.hpp"

TEST_CASE("a write to a lost peer's socket fails with EPIPE in a process holding a Gloo group",
          "[torch]") {
  // The barrier before the members let their group go: a member whose connectFullMesh had
  // returned, destroying its group at once, closed its pair while the other still read the
  // handshake ("Connection closed by peer"; 3 of 7 fast-tier runs).
  dtwin::rt::run_as_thread_group(
      2, "sigpipe",
      [](int, const c10::intrusive_ptr<c10d::Backend>& group) { group->barrier()->wait(); });
  int ends[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
  close(ends[1]);
  const char byte = 1;
  const ssize_t written = write(ends[0], &byte, 1);  // SIGPIPE's default would end the test here
  const int error = errno;
  close(ends[0]);
  CHECK(written == -1);
  CHECK(error == EPIPE);
}
