#include "plan/layout_search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/config_error.hpp"
#include "models/cost/cost_model.hpp"
#include "models/cost/memory_budget.hpp"
#include "models/spec/scenario_loader.hpp"
#include "trace/step_figures.hpp"

namespace dtwin {
namespace {

using Sets = std::vector<std::string>;

std::string set(const std::string& key, const auto& value) {
  if constexpr (std::is_convertible_v<decltype(value), std::string>)
    return key + "=" + std::string(value);
  else
    return key + "=" + std::to_string(value);
}

// The largest tensor-parallel degree: a node's ranks.
int max_tp(const Scenario& base, int gpus) {
  return std::min(gpus, base.cluster.devices_per_node * base.cluster.ranks_per_device);
}

// Calls f(tp, pp, dp) for every split of `gpus` (see search_layouts).
void for_each_split(const Scenario& base, int gpus, const auto& f) {
  for (int tp = 1; tp <= max_tp(base, gpus); tp *= 2) {
    if (gpus % tp != 0) continue;
    for (int pp = 1; pp <= std::min(gpus / tp, base.model.n_layers); ++pp)
      if ((gpus / tp) % pp == 0) f(tp, pp, gpus / tp / pp);
  }
}

std::set<int> data_parallel_sizes(const Scenario& base, int gpus) {
  std::set<int> dps;
  for_each_split(base, gpus, [&](int, int, int dp) { dps.insert(dp); });
  return dps;
}

// The values a searched setting takes: all of `all`, or only the base's when it is kept.
template <typename T>
std::vector<T> values_of(const std::string& key, const std::vector<std::string>& keep,
                         std::vector<T> all, T base) {
  if (std::ranges::find(keep, key) != keep.end()) return {base};
  return all;
}

// Every layout of the request as its `--set` overrides (see search_layouts).
std::vector<Sets> enumerate(const Scenario& base, const PlanRequest& request) {
  const int gpus = request.gpus, global_batch = request.global_batch;
  const LayoutSpec& b = base.layout;
  const auto& keep = request.keep;
  const std::vector<std::string> recomputes =
      values_of<std::string>("recompute", keep, {"none", "selective", "full"},
                             std::string(kRecomputeNames.name(b.recompute)));
  const std::vector<bool> sps =
      values_of<bool>("sequence_parallel", keep, {false, true}, b.sequence_parallel);
  const std::vector<int> zeros = values_of<int>("zero", keep, {0, 1, 2, 3}, b.zero);
  std::vector<Sets> layouts;
  for_each_split(base, gpus, [&](int tp, int pp, int dp) {
    for (int mbs : {1, 2, 4, 8, 16}) {
      if (global_batch % (dp * mbs) != 0) continue;
      const int m = global_batch / (dp * mbs);
      std::vector<Sets> schedules = {{"layout.schedule=1f1b", "layout.virtual_stages=1"}};
      if (pp > 1)
        for (const char* s : {"gpipe", "zb-h1"})
          schedules.push_back({set("layout.schedule", s), "layout.virtual_stages=1"});
      if (pp > 1)
        for (int v = 2; base.model.n_layers % pp == 0 && v <= base.model.n_layers / pp; ++v)
          if ((base.model.n_layers / pp) % v == 0)
            schedules.push_back(
                {"layout.schedule=interleaved-1f1b", set("layout.virtual_stages", v)});
      for (const Sets& schedule : schedules)
        for (int zero : zeros)
          for (const std::string& recompute : recomputes)
            for (bool sp : sps) {
              if ((sp && tp == 1) || (zero > 0 && dp == 1)) continue;
              Sets sets = {set("layout.tp", tp),
                           set("layout.pp", pp),
                           set("layout.dp", dp),
                           set("layout.micro_batch_size", mbs),
                           set("layout.microbatches", m),
                           set("layout.zero", zero),
                           set("layout.recompute", recompute),
                           set("layout.sequence_parallel", sp ? "true" : "false")};
              if (zero == 0) sets.push_back("layout.overlap_param_gather=false");
              if (!sp) sets.push_back("layout.tp_comm_overlap=false");
              sets.insert(sets.end(), schedule.begin(), schedule.end());
              layouts.push_back(std::move(sets));
            }
    }
  });
  return layouts;
}

// The key a loader message names: "--set K=V: KEY: expected ..." or "FILE:L:C: KEY: ...".
std::string reason_of(const std::string& message) {
  const size_t expected = message.find(": expected");
  if (expected == std::string::npos) return message;
  const size_t start = message.rfind(": ", expected - 1);
  return start == std::string::npos ? message.substr(0, expected)
                                    : message.substr(start + 2, expected - start - 2);
}

// The memory proxies (memory_proxy) of the layouts searched so far, shared by the workers: many
// layouts differ only in what the proxy does not depend on.
class ProxyCache {
 public:
  std::shared_ptr<const sched::Schedule> get(const LayoutSpec& l) {
    const auto key = std::tuple(l.schedule, l.pp, l.virtual_stages, l.microbatches,
                                std::min(l.dp, 2), l.dp_sync, l.zero);
    {
      std::lock_guard lock(mutex_);
      if (const auto it = proxies_.find(key); it != proxies_.end()) return it->second;
    }
    auto proxy = std::make_shared<const sched::Schedule>(memory_proxy(l));
    std::lock_guard lock(mutex_);
    return proxies_.emplace(key, std::move(proxy)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<sched::ScheduleKind, int, int, int, int, sched::DpSync, int>,
           std::shared_ptr<const sched::Schedule>>
      proxies_;
};

struct Outcome {
  std::optional<LayoutCandidate> candidate;
  std::string reason, message;
};

Outcome evaluate(const PlanRequest& request, const Sets& base_sets, const Sets& layout,
                 ProxyCache& proxies) {
  Sets sets = request.base.overrides;
  sets.insert(sets.end(), base_sets.begin(), base_sets.end());
  sets.insert(sets.end(), layout.begin(), layout.end());
  LayoutCandidate c;
  try {
    c.scenario = load_scenario(request.base.path, sets);
  } catch (const ConfigError& e) {
    return {std::nullopt, reason_of(e.what()), e.what()};
  }
  if (request.check) try {
      request.check(c.scenario);
    } catch (const UserError& e) {
      return {std::nullopt, "runtime: " + reason_of(e.what()), e.what()};
    }
  const CostModel cost(c.scenario);
  c.estimate = estimate_step(c.scenario, cost, *proxies.get(c.scenario.layout));
  const ClusterSpec& cluster = c.scenario.cluster;
  const double memory = tensor_memory_per_rank(cluster);
  const double peak = *std::max_element(c.estimate.peak_bytes.begin(), c.estimate.peak_bytes.end());
  if (peak > memory)
    return {std::nullopt, "memory",
            fmt::format("{}: peak {:.1f} GiB over the {:.1f} GiB that a rank's tensors may use",
                        fmt::join(layout, " "), peak / (1 << 30), memory / (1 << 30))};
  c.sets = base_sets;
  c.sets.insert(c.sets.end(), layout.begin(), layout.end());
  trace::StepSummary figures;
  figures.step_time_s = c.estimate.step_s;
  trace::fill_step_figures(figures, c.scenario, cost);
  c.tokens_per_s = figures.tokens_per_s;
  return {std::move(c), "", ""};
}

}  // namespace

std::vector<std::string> cluster_sets(const Scenario& base, int gpus) {
  const ClusterSpec& c = base.cluster;
  const int per_node = c.devices_per_node * c.ranks_per_device;
  if (gpus > 0 && gpus % per_node == 0) return {set("cluster.nodes", gpus / per_node)};
  const int devices = c.nodes * c.devices_per_node;
  if (gpus > 0 && gpus % devices == 0) return {set("cluster.ranks_per_device", gpus / devices)};
  throw UserError("--gpus " + std::to_string(gpus) + ": expected a positive multiple of " +
                  std::to_string(per_node) + " (devices_per_node × ranks_per_device) or of " +
                  std::to_string(devices) + " (nodes × devices_per_node)");
}

LayoutSearch search_layouts(const PlanRequest& request,
                            const std::function<void(int, int)>& progress) {
  const Scenario base = request.base.load();
  if (request.global_batch <= 0)
    throw UserError("--global-batch " + std::to_string(request.global_batch) +
                    ": expected a positive number of sequences");
  const Sets base_sets = cluster_sets(base, request.gpus);
  for (const std::string& key : request.keep)
    if (key != "zero" && key != "recompute" && key != "sequence_parallel")
      throw UserError("--keep " + key + ": expected zero, recompute or sequence_parallel");
  const std::vector<Sets> layouts = enumerate(base, request);
  if (layouts.empty()) {
    const std::set<int> dps = data_parallel_sizes(base, request.gpus);
    if (dps.empty())
      throw UserError(
          fmt::format("--gpus {}: expected a count that tp (a power of two up to {}) × pp (up to "
                      "model.n_layers = {}) divides",
                      request.gpus, max_tp(base, request.gpus), base.model.n_layers));
    throw UserError(fmt::format(
        "--global-batch {}: expected a multiple of dp × micro-batch size (1, 2, 4 or 8) for "
        "one of the data-parallel sizes of {} GPUs: {}",
        request.global_batch, request.gpus, fmt::join(dps, ", ")));
  }

  std::vector<Outcome> outcomes(layouts.size());
  ProxyCache proxies;
  std::atomic<size_t> next{0}, done{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < std::max(1u, std::thread::hardware_concurrency()); ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < layouts.size(); ++done)
        outcomes[i] = evaluate(request, base_sets, layouts[i], proxies);
    });
  const int total = static_cast<int>(layouts.size());
  while (done < layouts.size()) {
    progress(static_cast<int>(done), total);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& worker : workers) worker.join();
  progress(total, total);

  LayoutSearch search;
  search.enumerated = total;
  for (Outcome& o : outcomes) {
    if (o.candidate) {
      search.fitting.push_back(std::move(*o.candidate));
      continue;
    }
    ++search.dropped[o.reason];
    search.example.emplace(o.reason, o.message);
  }
  if (search.fitting.empty()) {
    std::string reasons;
    for (const auto& [reason, count] : search.dropped)
      reasons +=
          fmt::format("; {} layouts for {} (e.g. {})", count, reason, search.example.at(reason));
    throw UserError(
        fmt::format("--gpus {} --global-batch {}: expected a layout that loads and "
                    "fits in memory, got none of {}{}",
                    request.gpus, request.global_batch, total, reasons));
  }
  std::stable_sort(search.fitting.begin(), search.fitting.end(),
                   [](const LayoutCandidate& a, const LayoutCandidate& b) {
                     if (a.estimate.step_s != b.estimate.step_s)
                       return a.estimate.step_s < b.estimate.step_s;
                     return std::ranges::max(a.estimate.peak_bytes) <
                            std::ranges::max(b.estimate.peak_bytes);  // as fast, less memory
                   });
  return search;
}

}  // namespace dtwin
