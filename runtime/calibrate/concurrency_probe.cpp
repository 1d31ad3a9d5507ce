#include "runtime/calibrate/concurrency_probe.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "runtime/calibrate/late_receive.hpp"
#include "runtime/calibrate/sample_statistics.hpp"
#include "runtime/calibrate/stage_run.hpp"
#include "runtime/calibrate/step_variation.hpp"
#include "runtime/clock.hpp"
#include "runtime/data/open_training_data.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_device.hpp"
#include "runtime/spawn_self.hpp"
#include "runtime/threads.hpp"

namespace dtwin::rt {
namespace {

constexpr double kBusyMargin = 0.05;    // seconds a probe keeps computing after its window
constexpr double kMinWindow = 1;        // seconds, the shortest measuring window
constexpr double kMaxWindow = 3;        // seconds, the longest (slow builds: sanitizers)
constexpr double kPassesPerWindow = 8;  // the window holds this many of the slowest passes
constexpr int kRounds = 3;              // measurements of each point; the median is kept
constexpr double kNap = 1e-3;           // seconds a probe sleeps after each pass with "wake"
constexpr double kPairTimeout = 60;     // seconds the late-receive pair waits for its peer
constexpr int kMinMessages = 30;        // late-receive messages per point, at least (a long tail)
constexpr int kMaxMessages = 80;        // and at most

// `cpu`, the CPU seconds a probe's other threads ran during its messages, when those are its
// helper threads alone (one intra-op thread: no OpenMP workers among them), else -1.
double helper_cpu_or_unknown(double cpu) {
  return at::get_num_threads() == 1 ? cpu : -1;
}

// A running probe process, its stdin and stdout one socket.
struct Probe {
  int rank = 0;
  pid_t pid = -1;
  FILE* channel = nullptr;
};

Probe start_probe(const std::vector<std::string>& command, int rank, int store_port) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::runtime_error("compute probe: cannot make a socket pair");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], 0);
  posix_spawn_file_actions_adddup2(&actions, ends[1], 1);
  std::vector<std::string> args = command;
  args.insert(args.end(),
              {"--rank", std::to_string(rank), "--store-port", std::to_string(store_port)});
  Probe probe{rank};
  const auto release = [&] {
    posix_spawn_file_actions_destroy(&actions);
    close(ends[1]);
  };
  try {
    probe.pid = spawn_self(args, {}, &actions, "the compute probe of rank " + std::to_string(rank));
  } catch (...) {
    release();
    close(ends[0]);
    throw;
  }
  release();
  probe.channel = fdopen(ends[0], "r+");
  return probe;
}

// Closes the probe's channel (it then exits) and waits for it; throws unless it exited 0.
void finish(Probe& probe) {
  if (probe.channel) fclose(probe.channel);
  probe.channel = nullptr;
  int status = 0;
  waitpid(probe.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(
        fmt::format("compute probe of rank {} failed (status {})", probe.rank, status));
}

// The probe's next protocol line without its "probe " prefix; other lines it writes go to this
// process's stdout.
std::string read_line(Probe& probe) {
  const std::string prefix = "probe ";
  char line[512];
  while (fgets(line, sizeof line, probe.channel)) {
    if (std::string(line).starts_with(prefix)) return line + prefix.size();
    std::fputs(line, stdout);
  }
  finish(probe);
  throw std::runtime_error(fmt::format("compute probe of rank {} closed its output", probe.rank));
}

// What a probe reports of a measurement: seconds per pass (or per wake-up, or per late receive)
// and, for "go", the log-seconds' squares of its F and B about their means in the window; for
// "send", its helper threads' CPU seconds per message (negative: not attributable).
struct Reading {
  double seconds = 0;
  LogSquares squares;
  double helper_cpu = 0;
};

// The probes, started once and reused for every measurement; killed if still running at the end.
class Probes {
 public:
  Probes(const std::vector<std::string>& command, int count, int store_port) {
    for (int r = 0; r < count; ++r) probes_.push_back(start_probe(command, r, store_port));
    for (Probe& p : probes_)
      if (read_line(p) != "ready\n")
        throw std::runtime_error(fmt::format("compute probe of rank {}: not ready", p.rank));
  }
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;
  ~Probes() {
    for (Probe& p : probes_)
      if (p.channel) {
        kill(p.pid, SIGKILL);
        fclose(p.channel);
        waitpid(p.pid, nullptr, 0);
      }
  }

  // Sends `command` ("go" or "wake") with `window_s` to the probes `which`.
  void start(const std::vector<int>& which, double window_s, const std::string& command = "go") {
    for (int i : which) send(i, fmt::format("{} {}", command, window_s));
  }

  // Sends the protocol line `line` to probe `i`.
  void send(int i, const std::string& line) {
    std::fputs((line + "\n").c_str(), probes_[i].channel);
    std::fflush(probes_[i].channel);
  }

  // Starts the probes `which` at once for `window_s`; returns each one's seconds per pass and
  // the spread of its F and B in the window.
  std::vector<Reading> passes(const std::vector<int>& which, double window_s) {
    start(which, window_s);
    return collect(which);
  }

  // Ends every probe; throws if one failed.
  void finish_all() {
    for (Probe& p : probes_) finish(p);
  }

  // Waits for the started probes `which`; returns each one's report "COUNT SECONDS [SQUARES DF]"
  // ("go", "wake", "recv") or "COUNT 0 HELPER_CPU" ("send"): SECONDS and HELPER_CPU over
  // COUNT (per pass, wake-up or message) and, for "go", the squares.
  std::vector<Reading> collect(const std::vector<int>& which) {
    std::vector<Reading> out;
    for (int i : which) {
      int count = 0;
      Reading r;
      double third = 0;
      const std::string line = read_line(probes_[i]);
      const int fields =
          std::sscanf(line.c_str(), "%d %lf %lf %d", &count, &r.seconds, &third, &r.squares.df);
      if (fields < 2 || count < 1 || (fields == 4 && r.squares.df < 0))
        throw std::runtime_error(
            fmt::format("compute probe of rank {} wrote '{}'", probes_[i].rank, line));
      if (fields == 4) r.squares.sum = third;  // sscanf left df at 0 otherwise
      if (fields == 3) r.helper_cpu = third < 0 ? -1 : third / count;
      r.seconds /= count;
      out.push_back(r);
    }
    return out;
  }

 private:
  std::vector<Probe> probes_;
};

}  // namespace

int run_compute_probe(const Scenario& scenario, int rank, const std::string& data_dir,
                      int store_port) {
  configure_threads(scenario.runtime.threads, scenario.world_size());
  const CostModel cost(scenario);
  const std::unique_ptr<TrainingData> owned = open_training_data(scenario, data_dir);
  const TrainingData& data = *owned;
  // On a GPU the probes share it, as the ranks they stand for do (GPU rank mod the visible ones).
  const torch::Device device =
      scenario.runtime.device == RuntimeDevice::Cuda
          ? use_gpu(gpu_of_local_rank(Backend::Gloo, rank, rank + 1, visible_gpus()))
          : torch::Device(torch::kCPU);
  std::vector<std::unique_ptr<StageRun>> runs;
  for (int s : stages_of_rank(scenario, rank))
    runs.push_back(std::make_unique<StageRun>(scenario, cost.stage(s), data,
                                              nn::TensorParallelGroup{}, device));
  const auto pass = [&] {
    for (const auto& run : runs) run->backward(run->forward());
    synchronize(device);  // a pass ends when the device ran it
  };
  // A pass with each F's and B's seconds, keyed 2 x (the run's index) + (0 for F, 1 for B); on a
  // GPU the pass is not split, as a synchronisation between F and B would change it.
  const bool split = device.is_cpu();
  const auto timed_pass = [&](std::map<int, std::vector<double>>& seconds) {
    if (!split) return pass();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const double start = wall_seconds();
      torch::Tensor out = runs[i]->forward();
      const double forward_end = wall_seconds();
      runs[i]->backward(out);
      const int key = 2 * static_cast<int>(i);
      seconds[key].push_back(forward_end - start);
      seconds[key + 1].push_back(wall_seconds() - forward_end);
    }
  };
  const auto forwards = [&] {
    for (const auto& run : runs) run->forward();
    synchronize(device);
  };
  for (int i = 0; i < 2; ++i) pass();
  c10::intrusive_ptr<c10d::Backend> pair;  // with the other end of the late receive, once asked
  const auto connect = [&] {
    if (!pair)
      pair = make_group(Backend::Gloo, tcp_store("127.0.0.1", store_port, false, kPairTimeout),
                        "late-receive", rank, 2, kPairTimeout, GlooBinding{"127.0.0.1", {}});
    return pair;
  };
  std::cout << "probe ready" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    double window_s = 0;
    int messages = 0, computes = 0;
    if (std::sscanf(line.c_str(), "send %d %d", &messages, &computes) == 2) {
      const double cpu = send_late_receive_messages(*connect(), messages, cost.boundary_bytes(),
                                                    computes ? Activity(pass) : Activity([] {}));
      std::cout << "probe " << messages << " 0 " << fmt::format("{}", helper_cpu_or_unknown(cpu))
                << std::endl;
      continue;
    }
    if (std::sscanf(line.c_str(), "recv %d", &messages) == 1) {
      const double mean =
          receive_late_messages(*connect(), messages, cost.boundary_bytes(), forwards);
      std::cout << "probe " << messages << " " << fmt::format("{}", mean * messages) << std::endl;
      continue;
    }
    if (std::sscanf(line.c_str(), "wake %lf", &window_s) == 1) {
      int naps = 0;
      double late = 0;  // seconds woken after each nap's end, summed
      for (const double start = wall_seconds(); wall_seconds() < start + window_s; ++naps) {
        pass();
        const double asleep = wall_seconds();
        std::this_thread::sleep_for(std::chrono::duration<double>(kNap));
        late += wall_seconds() - asleep - kNap;
      }
      std::cout << "probe " << naps << " " << fmt::format("{}", late) << std::endl;
      continue;
    }
    if (std::sscanf(line.c_str(), "go %lf", &window_s) != 1)
      throw std::runtime_error(
          "compute probe: expected 'go SECONDS', 'wake SECONDS', 'send N 0|1' or 'recv N', got '" +
          line + "'");
    const double start = wall_seconds();
    int passes = 0;
    double last_in_window = 0;
    std::map<int, std::vector<double>> in_window;  // timed_pass's seconds of the passes counted
    for (double now = start; now < start + window_s + kBusyMargin;) {
      std::map<int, std::vector<double>> seconds;
      timed_pass(seconds);
      now = wall_seconds();
      // The passes that ended in the window; at least the first, which a machine loaded beyond
      // what the window allows for (8 passes timed alone) may end after it: 0 passes would say
      // nothing (a CI run, under ASan beside an 8-process test, once had one probe's first
      // pass outlast a window of at least 1 s).
      if (now - start <= window_s || passes == 0) {
        ++passes;
        last_in_window = now - start;
        for (const auto& [key, values] : seconds)
          in_window[key].insert(in_window[key].end(), values.begin(), values.end());
      }
    }
    const LogSquares squares = within_group_log_squares(in_window);
    std::cout << "probe " << passes << " "
              << fmt::format("{} {} {}", last_in_window, squares.sum, squares.df) << std::endl;
  }
  return 0;
}

std::vector<int> stages_of_rank(const Scenario& scenario, int rank) {
  const sched::Layout layout = schedule_layout(scenario);
  const int pipeline_rank = layout.pipeline_rank(layout.group_of(rank));
  std::vector<int> stages;
  for (int v = 0; v < layout.virtual_stages; ++v)
    stages.push_back(layout.stage_of(pipeline_rank, v));
  return stages;
}

ConcurrencyFigures measure_concurrency(const Scenario& scenario,
                                       const std::vector<StageSeconds>& stages,
                                       const std::vector<std::string>& probe_command) {
  const int ranks = scenario.cluster.ranks_per_device;
  if (ranks < 2) return {{1}, {}, {}, {}};
  // A pass runs F and B of each of the rank's stages; ranks of one pipeline rank share a pass.
  const auto pipeline_rank = [&](int rank) {
    return rank / scenario.layout.tp / scenario.layout.dp;
  };
  double slowest = 0;
  for (int r = 0; r < ranks; ++r) {
    double pass = 0;
    for (int s : stages_of_rank(scenario, r)) pass += stages.at(s).forward + stages.at(s).backward;
    slowest = std::max(slowest, pass);
  }
  const double window_s = std::clamp(kPassesPerWindow * slowest, kMinWindow, kMaxWindow);
  const auto store = tcp_store("127.0.0.1", 0, true, kPairTimeout);  // the late-receive pair's
  Probes probes(probe_command, ranks, store->getPort());
  // rounds[k - 2][r]: round r's slowdown with k probes busy
  std::vector<std::vector<double>> rounds(ranks - 1);
  std::vector<LogSquares> spread(ranks);  // [k - 1]: the F and B spread with k busy, pooled
  for (int r = 0; r < kRounds; ++r) {
    std::map<int, double> alone;  // pipeline rank -> seconds per pass alone
    for (int p = 0; p < ranks; ++p)
      if (!alone.contains(pipeline_rank(p))) {  // probe p alone; the others wait
        const Reading reading = probes.passes({p}, window_s).front();
        alone[pipeline_rank(p)] = reading.seconds;
        spread[0] += reading.squares;
      }
    std::vector<int> busy{0};
    for (int k = 2; k <= ranks; ++k) {
      busy.push_back(k - 1);
      const std::vector<Reading> readings = probes.passes(busy, window_s);
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        sum += readings[p].seconds / alone.at(pipeline_rank(p));
        spread[k - 1] += readings[p].squares;
      }
      rounds[k - 2].push_back(sum / k);
    }
  }
  ConcurrencyFigures figures{{1}, {}, {}, {}};
  for (const std::vector<double>& slowdowns : rounds) figures.slowdown.push_back(median(slowdowns));
  if (std::ranges::all_of(spread, [](const LogSquares& s) { return s.df > 0; }))
    for (const LogSquares& s : spread)
      figures.variation.push_back(lognormal_variation(s.sum / s.df));
  // Probe 0 computes and naps while probes 1 .. j compute.
  std::vector<int> others;
  for (int j = 0; j < ranks; ++j) {
    if (j > 0) others.push_back(j);
    probes.start({0}, window_s, "wake");
    probes.start(others, window_s);
    figures.wake_delay.push_back(probes.collect({0}).front().seconds);
    probes.collect(others);
  }
  // Probe 0 computes its forwards and receives late from probe 1, which computes its passes
  // (from j = 1) while probes 2 .. j compute too.
  double sender_pass = 0;
  for (int s : stages_of_rank(scenario, 1))
    sender_pass += stages.at(s).forward + stages.at(s).backward;
  const int messages =
      std::clamp(static_cast<int>(2 * window_s / sender_pass), kMinMessages, kMaxMessages);
  std::vector<int> hogs;
  // Both ends' helper CPU per message, from j = 1 (the sender computing): twice the sender's.
  // The receiver's helper threads ran about as long as its late receive lasted (2.6 and 3.7 ms
  // per message at j = 1 and 2 on the quickstart, against 0.24 and 0.31 ms at the sender),
  // which training's ranks do not show (0.3-0.5 ms per message and end).
  std::vector<double> helper_cpu;
  for (int j = 0; j < ranks; ++j) {
    if (j > 1) hogs.push_back(j);
    probes.send(0, fmt::format("recv {}", messages));
    probes.send(1, fmt::format("send {} {}", messages, j > 0 ? 1 : 0));
    probes.start(hogs, 1.2 * messages * sender_pass);
    figures.late_receive.push_back(probes.collect({0}).front().seconds);
    const Reading sent = probes.collect({1}).front();
    if (j > 0 && sent.helper_cpu >= 0) helper_cpu.push_back(2 * sent.helper_cpu);
    probes.collect(hogs);
  }
  if (!helper_cpu.empty())
    figures.p2p_cpu_s_per_byte = mean(helper_cpu) / CostModel(scenario).boundary_bytes();
  probes.finish_all();
  return figures;
}

}  // namespace dtwin::rt
