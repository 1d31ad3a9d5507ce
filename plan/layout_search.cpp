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

#include "base/user_error.hpp"
#include "models/cost/cost_model.hpp"
#include "models/cost/memory_budget.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "models/spec/schema.hpp"
#include "models/spec/validate.hpp"
#include "trace/step_figures.hpp"

namespace dtwin {
namespace {

/// A layout as the schema's keys and typed values, in the order they are applied.
using Settings = std::vector<std::pair<std::string, FieldValue>>;

/// `settings` applied to `scenario` through the schema (a key outside it is a bug).
void apply_settings(const Settings& settings, Scenario& scenario) {
  for (const auto& [key, value] : settings) {
    const FieldSpec* field = find_field(key);
    if (field == nullptr) throw std::logic_error("layout search: no scenario key " + key);
    field->set(scenario, value);
  }
}

/// `settings` as `--set KEY=VALUE` texts.
std::vector<std::string> as_sets(const Settings& settings) {
  std::vector<std::string> sets;
  for (const auto& [key, value] : settings) sets.push_back(key + "=" + render_value(value));
  return sets;
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

FieldValue number(int value) {
  return static_cast<long long>(value);
}

bool kept(const std::vector<std::string>& keep, const std::string& key) {
  return std::ranges::find(keep, key) != keep.end();
}

// The context-parallel degrees to search on `rest` = dp · cp GPUs of a tp · pp split: the base's
// when "cp" is kept; else 1 and, with flash attention, every power of two that divides `rest`
// and cuts each sequence into 2·cp chunks of at least 1024 tokens (shorter chunks leave too little
// attention to hide the ring's steps under: a search bound, not a rule of the schema).
std::vector<int> context_parallel_sizes(const Scenario& base, const std::vector<std::string>& keep,
                                        int rest) {
  if (kept(keep, "cp"))
    return rest % base.layout.cp == 0 ? std::vector{base.layout.cp} : std::vector<int>{};
  std::vector<int> sizes{1};
  if (base.model.attention != Attention::Flash) return sizes;
  for (int cp = 2; cp <= rest && rest % cp == 0; cp *= 2)
    if (base.model.seq_len % (2 * cp) == 0 && base.model.seq_len / (2 * cp) >= 1024)
      sizes.push_back(cp);
  return sizes;
}

// The ZeRO shard groups to search for a layout of `zero`: all of dp (dp_shard absent) and, for a
// dense model under ZeRO, hybrid sharding over one node (dp_shard · cp · tp = a node's GPUs,
// where that divides dp and leaves more than one replica: HSDP's usual shape, sharding over
// NVLink and replicating across nodes); only the base's when "dp_shard" is kept.
std::vector<Settings> shard_groups(const Scenario& base, const std::vector<std::string>& keep,
                                   int zero, int tp, int cp, int dp) {
  if (kept(keep, "dp_shard"))
    return {{{"layout.dp_shard", number(zero > 0 ? base.layout.dp_shard : 0)}}};
  std::vector<Settings> groups = {{}};
  const int node = base.cluster.devices_per_node * base.cluster.ranks_per_device;
  if (zero == 0 || base.model.moe.enabled() || node % (cp * tp) != 0) return groups;
  const int shard = node / (cp * tp);
  if (shard < dp && dp % shard == 0) groups.push_back({{"layout.dp_shard", number(shard)}});
  return groups;
}

// The expert layouts of a tp · dp split of a MoE model (dp here the dp·cp GPUs), as settings:
// etp 1 and tp, and every ep that divides num_experts and the dp·tp / etp GPUs that fold into
// etp × ep × edp (Megatron-Core's MoE parallel folding, LayoutSpec::expert_dp). The base's ep and
// etp when "ep" is kept (an etp the base leaves at tp then follows each layout's tp); one empty
// setting for a dense model.
std::vector<Settings> expert_layouts(const Scenario& base, const std::vector<std::string>& keep,
                                     int tp, int dp) {
  const MoeSpec& moe = base.model.moe;
  if (!moe.enabled()) return {{}};
  if (kept(keep, "ep")) {  // an etp left at tp follows each layout's tp
    Settings held = {{"layout.ep", number(base.layout.ep)}};
    if (base.layout.etp > 0) held.emplace_back("layout.etp", number(base.layout.etp));
    return {held};
  }
  std::vector<Settings> layouts;
  for (int etp : std::set<int>{1, tp})
    for (int ep = 1; ep <= moe.num_experts; ++ep)
      if (moe.num_experts % ep == 0 && (dp * tp / etp) % ep == 0)
        layouts.push_back({{"layout.ep", number(ep)}, {"layout.etp", number(etp)}});
  return layouts;
}

// The training precisions to search: bf16 and fp8 for a dense model on a device whose
// description gives fp8_flops (dtwin refuses fp8 with model.moe) when the base trains in bf16 or
// fp8; otherwise, or when "precision" is kept, the base's. A bf16 layout of an fp8 base resets
// fp8_recipe, which only fp8 may set.
std::vector<Settings> precisions(const Scenario& base, const std::vector<std::string>& keep) {
  const Precision p = base.training.precision;
  const auto& device = base.cluster.device.description;
  const bool fp8 = device && device->has_fp8() && !base.model.moe.enabled() &&
                   (p == Precision::Bf16 || p == Precision::Fp8);
  if (kept(keep, "precision") || !fp8) return {{}};
  Settings bf16 = {{"training.precision", std::string("bf16")}};
  if (base.training.fp8_recipe != Fp8Recipe::Delayed)
    bf16.emplace_back("training.fp8_recipe", std::string("delayed"));
  return {bf16, {{"training.precision", std::string("fp8")}}};
}

// The schedules searched at `pp` as (layout.schedule, layout.virtual_stages): 1f1b; for pp > 1
// also gpipe, zb-h1, zb-1p, zb-2p, interleaved-1f1b with every v >= 2 that divides the layers per
// pipeline rank and zb-v where 2·pp divides the layers.
std::vector<std::pair<std::string, int>> schedule_choices(const Scenario& base, int pp) {
  std::vector<std::pair<std::string, int>> choices = {{"1f1b", 1}};
  if (pp == 1) return choices;
  for (const char* kind : {"gpipe", "zb-h1", "zb-1p", "zb-2p"}) choices.emplace_back(kind, 1);
  const int layers = base.model.n_layers;
  for (int v = 2; layers % pp == 0 && v <= layers / pp; ++v)
    if ((layers / pp) % v == 0) choices.emplace_back("interleaved-1f1b", v);
  if (layers % (2 * pp) == 0) choices.emplace_back("zb-v", 2);
  return choices;
}

// Every layout of the request as settings of the schema's keys (see search_layouts).
std::vector<Settings> enumerate(const Scenario& base, const PlanRequest& request) {
  const int gpus = request.gpus, global_batch = request.global_batch;
  const LayoutSpec& b = base.layout;
  const auto& keep = request.keep;
  const std::vector<Settings> trainings = precisions(base, keep);
  const std::vector<std::string> recomputes =
      values_of<std::string>("recompute", keep, {"none", "selective", "full"},
                             std::string(kRecomputeNames.name(b.recompute)));
  const std::vector<bool> sps =
      values_of<bool>("sequence_parallel", keep, {false, true}, b.sequence_parallel);
  const std::vector<int> zeros = values_of<int>("zero", keep, {0, 1, 2, 3}, b.zero);
  std::vector<Settings> layouts;
  for_each_split(base, gpus, [&](int tp, int pp, int rest) {
    for (int cp : context_parallel_sizes(base, keep, rest)) {
      const int dp = rest / cp;
      const std::vector<Settings> experts = expert_layouts(base, keep, tp, rest);
      for (int mbs : {1, 2, 4, 8, 16}) {
        if (global_batch % (dp * mbs) != 0) continue;
        const int m = global_batch / (dp * mbs);
        for (const auto& [kind, v] : schedule_choices(base, pp)) {
          const Settings sched = {{"layout.schedule", kind}, {"layout.virtual_stages", number(v)}};
          for (int zero : zeros)
            for (const std::string& recompute : recomputes)
              for (bool sp : sps) {
                if ((sp && tp == 1) || (zero > 0 && rest == 1)) continue;
                Settings settings = {{"layout.tp", number(tp)},
                                     {"layout.pp", number(pp)},
                                     {"layout.dp", number(dp)},
                                     {"layout.cp", number(cp)},
                                     {"layout.micro_batch_size", number(mbs)},
                                     {"layout.microbatches", number(m)},
                                     {"layout.zero", number(zero)},
                                     {"layout.recompute", recompute},
                                     {"layout.sequence_parallel", sp}};
                if (zero == 0) settings.emplace_back("layout.overlap_param_gather", false);
                if (!sp) settings.emplace_back("layout.tp_comm_overlap", false);
                settings.insert(settings.end(), sched.begin(), sched.end());
                for (const Settings& shard : shard_groups(base, keep, zero, tp, cp, dp))
                  for (const Settings& expert : experts)
                    for (const Settings& training : trainings) {
                      Settings layout = settings;
                      layout.insert(layout.end(), shard.begin(), shard.end());
                      layout.insert(layout.end(), expert.begin(), expert.end());
                      layout.insert(layout.end(), training.begin(), training.end());
                      layouts.push_back(std::move(layout));
                    }
              }
        }
      }
    }
  });
  return layouts;
}

// The key to count a violation under: the first of its keys that the layout set, else its first.
std::string reason_of(const Violation& violation, const Settings& settings) {
  for (const std::string& key : violation.keys)
    for (const auto& setting : settings)
      if (setting.first == key) return key;
  return violation.keys.front();
}

// The memory proxies (memory_proxy) of the layouts searched so far, shared by the workers: many
// layouts differ only in what the proxy does not depend on. Each is built with the layout's pass
// times (schedule_pass_times: unit times but for ZB-1p and ZB-2p), as build_schedule orders the
// schedule that is simulated.
class ProxyCache {
 public:
  std::shared_ptr<const sched::Schedule> get(const LayoutSpec& l, const sched::PassTimes& t) {
    const auto key =
        std::tuple(l.schedule, l.pp, l.virtual_stages, l.microbatches, std::min(l.dp_cp(), 2),
                   l.dp_sync, l.zero, l.zero3_gather, t.f, t.i, t.w, t.comm);
    {
      std::lock_guard lock(mutex_);
      if (const auto it = proxies_.find(key); it != proxies_.end()) return it->second;
    }
    auto proxy = std::make_shared<const sched::Schedule>(memory_proxy(l, t));
    std::lock_guard lock(mutex_);
    return proxies_.emplace(key, std::move(proxy)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<sched::ScheduleKind, int, int, int, int, sched::DpSync, int,
                      sched::Zero3Gather, double, double, double, double>,
           std::shared_ptr<const sched::Schedule>>
      proxies_;
};

struct Outcome {
  std::optional<LayoutCandidate> candidate;
  std::string reason, message;
};

// The layout of `scenario` estimated: its step, per-rank peaks and tokens/s (sets left empty).
LayoutCandidate estimated(Scenario scenario, ProxyCache& proxies) {
  LayoutCandidate c;
  c.scenario = std::move(scenario);
  const CostModel cost(c.scenario);
  const sched::PassTimes times = schedule_pass_times(c.scenario, cost);
  c.estimate = estimate_step(c.scenario, cost, *proxies.get(c.scenario.layout, times));
  trace::StepSummary figures;
  figures.step_time_s = c.estimate.step_s;
  trace::fill_step_figures(figures, c.scenario, cost);
  c.tokens_per_s = figures.tokens_per_s;
  return c;
}

double peak_of(const LayoutCandidate& c) {
  return std::ranges::max(c.estimate.peak_bytes);
}

// The bytes a rank of `c`'s cluster may use for tensors.
double memory_of(const LayoutCandidate& c) {
  return tensor_memory_per_rank(c.scenario.cluster);
}

Outcome evaluate(const PlanRequest& request, const Settings& base_settings, const Settings& layout,
                 ProxyCache& proxies) {
  Settings settings = base_settings;
  settings.insert(settings.end(), layout.begin(), layout.end());
  Scenario scenario = request.base;
  apply_settings(settings, scenario);
  if (const auto violations = validate(scenario); !violations.empty())
    return {std::nullopt, reason_of(violations.front(), settings),
            violations.front().message(scenario)};
  if (request.check)
    if (const auto violations = request.check(scenario); !violations.empty())
      return {std::nullopt, "runtime: " + reason_of(violations.front(), settings),
              violations.front().message(scenario)};
  LayoutCandidate c = estimated(std::move(scenario), proxies);
  if (peak_of(c) > memory_of(c))
    return {std::nullopt, "memory",
            fmt::format("{}: peak {:.1f} GiB over the {:.1f} GiB that a rank's tensors may use",
                        fmt::join(as_sets(layout), " "), peak_of(c) / (1 << 30),
                        memory_of(c) / (1 << 30))};
  c.sets = as_sets(settings);
  return {std::move(c), "", ""};
}

// Why the base's layout, which fits and passes the checks, is not among the enumerated layouts:
// the first of its settings that the search does not try.
std::string outside_search(const Scenario& base, const PlanRequest& request) {
  const LayoutSpec& l = base.layout;
  const int node = max_tp(base, request.gpus);
  if ((l.tp & (l.tp - 1)) != 0 || l.tp > node)
    return fmt::format("tp {} is not a power of two up to {}", l.tp, node);
  if (!std::set{1, 2, 4, 8, 16}.contains(l.micro_batch_size))
    return fmt::format("micro-batch size {} is not 1, 2, 4, 8 or 16", l.micro_batch_size);
  const std::vector<int> cps = context_parallel_sizes(base, request.keep, l.dp_cp());
  if (std::ranges::find(cps, l.cp) == cps.end())
    return fmt::format("cp {} leaves chunks under 1024 tokens or needs flash attention", l.cp);
  const std::pair<std::string, int> schedule(sched::kScheduleKindNames.name(l.schedule),
                                             l.virtual_stages);
  const auto schedules = schedule_choices(base, l.pp);
  if (std::ranges::find(schedules, schedule) == schedules.end())
    return fmt::format("schedule {} with {} virtual stages is not searched at pp {}",
                       schedule.first, schedule.second, l.pp);
  if (base.model.moe.enabled() && l.expert_tp() != 1 && l.expert_tp() != l.tp)
    return fmt::format("etp {} is neither 1 nor tp", l.expert_tp());
  return "the search does not try this combination of its layout keys";
}

// The base's own layout placed among the search's fitting layouts (see InputLayout).
InputLayout place_input(const PlanRequest& request, const std::vector<LayoutCandidate>& fitting,
                        ProxyCache& proxies) {
  const Scenario& base = request.base;
  const LayoutSpec& l = base.layout;
  InputLayout input;
  const int batch = l.dp * l.microbatches * l.micro_batch_size;
  if (base.world_size() != request.gpus || batch != request.global_batch) {
    input.why = fmt::format(
        "is not in the search space: it trains a global batch of {} on {} GPUs, the search {} on "
        "{}",
        batch, base.world_size(), request.global_batch, request.gpus);
    return input;
  }
  const auto same = std::ranges::find_if(fitting, [&](const LayoutCandidate& f) {
    return differing_settings(f.scenario, base).empty();
  });
  if (same != fitting.end()) {
    input.candidate = *same;
    input.searched = true;
    input.rank = static_cast<size_t>(same - fitting.begin()) + 1;
    return input;
  }
  const LayoutCandidate& c = input.candidate.emplace(estimated(base, proxies));
  if (peak_of(c) > memory_of(c)) {
    input.why = fmt::format("does not fit: {:.2f} GiB > {:.2f} GiB", peak_of(c) / (1 << 30),
                            memory_of(c) / (1 << 30));
    return input;
  }
  const std::vector<Violation> refused =
      request.check ? request.check(base) : std::vector<Violation>{};
  input.why =
      "is not in the search space: " +
      (refused.empty() ? outside_search(base, request)
                       : "dtwin train cannot execute it (" + refused.front().message(base) + ")");
  input.rank =
      1 + static_cast<size_t>(std::ranges::count_if(fitting, [&](const LayoutCandidate& f) {
        return f.estimate.step_s < c.estimate.step_s;
      }));
  return input;
}

// The cluster settings that give the base scenario `gpus` GPUs: nodes = gpus /
// (devices_per_node · ranks_per_device) when that divides, else ranks_per_device = gpus /
// (nodes · devices_per_node). Throws UserError when neither divides.
Settings cluster_settings(const Scenario& base, int gpus) {
  const ClusterSpec& c = base.cluster;
  const int per_node = c.devices_per_node * c.ranks_per_device;
  if (gpus > 0 && gpus % per_node == 0) return {{"cluster.nodes", number(gpus / per_node)}};
  const int devices = c.nodes * c.devices_per_node;
  if (gpus > 0 && gpus % devices == 0)
    return {{"cluster.ranks_per_device", number(gpus / devices)}};
  throw UserError("--gpus " + std::to_string(gpus) + ": expected a positive multiple of " +
                  std::to_string(per_node) + " (devices_per_node × ranks_per_device) or of " +
                  std::to_string(devices) + " (nodes × devices_per_node)");
}

}  // namespace

std::vector<std::string> differing_settings(const Scenario& a, const Scenario& b) {
  const LayoutSpec &x = a.layout, &y = b.layout;
  const auto shard = [](const LayoutSpec& l) { return l.hybrid_shard() ? l.dp_shard : 0; };
  const std::vector<std::pair<const char*, bool>> same = {
      {"tp", x.tp == y.tp},
      {"pp", x.pp == y.pp},
      {"dp", x.dp == y.dp},
      {"cp", x.cp == y.cp},
      {"micro_batch_size", x.micro_batch_size == y.micro_batch_size},
      {"microbatches", x.microbatches == y.microbatches},
      {"schedule", x.schedule == y.schedule},
      {"virtual_stages", x.virtual_stages == y.virtual_stages},
      {"zero", x.zero == y.zero},
      {"recompute", x.recompute == y.recompute},
      {"sequence_parallel", x.sequence_parallel == y.sequence_parallel},
      {"tp_comm_overlap", x.tp_comm_overlap == y.tp_comm_overlap},
      {"overlap_param_gather", x.overlap_param_gather == y.overlap_param_gather},
      {"dp_shard", shard(x) == shard(y)},
      {"ep", x.ep == y.ep},
      {"etp", x.expert_tp() == y.expert_tp()},
      {"precision", a.training.precision == b.training.precision},
      {"fp8_recipe", a.training.fp8_recipe == b.training.fp8_recipe}};
  std::vector<std::string> names;
  for (const auto& [name, equal] : same)
    if (!equal) names.emplace_back(name);
  return names;
}

LayoutSearch search_layouts(const PlanRequest& request,
                            const std::function<void(int, int)>& progress) {
  const Scenario& base = request.base;
  if (request.global_batch <= 0)
    throw UserError("--global-batch " + std::to_string(request.global_batch) +
                    ": expected a positive number of sequences");
  Settings base_settings = cluster_settings(base, request.gpus);
  if (base.layout.global_batch > 0)
    base_settings.emplace_back("layout.global_batch", number(request.global_batch));
  for (const std::string& key : request.keep)
    if (key != "zero" && key != "recompute" && key != "sequence_parallel" && key != "ep" &&
        key != "cp" && key != "dp_shard" && key != "precision")
      throw UserError(
          "--keep " + key +
          ": expected zero, recompute, sequence_parallel, ep, cp, dp_shard or precision");
  const std::vector<Settings> layouts = enumerate(base, request);
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
        outcomes[i] = evaluate(request, base_settings, layouts[i], proxies);
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
                     return peak_of(a) < peak_of(b);  // as fast, less memory
                   });
  search.input = place_input(request, search.fitting, proxies);
  return search;
}

}  // namespace dtwin
