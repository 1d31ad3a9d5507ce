// Ranks started by the launchers users have: torchrun (its --no-python mode runs dtwin itself)
// and Slurm's srun, whose variables (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE, SLURM_JOB_NODELIST) are set here by hand as srun sets them.
#include <netinet/in.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/small_training.hpp"

namespace fs = std::filesystem;
using namespace dtwin::test;

namespace {

// A TCP port that nothing listens on now.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Lines of OUT/loss.csv after its header.
int loss_rows(const std::string& out) {
  std::ifstream in(out + "/loss.csv");
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines - 1;
}

}  // namespace

TEST_CASE("Slurm's variables launch a 2-rank training as torchrun's do", "[threads]") {
  const std::string out = fs::absolute("launch-slurm").string();
  fs::remove_all(out);
  const int port = free_port();
  std::vector<pid_t> tasks;
  for (int task = 0; task < 2; ++task)
    tasks.push_back(
        start_dtwin(train_args(out, 2, 2, 1), out + "-" + std::to_string(task) + ".log",
                    {"SLURM_PROCID=" + std::to_string(task), "SLURM_NTASKS=2",
                     "SLURM_LOCALID=" + std::to_string(task), "SLURM_NTASKS_PER_NODE=2",
                     // Its first host, 127.0.0.1, is rank 0's: MASTER_ADDR comes from here.
                     "SLURM_JOB_NODELIST=127.0.0.[1-2]", "MASTER_PORT=" + std::to_string(port)}));
  for (int task = 0; task < 2; ++task) {
    const auto [exit, output] = finish(tasks[task], out + "-" + std::to_string(task) + ".log", 300);
    INFO(output);
    CHECK(exit.code == 0);
    CHECK_THAT(output, !Catch::Contains("local ranks"));  // a rank, not a launcher of its own
  }
  CHECK(loss_rows(out) == 2);
}

TEST_CASE("torchrun --no-python launches a 2-rank training", "[threads]") {
  const std::string out = fs::absolute("launch-torchrun").string();
  fs::remove_all(out);
  std::vector<std::string> args{"--no-python", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                                "--master_port=" + std::to_string(free_port()), DTWIN_EXE};
  for (const std::string& a : train_args(out, 2, 2, 1)) args.push_back(a);
  const auto [exit, output] = finish(
      start_program(DTWIN_SOURCE_DIR "/.venv/bin/torchrun", args, out + ".log"), out + ".log", 300);
  INFO(output);
  CHECK(exit.code == 0);
  CHECK_THAT(output, !Catch::Contains("local ranks"));
  CHECK(loss_rows(out) == 2);
}
