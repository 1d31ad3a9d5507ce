#include "models/cost/profile.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "base/file_writer.hpp"
#include "models/spec/config_reader.hpp"

namespace dtwin {

using detail::expected;
using detail::Field;
using detail::Origin;
using detail::Section;

namespace {

const std::vector<std::string> kStageKeys = {
    "forward_s",    "backward_s",       "input_backward_s", "weight_backward_s",
    "optimizer_s",  "tp_forward_s",     "tp_backward_s",    "variation",
    "sync_local_s", "tp_forward_cpu_s", "tp_backward_cpu_s"};

/// The items of the sequence `field` as fields ("stages[2]"); `what` describes it for errors.
std::vector<Field> items(const Origin& origin, const Field& field, const std::string& what,
                         bool allow_empty) {
  if (!field.node.IsSequence() || (!allow_empty && field.node.size() == 0)) {
    expected(origin, field, what);
  }
  std::vector<Field> out;
  for (std::size_t i = 0; i < field.node.size(); ++i) {
    const YAML::Node item = field.node[i];
    out.push_back(Field{item, fmt::format("{}[{}]", field.path, i),
                        item.IsNull() ? field.mark : item.Mark()});
  }
  return out;
}

StageSeconds read_stage(const Origin& origin, const Field& field) {
  const Section s(origin, field, kStageKeys);
  StageSeconds st;
  st.forward = s.quantity("forward_s", Quantity::Latency, false);
  st.backward = s.quantity("backward_s", Quantity::Latency, false);
  st.input_backward = s.quantity("input_backward_s", Quantity::Latency, false);
  st.weight_backward = s.quantity("weight_backward_s", Quantity::Latency, false);
  st.optimizer = s.quantity("optimizer_s", Quantity::Latency, false);
  s.quantity("tp_forward_s", Quantity::Latency, false, st.tp_forward);
  s.quantity("tp_backward_s", Quantity::Latency, false, st.tp_backward);
  s.quantity("tp_forward_cpu_s", Quantity::Latency, false, st.tp_forward_cpu);
  s.quantity("tp_backward_cpu_s", Quantity::Latency, false, st.tp_backward_cpu);
  s.quantity("variation", Quantity::Count, false, st.variation);
  s.quantity("sync_local_s", Quantity::Latency, false, st.sync_local);
  return st;
}

// The list `field` of {bytes, seconds} points in strictly increasing bytes into `out`.
void read_points(const Origin& origin, const Field& field, std::vector<AllReducePoint>& out) {
  for (const Field& f : items(origin, field, "a list of {bytes, seconds} points", true)) {
    const Section point(origin, f, {"bytes", "seconds"});
    AllReducePoint pt;
    pt.bytes = point.quantity("bytes", Quantity::Bytes, false);
    pt.seconds = point.quantity("seconds", Quantity::Latency, false);
    if (!out.empty() && !(pt.bytes > out.back().bytes)) {
      expected(origin, point.get("bytes"),
               fmt::format("points in strictly increasing bytes (the previous point has {})",
                           out.back().bytes));
    }
    out.push_back(pt);
  }
}

void read_allreduce(const Origin& origin, const Section& root, Profile& p) {
  const Section s =
      root.section("allreduce", {"ranks", "across_hosts", "points", "allgather", "reduce_scatter"});
  p.allreduce_ranks = s.integer("ranks", 0);
  s.boolean("across_hosts", p.allreduce_across_hosts);
  read_points(origin, s.get("points"), p.allreduce);
  if (const std::optional<Field> gather = s.find("allgather"))
    read_points(origin, *gather, p.allgather);
  if (const std::optional<Field> scatter = s.find("reduce_scatter"))
    read_points(origin, *scatter, p.reduce_scatter);
}

// The optional list `gemms` of {name, m, n, k, seconds} into `out`.
void read_gemms(const Origin& origin, const Section& root, std::vector<GemmPoint>& out) {
  const std::optional<Field> gemms = root.find("gemms");
  if (!gemms) return;
  for (const Field& f : items(origin, *gemms, "a list of {name, m, n, k, seconds} GEMMs", true)) {
    const Section gemm(origin, f, {"name", "m", "n", "k", "seconds"});
    GemmPoint pt;
    pt.name = gemm.text("name", false);
    pt.m = gemm.integer("m", 1);
    pt.n = gemm.integer("n", 1);
    pt.k = gemm.integer("k", 1);
    pt.seconds = gemm.quantity("seconds", Quantity::Latency, true);
    out.push_back(pt);
  }
}

/// `value` in its shortest form that reads back exactly.
std::string number(double value) {
  return fmt::format("{}", value);
}

// The optional list `key` of seconds, one per count of busy ranks, into `out`.
void read_per_busy_count(const Origin& origin, const Section& root, const std::string& key,
                         std::vector<double>& out) {
  if (const std::optional<Field> delays = root.find(key))
    for (const Field& f :
         items(origin, *delays, "a non-empty list of delays, one per count of busy ranks", false))
      out.push_back(detail::to_quantity(origin, f, Quantity::Latency, false));
}

// Writes `seconds` as the flow list `key`, unless it is empty.
void write_per_busy_count(YAML::Emitter& out, const std::string& key,
                          const std::vector<double>& seconds) {
  if (seconds.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double s : seconds) out << number(s);
  out << YAML::EndSeq;
}

// Writes `points` as the list `key` of {bytes, seconds} maps.
void write_points(YAML::Emitter& out, const std::string& key,
                  const std::vector<AllReducePoint>& points) {
  out << YAML::Key << key << YAML::Value;
  if (points.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const AllReducePoint& pt : points) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "bytes" << YAML::Value << number(pt.bytes);
    out << YAML::Key << "seconds" << YAML::Value << number(pt.seconds);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// A slowdown curve's point for n >= 1 at once: curve[n-1], and beyond its K points the K's
// throughput time-sliced among n, curve[K-1] * n / K.
double slowdown_at(const std::vector<double>& curve, int n, const char* what) {
  if (curve.empty()) throw std::logic_error(std::string(what) + ": no measured curve");
  const int measured = static_cast<int>(curve.size());
  if (n <= measured) return curve[std::max(n, 1) - 1];
  return curve.back() * n / measured;
}

// A non-empty list of dimensionless figures, one per count (Quantity::Count; > 0 where
// `positive`, else >= 0): slowdowns or coefficients of variation.
void read_curve(const Origin& origin, const Field& field, const char* what, bool positive,
                std::vector<double>& out) {
  for (const Field& f : items(origin, field, what, false))
    out.push_back(detail::to_quantity(origin, f, Quantity::Count, positive));
}

void write_curve(YAML::Emitter& out, const char* key, const std::vector<double>& curve) {
  if (curve.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double value : curve) out << number(value);
  out << YAML::EndSeq;
}

// The point of a non-empty per-busy-count curve for `busy` others: the last one beyond it.
double at_busy_count(const std::vector<double>& curve, int busy) {
  return curve[std::clamp(busy, 0, static_cast<int>(curve.size()) - 1)];
}

}  // namespace

double Profile::allreduce_seconds(double bytes) const {
  const auto& pts = allreduce;
  if (pts.empty()) return 0;
  if (pts.size() == 1) {
    const AllReducePoint& p = pts.front();
    return p.bytes > 0 ? std::max(0.0, p.seconds * bytes / p.bytes) : p.seconds;
  }
  // The segment [lo, lo + 1] that holds `bytes`, or the end segment on its side.
  const auto above = std::upper_bound(
      pts.begin(), pts.end(), bytes, [](double b, const AllReducePoint& p) { return b < p.bytes; });
  std::size_t hi = static_cast<std::size_t>(above - pts.begin());
  hi = std::clamp<std::size_t>(hi, 1, pts.size() - 1);
  const AllReducePoint& a = pts[hi - 1];
  const AllReducePoint& b = pts[hi];
  const double slope = (b.seconds - a.seconds) / (b.bytes - a.bytes);
  return std::max(0.0, a.seconds + (bytes - a.bytes) * slope);
}

double Profile::ring_overhead_s_per_byte(const std::vector<AllReducePoint>& points,
                                         int steps_per_rank) const {
  const double bandwidth = allreduce_across_hosts ? inter_host_bandwidth : p2p_bandwidth;
  if (points.empty() || allreduce_ranks < 2 || bandwidth <= 0) return 0;
  const AllReducePoint& largest = points.back();
  const double steps = steps_per_rank * (allreduce_ranks - 1.0);
  const double sent = steps * largest.bytes / allreduce_ranks;
  const double link = allreduce_across_hosts ? steps * inter_host_latency + sent / bandwidth
                                             : steps * (p2p_latency + largest.bytes / bandwidth);
  return sent > 0 ? std::max(0.0, (largest.seconds - link) / sent) : 0;
}

double Profile::allreduce_overhead_s_per_byte() const {
  return ring_overhead_s_per_byte(allreduce, 2);
}

double Profile::half_ring_overhead_s_per_byte(const std::vector<AllReducePoint>& points) const {
  return points.empty() ? allreduce_overhead_s_per_byte() : ring_overhead_s_per_byte(points, 1);
}

double Profile::concurrency_slowdown(int n) const {
  return slowdown_at(concurrency, n, "concurrency_slowdown");
}

double Profile::p2p_concurrency_slowdown(int n) const {
  return slowdown_at(p2p_concurrency, n, "p2p_concurrency_slowdown");
}

double Profile::concurrency_log_variance(int n) const {
  if (concurrency_variation.empty()) return 0;
  const double v = at_busy_count(concurrency_variation, n - 1);
  return std::log1p(v * v);
}

double Profile::resume_delay(int busy) const {
  if (wake_delay.empty()) return 0;
  return std::max(0.0, at_busy_count(wake_delay, busy) - wake_delay.front());
}

double Profile::late_receive_seconds(int busy) const {
  return late_receive.empty() ? 0 : at_busy_count(late_receive, busy);
}

bool Profile::operator==(const Profile& other) const {
  return machine == other.machine && threads == other.threads && stages == other.stages &&
         members_concurrency == other.members_concurrency &&
         processes_sharing_cores == other.processes_sharing_cores &&
         p2p_latency == other.p2p_latency && p2p_bandwidth == other.p2p_bandwidth &&
         p2p_concurrency == other.p2p_concurrency &&
         p2p_cpu_s_per_byte == other.p2p_cpu_s_per_byte &&
         inter_host_latency == other.inter_host_latency &&
         inter_host_bandwidth == other.inter_host_bandwidth &&
         inter_host_queue_delay == other.inter_host_queue_delay && allreduce == other.allreduce &&
         allgather == other.allgather && reduce_scatter == other.reduce_scatter &&
         allreduce_ranks == other.allreduce_ranks &&
         allreduce_across_hosts == other.allreduce_across_hosts &&
         concurrency == other.concurrency && concurrency_variation == other.concurrency_variation &&
         wake_delay == other.wake_delay && late_receive == other.late_receive &&
         gemms == other.gemms && host_op_seconds == other.host_op_seconds &&
         host_op_seconds_no_grad == other.host_op_seconds_no_grad;
}

Profile load_profile(const std::string& path) {
  const YAML::Node doc = detail::load_yaml_file(path, "profile");
  const Origin origin(path, {}, "profile");
  const Section root(origin, Field{doc, "", doc.Mark()},
                     {"machine", "threads", "concurrency", "concurrency_variation", "wake_delay",
                      "late_receive", "stages", "members_concurrency", "processes_sharing_cores",
                      "p2p", "inter_host", "allreduce", "gemms", "host_op"});
  Profile p;
  p.source = path;
  root.text("machine", true, p.machine);
  root.integer("threads", 1, p.threads);
  if (const std::optional<Field> curve = root.find("concurrency"))
    read_curve(origin, *curve, "a non-empty list of slowdowns, one per count of busy ranks", true,
               p.concurrency);
  if (const std::optional<Field> curve = root.find("concurrency_variation"))
    read_curve(origin, *curve,
               "a non-empty list of coefficients of variation, one per count of busy ranks", false,
               p.concurrency_variation);
  read_per_busy_count(origin, root, "wake_delay", p.wake_delay);
  read_per_busy_count(origin, root, "late_receive", p.late_receive);
  for (const Field& f : items(origin, root.get("stages"), "a non-empty list of stages", false)) {
    p.stages.push_back(read_stage(origin, f));
  }
  root.quantity("members_concurrency", Quantity::Count, true, p.members_concurrency);
  root.integer("processes_sharing_cores", 1, p.processes_sharing_cores);
  const Section p2p = root.section("p2p", {"latency", "bandwidth", "concurrency", "cpu_per_byte"});
  p.p2p_latency = p2p.quantity("latency", Quantity::Latency, false);
  p.p2p_bandwidth = p2p.quantity("bandwidth", Quantity::Bandwidth, true);
  if (const std::optional<Field> curve = p2p.find("concurrency"))
    read_curve(origin, *curve, "a non-empty list of slowdowns, one per count of transfers", true,
               p.p2p_concurrency);
  p2p.quantity("cpu_per_byte", Quantity::Count, false, p.p2p_cpu_s_per_byte);
  if (const auto inter =
          root.optional_section("inter_host", {"latency", "bandwidth", "queue_delay"})) {
    p.inter_host_latency = inter->quantity("latency", Quantity::Latency, false);
    p.inter_host_bandwidth = inter->quantity("bandwidth", Quantity::Bandwidth, true);
    inter->quantity("queue_delay", Quantity::Latency, false, p.inter_host_queue_delay);
  }
  read_allreduce(origin, root, p);
  read_gemms(origin, root, p.gemms);
  if (const auto host = root.optional_section("host_op", {"grad", "no_grad"})) {
    p.host_op_seconds = host->quantity("grad", Quantity::Latency, true);
    p.host_op_seconds_no_grad = host->quantity("no_grad", Quantity::Latency, true);
  }
  return p;
}

void save_profile(const Profile& profile, const std::string& path) {
  YAML::Emitter out;
  out << YAML::Comment("dtwin measured profile: seconds per microbatch (optimizer_s: per step)");
  out << YAML::BeginMap;
  out << YAML::Key << "machine" << YAML::Value << YAML::DoubleQuoted << profile.machine;
  out << YAML::Key << "threads" << YAML::Value << profile.threads;
  write_curve(out, "concurrency", profile.concurrency);
  write_curve(out, "concurrency_variation", profile.concurrency_variation);
  write_per_busy_count(out, "wake_delay", profile.wake_delay);
  write_per_busy_count(out, "late_receive", profile.late_receive);
  out << YAML::Key << "stages" << YAML::Value << YAML::BeginSeq;
  for (const StageSeconds& s : profile.stages) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "forward_s" << YAML::Value << number(s.forward);
    out << YAML::Key << "backward_s" << YAML::Value << number(s.backward);
    out << YAML::Key << "input_backward_s" << YAML::Value << number(s.input_backward);
    out << YAML::Key << "weight_backward_s" << YAML::Value << number(s.weight_backward);
    out << YAML::Key << "optimizer_s" << YAML::Value << number(s.optimizer);
    if (s.tp_forward > 0 || s.tp_backward > 0) {
      out << YAML::Key << "tp_forward_s" << YAML::Value << number(s.tp_forward);
      out << YAML::Key << "tp_backward_s" << YAML::Value << number(s.tp_backward);
    }
    if (s.tp_forward_cpu > 0 || s.tp_backward_cpu > 0) {
      out << YAML::Key << "tp_forward_cpu_s" << YAML::Value << number(s.tp_forward_cpu);
      out << YAML::Key << "tp_backward_cpu_s" << YAML::Value << number(s.tp_backward_cpu);
    }
    if (s.variation > 0) out << YAML::Key << "variation" << YAML::Value << number(s.variation);
    if (s.sync_local > 0) out << YAML::Key << "sync_local_s" << YAML::Value << number(s.sync_local);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (profile.members_concurrency != 1)
    out << YAML::Key << "members_concurrency" << YAML::Value << number(profile.members_concurrency);
  if (profile.processes_sharing_cores != 1)
    out << YAML::Key << "processes_sharing_cores" << YAML::Value << profile.processes_sharing_cores;
  out << YAML::Key << "p2p" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "latency" << YAML::Value << number(profile.p2p_latency);
  out << YAML::Key << "bandwidth" << YAML::Value << number(profile.p2p_bandwidth);
  write_curve(out, "concurrency", profile.p2p_concurrency);
  if (profile.p2p_cpu_s_per_byte > 0)
    out << YAML::Key << "cpu_per_byte" << YAML::Value << number(profile.p2p_cpu_s_per_byte);
  out << YAML::EndMap;
  if (profile.inter_host_bandwidth > 0) {
    out << YAML::Key << "inter_host" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "latency" << YAML::Value << number(profile.inter_host_latency);
    out << YAML::Key << "bandwidth" << YAML::Value << number(profile.inter_host_bandwidth);
    if (profile.inter_host_queue_delay > 0)
      out << YAML::Key << "queue_delay" << YAML::Value << number(profile.inter_host_queue_delay);
    out << YAML::EndMap;
  }
  out << YAML::Key << "allreduce" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "ranks" << YAML::Value << profile.allreduce_ranks;
  if (profile.allreduce_across_hosts) out << YAML::Key << "across_hosts" << YAML::Value << true;
  write_points(out, "points", profile.allreduce);
  if (!profile.allgather.empty()) write_points(out, "allgather", profile.allgather);
  if (!profile.reduce_scatter.empty()) write_points(out, "reduce_scatter", profile.reduce_scatter);
  out << YAML::EndMap;
  if (profile.host_op_seconds > 0) {
    out << YAML::Key << "host_op" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "grad" << YAML::Value << number(profile.host_op_seconds);
    out << YAML::Key << "no_grad" << YAML::Value << number(profile.host_op_seconds_no_grad);
    out << YAML::EndMap;
  }
  if (!profile.gemms.empty()) {
    out << YAML::Key << "gemms" << YAML::Value << YAML::BeginSeq;
    for (const GemmPoint& g : profile.gemms) {
      out << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << g.name;
      out << YAML::Key << "m" << YAML::Value << number(g.m);
      out << YAML::Key << "n" << YAML::Value << number(g.n);
      out << YAML::Key << "k" << YAML::Value << number(g.k);
      out << YAML::Key << "seconds" << YAML::Value << number(g.seconds);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  if (!out.good()) throw ConfigError(path + ": cannot write profile: " + out.GetLastError());

  write_file(path, std::string(out.c_str()) + "\n");
}

void check_profile_matches(const Profile& profile, const Scenario& scenario) {
  const std::size_t stages =
      static_cast<std::size_t>(scenario.layout.pp) * scenario.layout.virtual_stages;
  if (profile.stages.size() != stages) {
    throw ConfigError(fmt::format(
        "{}: stages: expected {} stages (layout.pp * layout.virtual_stages of {}), got '{}'",
        profile.source, stages, scenario.source, profile.stages.size()));
  }
}

}  // namespace dtwin
