#include "trace/timeline.hpp"

#include <climits>
#include <cmath>
#include <cstdint>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "base/user_error.hpp"
#include "trace/chrome_tracks.hpp"

namespace dtwin::trace {
namespace {

constexpr const char* kInnerCommCategory = "inner_comm";
constexpr const char* kTransferCategory = "transfer";

// j[key] as an int: an integer JSON number within int's range. (nlohmann's get<int>() casts a
// float or an out-of-range integer, which is undefined behaviour.) Throws UserError otherwise.
int int_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& value = j.at(key);
  if (!value.is_number_integer()) throw UserError(std::string(key) + ": expected an integer");
  if (value.is_number_unsigned()
          ? value.get<std::uint64_t>() > INT_MAX
          : value.get<std::int64_t>() < INT_MIN || value.get<std::int64_t>() > INT_MAX)
    throw UserError(std::string(key) + ": expected an integer within int's range");
  return value.get<int>();
}

// The Chrome trace being written. Written with fmt rather than built as a JSON document: a step
// of thousands of ranks has millions of events, and the document's copies dominated the
// simulator's wall time. Every string written is an action's text, a kind name, a track's name
// or "rank N": nothing needs escaping.
struct TraceWriter {
  fmt::memory_buffer out;
  bool first = true;
  TraceWriter() { fmt::format_to(fmt::appender(out), "{{\"traceEvents\":["); }
  // The appender for the next event, after its separator.
  fmt::appender next() {
    if (!first) fmt::format_to(fmt::appender(out), FMT_COMPILE(",\n"));
    first = false;
    return fmt::appender(out);
  }
};

// `ns` nanoseconds as microseconds with three decimals, exactly.
void write_us(fmt::appender it, std::int64_t ns) {
  const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : ns;
  fmt::format_to(it, FMT_COMPILE("{}{}.{:03}"), ns < 0 ? "-" : "", magnitude / 1000,
                 magnitude % 1000);
}

// "\"ts\":…,\"dur\":…" of the span [start, end] in nanoseconds.
void write_span(fmt::appender it, std::int64_t start, std::int64_t end) {
  fmt::format_to(it, FMT_COMPILE("\"ts\":"));
  write_us(it, start);
  fmt::format_to(it, FMT_COMPILE(",\"dur\":"));
  write_us(it, end - start);
}

// An action's canonical text, without a string.
void write_name(fmt::appender it, const Action& a) {
  fmt::format_to(it, FMT_COMPILE("{}{}"), a.stage, kind_name(a.kind));
  if (has_microbatch(a.kind)) fmt::format_to(it, FMT_COMPILE("{}"), a.microbatch);
}

// A process name per rank and a thread name per track.
void write_metadata(TraceWriter& writer, const Tracks& tracks, int world_size) {
  for (int rank = 0; rank < world_size; ++rank)
    fmt::format_to(writer.next(),
                   "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{0},"
                   "\"args\":{{\"name\":\"rank {0}\"}}}}",
                   rank);
  for (const auto& [track, name] : tracks.names)
    fmt::format_to(writer.next(),
                   "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"name\":\"{}\"}}}}",
                   track.first, track.second, name);
}

// The "X" event of action `e` on track `tid`. Compiled formats and no per-event strings: this
// took a sixth of a 1024-GPU simulation.
void write_action(TraceWriter& writer, const TimedAction& e, int tid) {
  const fmt::appender it = writer.next();
  fmt::format_to(it, FMT_COMPILE("{{\"name\":\""));
  write_name(it, e.action);
  fmt::format_to(it, FMT_COMPILE("\",\"ph\":\"X\",\"pid\":{},\"tid\":{},"), e.rank, tid);
  write_span(it, to_ns(e.start), to_ns(e.end));
  fmt::format_to(it,
                 FMT_COMPILE(",\"args\":{{\"stage\":{},\"kind\":\"{}\",\"step\":{},"
                             "\"exposed_comm_us\":{},"),
                 e.action.stage, kind_name(e.action.kind), e.step, e.exposed_comm * 1e6);
  if (e.cpu > 0) fmt::format_to(it, FMT_COMPILE("\"cpu_us\":{},"), e.cpu * 1e6);
  if (e.comm_cpu > 0) fmt::format_to(it, FMT_COMPILE("\"comm_cpu_us\":{},"), e.comm_cpu * 1e6);
  if (e.memory > 0) fmt::format_to(it, FMT_COMPILE("\"memory_bytes\":{},"), e.memory);
  fmt::format_to(it, FMT_COMPILE("\"microbatch\":"));
  if (has_microbatch(e.action.kind))
    fmt::format_to(it, FMT_COMPILE("{}}}}}"), e.action.microbatch);
  else
    fmt::format_to(it, FMT_COMPILE("null}}}}"));
}

// The "comm <action>" event (cat inner_comm) of the communication inside compute action `e`.
void write_inner_comm(TraceWriter& writer, const TimedAction& e, int tid,
                      std::pair<std::int64_t, std::int64_t> span) {
  const fmt::appender it = writer.next();
  fmt::format_to(it, FMT_COMPILE("{{\"name\":\"comm "));
  write_name(it, e.action);
  fmt::format_to(it, FMT_COMPILE("\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},"),
                 kInnerCommCategory, e.rank, tid);
  write_span(it, span.first, span.second);
  fmt::format_to(it, FMT_COMPILE("}}"));
}

// One end ("s" or "f") of flow `id` from `sender`, on `e`'s track `tid` at `ns` nanoseconds.
void write_flow_end(TraceWriter& writer, const TimedAction& sender, const TimedAction& e, int tid,
                    std::int64_t ns, const char* phase, std::size_t id) {
  const fmt::appender it = writer.next();
  fmt::format_to(it, FMT_COMPILE("{{\"name\":\""));
  write_name(it, sender.action);
  fmt::format_to(it,
                 FMT_COMPILE("\",\"cat\":\"{}\",\"ph\":\"{}\",{}\"id\":{},\"pid\":{},\"tid\":{},"
                             "\"ts\":"),
                 kTransferCategory, phase, *phase == 'f' ? "\"bp\":\"e\"," : "", id, e.rank, tid);
  write_us(it, ns);
  fmt::format_to(it, FMT_COMPILE("}}"));
}

// Each flow's two ends, ids from 1.
void write_flows(TraceWriter& writer, const std::vector<TimedAction>& events, const Tracks& tracks,
                 const std::vector<Flow>& flows) {
  std::size_t id = 0;
  for (const Flow& flow : flows) {
    const TimedAction& send = events[flow.send];
    ++id;
    write_flow_end(writer, send, send, tracks.action_tid[flow.send], flow.send_ns, "s", id);
    write_flow_end(writer, send, events[flow.receive], tracks.action_tid[flow.receive],
                   flow.receive_ns, "f", id);
  }
}

// A "memory" counter per rank: TimedAction::peak_memory at each action's start and
// TimedAction::memory at its end, where known; a SEND's span is its transfer's, not its rank's,
// so it has none. Where samples meet at one time the last of the rank's list holds; a sample
// that repeats the rank's previous value is left out.
void write_memory(TraceWriter& writer, const std::vector<TimedAction>& events) {
  struct Sample {
    int rank;
    std::int64_t ns;
    double bytes;
  };
  std::vector<Sample> samples;
  for (const TimedAction& e : events) {
    if (sched::is_send(e.action.kind)) continue;
    if (e.peak_memory > 0) samples.push_back({e.rank, to_ns(e.start), e.peak_memory});
    if (e.memory > 0) samples.push_back({e.rank, to_ns(e.end), e.memory});
  }
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return std::tie(a.rank, a.ns) < std::tie(b.rank, b.ns);
  });
  const Sample* previous = nullptr;  // the last sample written
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    const bool superseded =
        i + 1 < samples.size() && samples[i + 1].rank == s.rank && samples[i + 1].ns == s.ns;
    if (superseded || (previous && previous->rank == s.rank && previous->bytes == s.bytes))
      continue;
    const fmt::appender it = writer.next();
    fmt::format_to(it, FMT_COMPILE("{{\"name\":\"memory\",\"ph\":\"C\",\"pid\":{},\"ts\":"),
                   s.rank);
    write_us(it, s.ns);
    fmt::format_to(it, FMT_COMPILE(",\"args\":{{\"bytes\":{}}}}}"), s.bytes);
    previous = &s;
  }
}

}  // namespace

StepSummary summarize(const std::vector<TimedAction>& events, int world_size) {
  StepSummary summary;
  summary.ranks.resize(world_size);
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const TimedAction& e : events) {
    first = std::min(first, e.start);
    last = std::max(last, e.end);
    RankSummary& rank = summary.ranks.at(e.rank);
    if (is_compute(e.action.kind) || e.action.kind == ActionKind::OPTIM)
      rank.compute_s += e.end - e.start - e.exposed_comm;
    rank.comm_s += e.exposed_comm;
  }
  if (events.empty()) return summary;
  summary.step_time_s = last - first;
  double idle_fraction = 0;
  for (RankSummary& rank : summary.ranks) {
    rank.idle_s = std::max(0.0, summary.step_time_s - rank.compute_s - rank.comm_s);
    if (summary.step_time_s > 0) idle_fraction += rank.idle_s / summary.step_time_s;
  }
  summary.bubble_fraction = world_size > 0 ? idle_fraction / world_size : 0;
  return summary;
}

StepSummary summarize_steps(const std::vector<TimedAction>& events, int world_size,
                            bool drop_first) {
  std::map<int, std::vector<TimedAction>> steps;
  for (const TimedAction& e : events) steps[e.step].push_back(e);
  if (drop_first && steps.size() > 1) steps.erase(steps.begin());
  StepSummary mean;
  mean.ranks.resize(world_size);
  std::vector<double> step_times;
  for (const auto& [step, step_events] : steps) {
    const StepSummary one = summarize(step_events, world_size);
    step_times.push_back(one.step_time_s);
    mean.step_time_s += one.step_time_s / steps.size();
    mean.bubble_fraction += one.bubble_fraction / steps.size();
    for (int r = 0; r < world_size; ++r) {
      mean.ranks[r].compute_s += one.ranks[r].compute_s / steps.size();
      mean.ranks[r].comm_s += one.ranks[r].comm_s / steps.size();
      mean.ranks[r].idle_s += one.ranks[r].idle_s / steps.size();
    }
  }
  double square_sum = 0;
  for (double t : step_times) square_sum += (t - mean.step_time_s) * (t - mean.step_time_s);
  if (!step_times.empty()) mean.step_time_std_s = std::sqrt(square_sum / step_times.size());
  return mean;
}

std::string to_chrome_trace(const std::vector<TimedAction>& events, const sched::Layout& layout) {
  const Tracks tracks = lay_out_tracks(events, layout);
  TraceWriter writer;
  write_metadata(writer, tracks, layout.group_count());
  for (std::size_t i = 0; i < events.size(); ++i) {
    write_action(writer, events[i], tracks.action_tid[i]);
    if (const auto inner = inner_comm_ns(events[i]))
      write_inner_comm(writer, events[i], tracks.inner_tid[i], *inner);
  }
  write_flows(writer, events, tracks, flows(events, layout));
  write_memory(writer, events);
  fmt::format_to(fmt::appender(writer.out), "],\"displayTimeUnit\":\"ms\"}}\n");
  return fmt::to_string(writer.out);
}

std::vector<TimedAction> from_chrome_trace(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw UserError("not a Chrome trace: expected an object with a traceEvents array");
  std::vector<TimedAction> events;
  size_t index = 0;
  for (const auto& e : doc["traceEvents"]) {
    ++index;
    try {
      if (!e.is_object()) throw UserError("expected an object");
      if (e.value("ph", "") != "X" || e.value("cat", "") == kInnerCommCategory) continue;
      auto action = sched::parse_action(e.at("name").get<std::string>());
      if (!action) throw UserError("name is not an action");
      TimedAction timed;
      timed.rank = int_at(e, "pid");
      timed.action = *action;
      timed.start = e.at("ts").get<double>() * 1e-6;
      timed.end = timed.start + e.at("dur").get<double>() * 1e-6;
      timed.step = int_at(e.at("args"), "step");
      timed.exposed_comm = e.at("args").value("exposed_comm_us", 0.0) * 1e-6;
      timed.cpu = e.at("args").value("cpu_us", 0.0) * 1e-6;
      timed.comm_cpu = e.at("args").value("comm_cpu_us", 0.0) * 1e-6;
      timed.memory = e.at("args").value("memory_bytes", 0.0);
      events.push_back(timed);
    } catch (const std::exception& error) {
      throw UserError("trace event " + std::to_string(index - 1) + ": " + error.what());
    }
  }
  return events;
}

namespace {

// The summary keys of a rank's byte figures that only some runs have (written when > 0, read as 0
// when absent), each with its field (`Rank`: RankSummary, or const RankSummary to read them).
template <typename Rank>
auto optional_byte_fields(Rank& r) {
  using Field = decltype(&r.dp_sent_bytes);
  return std::array<std::pair<const char*, Field>, 8>{
      {{"all_to_all_bytes", &r.all_to_all_bytes},
       {"cp_exchange_bytes", &r.cp_exchange_bytes},
       {"dp_sent_bytes", &r.dp_sent_bytes},
       {"dp_received_bytes", &r.dp_received_bytes},
       {"interface_sent_bytes", &r.interface_sent_bytes},
       {"interface_received_bytes", &r.interface_received_bytes},
       {"interface_sent_packets", &r.interface_sent_packets},
       {"interface_received_packets", &r.interface_received_packets}}};
}

}  // namespace

std::string to_summary_json(const StepSummary& summary) {
  nlohmann::json doc = {{"step_time_s", summary.step_time_s},
                        {"bubble_fraction", summary.bubble_fraction},
                        {"tokens_per_s", summary.tokens_per_s}};
  if (summary.mfu >= 0) doc["mfu"] = summary.mfu;
  if (summary.load_imbalance > 0) doc["load_imbalance"] = summary.load_imbalance;
  if (summary.peak_load_imbalance > 0) doc["peak_load_imbalance"] = summary.peak_load_imbalance;
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < summary.ranks.size(); ++r) {
    const RankSummary& rank = summary.ranks[r];
    ranks.push_back({{"rank", r},
                     {"compute_s", rank.compute_s},
                     {"comm_s", rank.comm_s},
                     {"idle_s", rank.idle_s},
                     {"peak_memory_bytes", rank.peak_memory_bytes},
                     {"model_state_bytes", rank.model_state_bytes},
                     {"memory_ok", rank.memory_ok}});
    for (const auto& [key, value] : optional_byte_fields(rank))
      if (*value > 0) ranks.back()[key] = *value;
  }
  doc["ranks"] = ranks;
  return doc.dump(2) + "\n";
}

StepSummary from_summary_json(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw UserError("malformed JSON");
  if (!doc.is_object() || !doc.contains("ranks") || !doc["ranks"].is_array())
    throw UserError("not a summary: expected an object with a ranks array");
  StepSummary summary;
  try {
    summary.step_time_s = doc.at("step_time_s").get<double>();
    summary.bubble_fraction = doc.at("bubble_fraction").get<double>();
    summary.tokens_per_s = doc.value("tokens_per_s", 0.0);
    summary.mfu = doc.value("mfu", -1.0);
    summary.load_imbalance = doc.value("load_imbalance", 0.0);
    summary.peak_load_imbalance = doc.value("peak_load_imbalance", 0.0);
  } catch (const std::exception& error) {
    throw UserError(std::string("summary: ") + error.what());
  }
  const auto& ranks = doc["ranks"];
  summary.ranks.resize(ranks.size());
  std::vector<bool> seen(ranks.size(), false);
  for (size_t i = 0; i < ranks.size(); ++i) {
    try {
      const auto& r = ranks[i];
      const int rank = r.contains("rank") ? int_at(r, "rank") : static_cast<int>(i);
      if (rank < 0 || rank >= static_cast<int>(ranks.size()) || seen[rank])
        throw UserError("rank " + std::to_string(rank) + " is out of 0.." +
                        std::to_string(ranks.size() - 1) + " or repeated");
      seen[rank] = true;
      RankSummary& out = summary.ranks[rank];
      out.compute_s = r.at("compute_s").get<double>();
      out.comm_s = r.at("comm_s").get<double>();
      out.idle_s = r.at("idle_s").get<double>();
      out.peak_memory_bytes = r.at("peak_memory_bytes").get<double>();
      out.model_state_bytes = r.value("model_state_bytes", 0.0);
      out.memory_ok = r.value("memory_ok", true);
      for (const auto& [key, value] : optional_byte_fields(out)) *value = r.value(key, 0.0);
    } catch (const std::exception& error) {
      throw UserError("summary ranks[" + std::to_string(i) + "]: " + error.what());
    }
  }
  return summary;
}

}  // namespace dtwin::trace
