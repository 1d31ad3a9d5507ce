// The noise figures `dtwin run` prints beside its error (cli/machine_load.hpp).
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <ctime>

#include "cli/machine_load.hpp"

using namespace dtwin;

TEST_CASE("others' CPU share leaves out this process and its children") {
  // The machine: 10 s of capacity, 6 busy, of which this process and its children took 4: others
  // 2 of 10.
  const CpuSample before{100, 400, 50}, after{106, 410, 54};
  CHECK(others_cpu_share(before, after) == Approx(0.2));
  CHECK(others_cpu_share(before, before) == 0);
  // A child that burns CPU is not counted as another process.
  const CpuSample start = sample_cpu();
  REQUIRE(start.total_s > 0);
  if (fork() == 0) {  // 0.3 s of its own CPU time, however long the busy machine takes
    volatile double x = 0;
    while (std::clock() < CLOCKS_PER_SEC * 3 / 10) x = x + 1;
    _exit(0);
  }
  int status = 0;
  wait(&status);
  const CpuSample end = sample_cpu();
  CHECK(end.own_s - start.own_s >= 0.29);
  CHECK(others_cpu_share(start, end) < (end.busy_s - start.busy_s) / (end.total_s - start.total_s));
}

TEST_CASE("an error within two standard deviations of the measured steps is said to be noise") {
  const std::string within = noise_report(1.0, 0.1, -0.15, 0.05);
  CHECK_THAT(within, Catch::Contains("10.0% of their mean") &&
                         Catch::Contains("(-15.0%) is within") && !Catch::Contains("caution"));
  const std::string outside = noise_report(1.0, 0.02, 0.08, 0.37);
  CHECK_THAT(outside, Catch::Contains("is outside") && Catch::Contains("used 37%") &&
                          Catch::Contains("caution: other processes used 37% of the machine's "
                                          "CPU while training"));
  CHECK(busy_machine_caution(0.1, "profiling").empty());
  CHECK_THAT(busy_machine_caution(0.5, "profiling"),
             Catch::Contains("50%") && Catch::Contains("while profiling"));
}

TEST_CASE("this process's own CPU time is not another process's") {
  const CpuSample start = sample_cpu();
  const std::clock_t until = std::clock() + CLOCKS_PER_SEC * 3 / 10;  // 0.3 s of this process's
  volatile double x = 0;
  while (std::clock() < until) x = x + 1;
  const CpuSample end = sample_cpu();
  CHECK(end.own_s - start.own_s >= 0.29);
  CHECK(others_cpu_share(start, end) < (end.busy_s - start.busy_s) / (end.total_s - start.total_s));
}
