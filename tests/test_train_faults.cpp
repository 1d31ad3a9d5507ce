// Faults injected into real training runs (real processes, Gloo over loopback, the real corpus):
// a rank killed during an all-reduce or a checkpoint write, a truncated or corrupt checkpoint, a
// full disk, a taken store port, a rank that never starts, SIGINT and SIGTERM to the launcher.
// Each asserts the exit code, the message naming the cause, and the files left behind.
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tests/background_process.hpp"
#include "tests/small_training.hpp"

namespace fs = std::filesystem;
using namespace dtwin::test;

namespace {

// The step numbers of OUT/loss.csv, in file order.
std::vector<int> logged_steps(const std::string& out) {
  std::istringstream csv(read_all(out + "/loss.csv"));
  std::vector<int> steps;
  std::string row;
  std::getline(csv, row);
  while (std::getline(csv, row)) steps.push_back(std::stoi(row));
  return steps;
}

// Files under `dir` whose name says they are temporary (".NAME.tmp.PID.N").
std::vector<std::string> temporary_files(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(entry.path().string());
  return found;
}

// A TCP socket listening on a free port of every IPv4 address; returns {fd, port}.
std::pair<int, int> listen_on_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0)
    FAIL("cannot listen on a free port");
  return {fd, ntohs(address.sin_port)};
}

// Waits until something accepts connections on 127.0.0.1:`port`; false after `limit_s`.
bool wait_until_listening(int port, double limit_s) {
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < limit_s) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool up = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST_CASE("a rank killed during ALLREDUCE stops the others within timeout_s + 5 s, naming it",
          "[threads]") {
  const std::string out = "fault-allreduce", log = out + ".log";
  fs::remove_all(out);
  const pid_t launcher =
      start_dtwin(train_args(out, 1000, 2, 1), log, {"DTWIN_FAULT=1:ALLREDUCE:2"});
  REQUIRE(wait_for_text(log, "launcher: rank 1 was killed by signal 9", 120));
  const auto [exit, output] = finish(launcher, log, kTimeout + 30);
  INFO(output);
  CAPTURE(exit.code, exit.seconds);
  CHECK(stopped_in_time(exit));
  CHECK_THAT(output, Catch::Contains("rank 0: lost rank 1 during 0ALLREDUCE"));
  CHECK_THAT(output, Catch::Contains("launcher: training failed: rank 1 died"));
  // Step 1 finished; step 2 did not, and the run wrote no summary of a run that did not end.
  CHECK(logged_steps(out) == std::vector<int>{1});
  CHECK_FALSE(fs::exists(out + "/measured.summary.json"));
}

TEST_CASE("a rank killed while writing a checkpoint leaves it incomplete, and --resume skips it") {
  const std::string out = "fault-checkpoint";
  fs::remove_all(out);
  // Rank 0 (stage 0) dies right after stage-0.pt of step 4 is written.
  auto [killed, output] =
      run(train_args(out, 6, 1, 3, 2), out + ".log", {"DTWIN_FAULT=0:checkpoint:4"});
  {
    INFO(output);
    CHECK(killed.code == 1);
    CHECK_THAT(output, Catch::Contains("launcher: rank 0 was killed by signal 9"));
    CHECK_THAT(output, Catch::Contains("lost rank 0"));
  }
  const std::string step4 = out + "/checkpoints/step-4";
  CHECK(fs::exists(step4 + "/stage-0.pt"));
  CHECK_FALSE(fs::exists(step4 + "/stage-0.manifest.json"));
  for (int s = 0; s < 3; ++s)
    CHECK(fs::exists(out + "/checkpoints/step-2/stage-" + std::to_string(s) + ".manifest.json"));
  CHECK(temporary_files(out).empty());

  auto [resumed, resume_output] = run(train_args(out, 6, 1, 3, 2, true), out + "-resume.log");
  INFO(resume_output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resume_output,
             Catch::Contains("resume: skipping " + step4 +
                             "/stage-0.manifest.json: missing (the write was interrupted)"));
  CHECK_THAT(resume_output,
             Catch::Contains("resume: from " + out + "/checkpoints/step-2 (2 steps done)"));
  CHECK_THAT(resume_output, Catch::Contains("step 3/6"));
  CHECK_THAT(resume_output, !Catch::Contains("step 2/6"));
  CHECK(logged_steps(out) == std::vector<int>{1, 2, 3, 4, 5, 6});
  CHECK(fs::exists(out + "/checkpoints/step-6/stage-2.manifest.json"));
}

TEST_CASE("a truncated and a corrupt checkpoint are named and skipped by --resume") {
  const std::string out = "fault-corrupt";
  fs::remove_all(out);
  auto [trained, output] = run(train_args(out, 6, 1, 3, 2), out + ".log");
  INFO(output);
  REQUIRE(trained.code == 0);
  // step-6: the optimizer state of stage 1 cut in half; step-4: one byte of stage 2 flipped.
  const std::string truncated = out + "/checkpoints/step-6/stage-1.optim.pt";
  const auto full_size = fs::file_size(truncated);
  fs::resize_file(truncated, full_size / 2);
  const std::string corrupt = out + "/checkpoints/step-4/stage-2.pt";
  {
    std::fstream file(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(fs::file_size(corrupt) / 2));
    const char byte = static_cast<char>(file.peek() ^ 0x5a);
    file.seekp(static_cast<std::streamoff>(fs::file_size(corrupt) / 2));
    file.put(byte);
  }
  auto [resumed, resume_output] = run(train_args(out, 7, 1, 3, 2, true), out + "-resume.log");
  INFO(resume_output);
  CHECK(resumed.code == 0);
  CHECK_THAT(
      resume_output,
      Catch::Contains("resume: skipping " + truncated + ": " + std::to_string(full_size / 2) +
                      " bytes, the manifest says " + std::to_string(full_size) + " (truncated?)"));
  CHECK_THAT(resume_output, Catch::Contains("resume: skipping " + corrupt +
                                            ": CRC-32 differs from the manifest's (corrupt)"));
  CHECK_THAT(resume_output,
             Catch::Contains("resume: from " + out + "/checkpoints/step-2 (2 steps done)"));
  CHECK_THAT(resume_output, Catch::Contains("step 3/7"));
  CHECK(logged_steps(out) == std::vector<int>{1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("a full output disk stops the run naming the file and leaves no partial checkpoint") {
  const std::string out = "fault-full-disk";
  fs::remove_all(out);
  fs::create_directories(out);
  // 1 MiB of tmpfs holds the logs but not one stage's checkpoint (about 2.5 MB for stage 0).
  if (mount("tmpfs", out.c_str(), "tmpfs", 0, "size=1m") != 0)
    FAIL("cannot mount a tmpfs on " + out + " (needs root, as CI runs): " + std::strerror(errno));
  struct Unmount {
    std::string path;
    ~Unmount() { umount(path.c_str()); }
  } unmount{out};
  auto [exit, output] = run(train_args(out, 2, 1, 3, 1), out + ".log");
  INFO(output);
  CHECK(exit.code == 1);
  CHECK_THAT(output, Catch::Contains(out + "/checkpoints/step-1/stage-0.pt: cannot write: "
                                           "No space left on device"));
  CHECK_THAT(output, Catch::Contains("launcher: training failed"));
  CHECK_FALSE(fs::exists(out + "/checkpoints/step-1/stage-0.manifest.json"));
  CHECK_FALSE(fs::exists(out + "/measured.summary.json"));
  CHECK(temporary_files(out).empty());
}

TEST_CASE("a taken store port (MASTER_PORT) stops the launcher before any rank starts",
          "[threads]") {
  const std::string out = "fault-port";
  fs::remove_all(out);
  const auto [fd, port] = listen_on_free_port();
  auto [exit, output] =
      run(train_args(out, 2, 1, 3), out + ".log", {"MASTER_PORT=" + std::to_string(port)}, 60);
  close(fd);
  INFO(output);
  CHECK(exit.code == 1);
  CHECK_THAT(output, Catch::Contains("launcher: cannot host the rendezvous store on 127.0.0.1:" +
                                     std::to_string(port) + " (MASTER_PORT)"));
  CHECK_THAT(output, !Catch::Contains("step 1/"));
  CHECK_FALSE(fs::exists(out + "/loss.csv"));
}

TEST_CASE("a rank that never starts makes the started ones stop within timeout_s + 5 s",
          "[threads]") {
  // Ranks 0 and 1 of a world of 3 started by hand, as torchrun or Slurm would; rank 2 never is.
  const std::string out = "fault-never-started";
  fs::remove_all(out);
  const auto [fd, port] = listen_on_free_port();
  close(fd);  // a free port for rank 0's store
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.push_back(start_dtwin(
        train_args(out, 2, 1, 3), out + "-" + std::to_string(rank) + ".log",
        {"RANK=" + std::to_string(rank), "WORLD_SIZE=3", "LOCAL_RANK=" + std::to_string(rank),
         "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)}));
  // The rendezvous starts when rank 0's store listens: the clock starts there.
  REQUIRE(wait_until_listening(port, 120));
  for (int rank = 0; rank < 2; ++rank) {
    const auto [exit, output] =
        finish(ranks[rank], out + "-" + std::to_string(rank) + ".log", kTimeout + 30);
    INFO(output);
    CAPTURE(exit.code, exit.seconds);
    CHECK(stopped_in_time(exit));
    CHECK_THAT(output, Catch::Contains("rank " + std::to_string(rank) +
                                       ": lost rank 2 (never started) during the rendezvous"));
  }
  CHECK_FALSE(fs::exists(out + "/loss.csv"));
}

TEST_CASE("SIGINT or SIGTERM to the launcher stops every rank with exit code 1", "[threads]") {
  const int signal = GENERATE(SIGINT, SIGTERM);
  const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  const std::string out = "fault-" + name, log = out + ".log";
  fs::remove_all(out);
  const pid_t launcher = start_dtwin(train_args(out, 1000, 1, 3), log);
  REQUIRE(wait_for_text(log, "step 2/", 120));
  const std::vector<pid_t> ranks = children_of(launcher);
  REQUIRE(ranks.size() == 3);
  kill(launcher, signal);
  const auto [exit, output] = finish(launcher, log, kTimeout + 30);
  INFO(output);
  CAPTURE(exit.code, exit.seconds);
  CHECK(stopped_in_time(exit));
  CHECK_THAT(output, Catch::Contains("launcher: received " + name + "; stopping the ranks"));
  for (int rank = 0; rank < 3; ++rank)
    CHECK_THAT(output,
               Catch::Contains("error: rank " + std::to_string(rank) + ": stopped by SIGTERM"));
  CHECK_THAT(output, Catch::Contains("launcher: training stopped by " + name));
  for (pid_t rank : ranks) CHECK((process_state(rank) == 0 || process_state(rank) == 'Z'));
  CHECK_FALSE(fs::exists(out + "/measured.summary.json"));
}
