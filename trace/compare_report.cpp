// The reports of a comparison: explain_gap's paragraph, compare.json, report.md and the stdout
// table (trace/compare.hpp documents each).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "trace/compare.hpp"

namespace dtwin::trace {
namespace {

// Numbers as the reports print them: milliseconds with three decimals, percentages with one.
std::string ms(double seconds) {
  return fmt::format("{:.3f}", seconds * 1e3);
}
std::string signed_ms(double seconds) {
  return fmt::format("{:+.3f}", seconds * 1e3);
}
std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100);
}
std::string relative(double error) {
  return std::isfinite(error) ? fmt::format("{:+.1f}%", error * 100) : "n/a";
}
std::string points(double difference) {
  return fmt::format("{:+.1f} pp", difference * 100);
}

nlohmann::json relative_json(const Figure& f) {
  const double error = f.relative_error();
  return std::isfinite(error) ? nlohmann::json(error) : nlohmann::json(nullptr);
}

double kind_error_sum(const Comparison& c) {
  double sum = 0;
  for (const KindComparison& k : c.kinds) sum += std::abs(k.blocking_error_s());
  return sum;
}

bool is_communication(ActionKind kind) {
  return is_p2p(kind) || is_collective(kind);
}

std::string kind_list(const std::vector<ActionKind>& kinds) {
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i) out += i + 1 == kinds.size() ? " and " : ", ";
    out += kind_name(kinds[i]);
  }
  return out;
}

// report.md's table of the data-parallel gradient bytes per step; empty without them.
std::string dp_bytes_section(const Comparison& c) {
  if (c.dp_bytes.empty()) return "";
  const bool interfaces = std::any_of(c.dp_bytes.begin(), c.dp_bytes.end(), [](const auto& w) {
    return w.interface_sent_bytes > 0 || w.interface_received_bytes > 0;
  });
  std::string md =
      "\n## Data-parallel gradient bytes per step\n\n"
      "Predicted by the simulator and counted at the runtime's communicator, both as Gloo's "
      "algorithms move the buffers (docs/bytes-on-the-wire.md)";
  md += interfaces ? "; the host interface's counters add every frame's headers, the "
                     "acknowledgements and the runtime's other messages.\n\n"
                     "| rank | predicted sent | counted sent | interface sent (frames) | "
                     "predicted received | counted received | interface received (frames) "
                     "|\n|---:|---:|---:|---:|---:|---:|---:|\n"
                   : ".\n\n| rank | predicted sent | counted sent | predicted received | "
                     "counted received |\n|---:|---:|---:|---:|---:|\n";
  for (const WireComparison& w : c.dp_bytes) {
    md += fmt::format("| {} | {:.0f} | {:.0f} | ", w.rank, w.sent.predicted, w.sent.measured);
    if (interfaces)
      md += fmt::format("{:.0f} ({:.0f}) | ", w.interface_sent_bytes, w.interface_sent_packets);
    md += fmt::format("{:.0f} | {:.0f} |", w.received.predicted, w.received.measured);
    if (interfaces)
      md += fmt::format(" {:.0f} ({:.0f}) |", w.interface_received_bytes,
                        w.interface_received_packets);
    md += "\n";
  }
  return md;
}

}  // namespace

std::string explain_gap(const Comparison& c) {
  const double gap = c.step_time_s.error();
  const std::string steps =
      std::to_string(c.measured_steps) + " measured step" + (c.measured_steps == 1 ? "" : "s");
  const std::string bubble = " The bubble is predicted at " + percent(c.bubble_fraction.predicted) +
                             " against " + percent(c.bubble_fraction.measured) + " measured (" +
                             points(c.bubble_fraction.error()) + ").";
  if (gap == 0)
    return "The predicted step time matches the measured one (" + ms(c.step_time_s.measured) +
           " ms over " + steps + ")." + bubble;

  std::string text = "The prediction is " + ms(std::abs(gap)) + " ms (" +
                     percent(std::abs(c.step_time_s.relative_error())) + ") " +
                     (gap > 0 ? "longer" : "shorter") + " than the measured step (" +
                     ms(c.step_time_s.predicted) + " ms against " + ms(c.step_time_s.measured) +
                     " ms, mean of " + steps + "). Averaged over the ranks, " +
                     signed_ms(c.busy_error_s()) +
                     " ms of it is busy time (compute and exposed communication) and " +
                     signed_ms(c.idle_error_s()) + " ms idle time (waiting, the bubble).";
  const std::vector<ActionKind> kinds = explaining_kinds(c);
  const double sum = kind_error_sum(c);
  auto find = [&](ActionKind kind) -> const KindComparison& {
    return *std::find_if(c.kinds.begin(), c.kinds.end(),
                         [&](const KindComparison& x) { return x.kind == kind; });
  };
  if (kinds.empty()) {
    text +=
        " No action kind blocks its rank for a time that errs in that direction, so the gap "
        "comes from how the actions wait for each other rather than from their costs.";
  } else {
    text +=
        " Counting the time each action blocks its rank, the kinds that explain most of the "
        "gap are ";
    for (size_t i = 0; i < kinds.size(); ++i) {
      const KindComparison& k = find(kinds[i]);
      if (i) text += i + 1 == kinds.size() ? " and " : ", ";
      text += std::string(kind_name(k.kind)) + " (" + std::to_string(k.count_per_step) +
              " per step, " + ms(k.mean_blocking_s.predicted) + " ms predicted against " +
              ms(k.mean_blocking_s.measured) + " ms measured, " +
              relative(k.mean_blocking_s.relative_error()) + ": " + signed_ms(c.gap_share_s(k)) +
              " ms of the step per rank, " +
              fmt::format("{:.0f}%", sum > 0 ? std::abs(k.blocking_error_s()) / sum * 100 : 0) +
              " of the kinds' error)";
    }
    text += ".";
  }
  // The largest kind that goes the other way, if any.
  const KindComparison* against = nullptr;
  for (const KindComparison& k : c.kinds)
    if (k.blocking_error_s() * gap < 0 &&
        (!against || std::abs(k.blocking_error_s()) > std::abs(against->blocking_error_s())))
      against = &k;
  if (against)
    text += " " + std::string(kind_name(against->kind)) + " goes the other way (" +
            signed_ms(c.gap_share_s(*against)) + " ms of the step per rank).";
  // Counted by whole durations, communication can look like the culprit: say why it is not.
  const KindComparison* by_duration = nullptr;
  for (const KindComparison& k : c.kinds)
    if (!by_duration || std::abs(k.total_error_s()) > std::abs(by_duration->total_error_s()))
      by_duration = &k;
  if (by_duration && is_communication(by_duration->kind) &&
      std::find(kinds.begin(), kinds.end(), by_duration->kind) == kinds.end())
    text += " By whole durations " + std::string(kind_name(by_duration->kind)) +
            " errs the most (" + ms(by_duration->mean_s.predicted) + " ms predicted against " +
            ms(by_duration->mean_s.measured) +
            " ms measured), but a send runs in the "
            "background until its peer receives and a receive mostly waits for its peer, so only "
            "their exposed transfer time costs step time.";
  if (const auto cores = c.core_error_s())
    text += " Per step and rank, the compute actions' time on a core errs by " +
            signed_ms(cores->cpu_s) + " ms (the cores computing faster or slower than " +
            "predicted), their time waiting for a core by " + signed_ms(cores->wait_s) +
            " ms and the communication inside them by " + signed_ms(cores->inner_comm_s) + " ms.";
  return text + bubble;
}

std::string to_compare_json(const Comparison& c) {
  nlohmann::json doc;
  doc["world_size"] = c.world_size;
  doc["predicted_steps"] = c.predicted_steps;
  doc["measured_steps"] = c.measured_steps;
  doc["dropped_first_step"] = c.dropped_first_step;
  doc["step_time"] = {
      {"predicted_s", c.step_time_s.predicted},    {"measured_s", c.step_time_s.measured},
      {"error_s", c.step_time_s.error()},          {"relative_error", relative_json(c.step_time_s)},
      {"predicted_std_s", c.predicted_step_std_s}, {"measured_std_s", c.measured_step_std_s}};
  doc["bubble"] = {{"predicted_fraction", c.bubble_fraction.predicted},
                   {"measured_fraction", c.bubble_fraction.measured},
                   {"difference_pp", c.bubble_fraction.error() * 100}};
  doc["gap"] = {{"busy_s", c.busy_error_s()}, {"idle_s", c.idle_error_s()}};
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankComparison& r : c.ranks) {
    auto side = [&](auto pick) {
      return nlohmann::json{
          {"compute_s", pick(r.compute_s)}, {"comm_s", pick(r.comm_s)}, {"idle_s", pick(r.idle_s)}};
    };
    ranks.push_back({{"rank", r.rank},
                     {"predicted", side([](const Figure& f) { return f.predicted; })},
                     {"measured", side([](const Figure& f) { return f.measured; })},
                     {"difference", side([](const Figure& f) { return f.error(); })}});
  }
  doc["ranks"] = ranks;
  const double sum = kind_error_sum(c);
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindComparison& k : c.kinds) {
    kinds.push_back({{"kind", std::string(kind_name(k.kind))},
                     {"count_per_step", k.count_per_step},
                     {"predicted_mean_s", k.mean_s.predicted},
                     {"measured_mean_s", k.mean_s.measured},
                     {"error_s", k.mean_s.error()},
                     {"relative_error", relative_json(k.mean_s)},
                     {"total_error_s", k.total_error_s()},
                     {"predicted_blocking_mean_s", k.mean_blocking_s.predicted},
                     {"measured_blocking_mean_s", k.mean_blocking_s.measured},
                     {"blocking_error_s", k.blocking_error_s()},
                     {"gap_share_s", c.gap_share_s(k)},
                     {"share", sum > 0 ? std::abs(k.blocking_error_s()) / sum : 0.0}});
    if (k.mean_cpu_s) {
      kinds.back()["predicted_cpu_mean_s"] = k.mean_cpu_s->predicted;
      kinds.back()["measured_cpu_mean_s"] = k.mean_cpu_s->measured;
      kinds.back()["predicted_core_wait_mean_s"] = k.mean_core_wait_s()->predicted;
      kinds.back()["measured_core_wait_mean_s"] = k.mean_core_wait_s()->measured;
      kinds.back()["predicted_inner_comm_mean_s"] = k.mean_inner_comm_s->predicted;
      kinds.back()["measured_inner_comm_mean_s"] = k.mean_inner_comm_s->measured;
      kinds.back()["predicted_comm_cpu_mean_s"] = k.mean_comm_cpu_s->predicted;
      kinds.back()["measured_comm_cpu_mean_s"] = k.mean_comm_cpu_s->measured;
    }
  }
  doc["kinds"] = kinds;
  if (const auto cores = c.core_error_s())
    doc["cores"] = {{"cpu_error_s", cores->cpu_s},
                    {"core_wait_error_s", cores->wait_s},
                    {"inner_comm_error_s", cores->inner_comm_s}};
  nlohmann::json top = nlohmann::json::array();
  for (const ActionComparison& a : c.top_actions)
    top.push_back({{"rank", a.rank},
                   {"action", a.action},
                   {"predicted_s", a.duration_s.predicted},
                   {"measured_s", a.duration_s.measured},
                   {"error_s", a.duration_s.error()},
                   {"relative_error", relative_json(a.duration_s)}});
  doc["top_actions"] = top;
  for (const auto& [key, figures] : {std::pair{"memory", &c.memory},
                                     {"all_to_all", &c.all_to_all},
                                     {"cp_exchange", &c.cp_exchange}}) {
    if (figures->empty()) continue;
    nlohmann::json rows = nlohmann::json::array();
    for (const ByteComparison& m : *figures)
      rows.push_back({{"rank", m.rank},
                      {"predicted_bytes", m.bytes.predicted},
                      {"measured_bytes", m.bytes.measured},
                      {"relative_error", relative_json(m.bytes)}});
    doc[key] = rows;
  }
  if (!c.dp_bytes.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const WireComparison& w : c.dp_bytes) {
      rows.push_back({{"rank", w.rank},
                      {"predicted_sent_bytes", w.sent.predicted},
                      {"counted_sent_bytes", w.sent.measured},
                      {"predicted_received_bytes", w.received.predicted},
                      {"counted_received_bytes", w.received.measured}});
      if (w.interface_sent_bytes > 0 || w.interface_received_bytes > 0) {
        rows.back()["interface_sent_bytes"] = w.interface_sent_bytes;
        rows.back()["interface_received_bytes"] = w.interface_received_bytes;
        rows.back()["interface_sent_packets"] = w.interface_sent_packets;
        rows.back()["interface_received_packets"] = w.interface_received_packets;
      }
    }
    doc["dp_bytes"] = rows;
  }
  for (const auto& [key, figure] : {std::pair{"load_imbalance", &c.load_imbalance},
                                    {"peak_load_imbalance", &c.peak_load_imbalance}})
    if (*figure)
      doc[key] = {{"predicted", (*figure)->predicted},
                  {"measured", (*figure)->measured},
                  {"relative_error", relative_json(**figure)}};
  nlohmann::json explaining = nlohmann::json::array();
  for (ActionKind kind : explaining_kinds(c)) explaining.push_back(std::string(kind_name(kind)));
  doc["explaining_kinds"] = explaining;
  doc["where_the_prediction_misses"] = explain_gap(c);
  return doc.dump(2) + "\n";
}

std::string to_markdown_report(const Comparison& c, const std::string& title) {
  std::string md = "# Predicted versus measured: " + title + "\n\n";
  const std::string prediction =
      c.predicted_steps == 1
          ? "one simulated step"
          : "the mean of " + std::to_string(c.predicted_steps) +
                " simulated steps, each compute action's seconds varied as the profile measured";
  md += "The prediction is " + prediction + "; the measurement is the mean of " +
        std::to_string(c.measured_steps) + " step" + (c.measured_steps == 1 ? "" : "s") +
        (c.dropped_first_step ? " (the first, warm-up step left out)" : "") + " on " +
        std::to_string(c.world_size) +
        " ranks. Errors are predicted minus measured; relative errors are divided by the "
        "measured value.\n\n";

  md += "| | predicted | measured | error |\n|---|---:|---:|---:|\n";
  md += "| step time (ms) | " + ms(c.step_time_s.predicted) + " | " + ms(c.step_time_s.measured) +
        " | " + signed_ms(c.step_time_s.error()) + " ms (" +
        relative(c.step_time_s.relative_error()) + ") |\n";
  md += "| bubble | " + percent(c.bubble_fraction.predicted) + " | " +
        percent(c.bubble_fraction.measured) + " | " + points(c.bubble_fraction.error()) + " |\n\n";
  if (c.measured_steps > 1 && c.step_time_s.measured > 0) {
    const double sem = c.measured_step_std_s / std::sqrt(static_cast<double>(c.measured_steps));
    md += "One measured step strays from their mean by " + ms(c.measured_step_std_s) +
          " ms (standard deviation, " + percent(c.measured_step_std_s / c.step_time_s.measured) +
          "); the mean's standard error over " + std::to_string(c.measured_steps) + " steps is " +
          ms(sem) + " ms (" + percent(sem / c.step_time_s.measured) + ").";
    if (c.predicted_steps > 1)
      md += " The simulated steps stray from theirs by " + ms(c.predicted_step_std_s) + " ms.";
    md += "\n\n";
  }

  md +=
      "## Per rank (ms per step)\n\n"
      "| rank | compute pred. | compute meas. | compute error | comm pred. | comm meas. | "
      "comm error | idle pred. | idle meas. | idle error |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const RankComparison& r : c.ranks) {
    md += "| " + std::to_string(r.rank);
    for (const Figure* f : {&r.compute_s, &r.comm_s, &r.idle_s})
      md += " | " + ms(f->predicted) + " | " + ms(f->measured) + " | " + signed_ms(f->error());
    md += " |\n";
  }
  md += "\nCommunication is exposed communication only; idle is the step time minus both.\n\n";

  md +=
      "## Per action kind (ms)\n\n"
      "| kind | per step | mean duration pred. | mean duration meas. | error | relative error | "
      "count × error | blocking pred. | blocking meas. | part of the step gap |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const KindComparison& k : c.kinds)
    md += "| " + std::string(kind_name(k.kind)) + " | " + std::to_string(k.count_per_step) + " | " +
          ms(k.mean_s.predicted) + " | " + ms(k.mean_s.measured) + " | " +
          signed_ms(k.mean_s.error()) + " | " + relative(k.mean_s.relative_error()) + " | " +
          signed_ms(k.total_error_s()) + " | " + ms(k.mean_blocking_s.predicted) + " | " +
          ms(k.mean_blocking_s.measured) + " | " + signed_ms(c.gap_share_s(k)) + " |\n";
  md +=
      "\nDurations are means of one action; count × error sums them over a step's actions on all "
      "ranks. Blocking is the time one action holds its rank: its duration for compute, its "
      "exposed transfer time for communication. The part of the step gap is count × the "
      "blocking error / " +
      std::to_string(c.world_size) + " ranks; the parts add up to the busy " +
      signed_ms(c.busy_error_s()) + " ms, and idle time adds " + signed_ms(c.idle_error_s()) +
      " ms, of the " + signed_ms(c.step_time_s.error()) + " ms step-time error.\n";

  if (const auto cores = c.core_error_s()) {
    md +=
        "\n## On the cores (ms per action)\n\n"
        "| kind | CPU pred. | CPU meas. | CPU error | wait pred. | wait meas. | inner comm pred. | "
        "inner comm meas. | its CPU pred. | its CPU meas. |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const KindComparison& k : c.kinds)
      if (k.mean_cpu_s)
        md += "| " + std::string(kind_name(k.kind)) + " | " + ms(k.mean_cpu_s->predicted) + " | " +
              ms(k.mean_cpu_s->measured) + " | " + relative(k.mean_cpu_s->relative_error()) +
              " | " + ms(k.mean_core_wait_s()->predicted) + " | " +
              ms(k.mean_core_wait_s()->measured) + " | " + ms(k.mean_inner_comm_s->predicted) +
              " | " + ms(k.mean_inner_comm_s->measured) + " | " + ms(k.mean_comm_cpu_s->predicted) +
              " | " + ms(k.mean_comm_cpu_s->measured) + " |\n";
    md +=
        "\nCPU is the time one action ran on a core: measured, its thread's CPU time; predicted, "
        "its time alone on a core. Inner comm is the communication inside it (tensor-parallel "
        "collectives), and its CPU the time its helper threads (Gloo's) ran on the cores "
        "meanwhile. Wait is the rest of its duration: time runnable or preempted while other "
        "ranks held the cores. Per step and rank the CPU time errs by " +
        signed_ms(cores->cpu_s) + " ms, the wait by " + signed_ms(cores->wait_s) +
        " ms and the inner communication by " + signed_ms(cores->inner_comm_s) + " ms.\n";
  }

  md +=
      "\n## The ten actions with the largest duration error (ms)\n\n"
      "| # | rank | action | predicted | measured | error | relative error |\n"
      "|---:|---:|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < c.top_actions.size(); ++i) {
    const ActionComparison& a = c.top_actions[i];
    md += "| " + std::to_string(i + 1) + " | " + std::to_string(a.rank) + " | " + a.action + " | " +
          ms(a.duration_s.predicted) + " | " + ms(a.duration_s.measured) + " | " +
          signed_ms(a.duration_s.error()) + " | " + relative(a.duration_s.relative_error()) +
          " |\n";
  }

  if (std::any_of(c.top_actions.begin(), c.top_actions.end(), [](const ActionComparison& a) {
        const auto action = sched::parse_action(a.action);
        return action && is_communication(action->kind);
      }))
    md +=
        "\nA send's duration runs from posting to completion, in the background, and a "
        "receive's includes waiting for its peer, so their durations can be far off without "
        "costing step time.\n";
  md += "\n## Peak memory (MiB)\n\n";
  if (c.memory.empty()) {
    md += "No summaries were given, so peak memory is not compared.\n";
  } else {
    md += "| rank | predicted | measured | relative error |\n|---:|---:|---:|---:|\n";
    for (const ByteComparison& m : c.memory)
      md += "| " + std::to_string(m.rank) + " | " +
            fmt::format("{:.1f}", m.bytes.predicted / (1024.0 * 1024)) + " | " +
            fmt::format("{:.1f}", m.bytes.measured / (1024.0 * 1024)) + " | " +
            relative(m.bytes.relative_error()) + " |\n";
  }
  for (const auto& [title, rows] :
       {std::pair{"MoE all-to-all", &c.all_to_all}, {"Context-parallel ring", &c.cp_exchange}}) {
    if (rows->empty()) continue;
    md += fmt::format("\n## {} bytes per step (MiB)\n\n", title);
    md += "| rank | predicted | measured | relative error |\n|---:|---:|---:|---:|\n";
    for (const ByteComparison& m : *rows)
      md += "| " + std::to_string(m.rank) + " | " +
            fmt::format("{:.3f}", m.bytes.predicted / (1024.0 * 1024)) + " | " +
            fmt::format("{:.3f}", m.bytes.measured / (1024.0 * 1024)) + " | " +
            relative(m.bytes.relative_error()) + " |\n";
  }
  md += dp_bytes_section(c);
  for (const auto& [label, figure] :
       {std::pair{
            "\nMoE load imbalance (the busiest expert-parallel member's copies over the mean)",
            &c.load_imbalance},
        {"In the worst microbatch (sets dropless peak memory)", &c.peak_load_imbalance}})
    if (*figure)
      md += fmt::format("{}: {:.3f} set, {:.3f} counted ({}).\n", label, (*figure)->predicted,
                        (*figure)->measured, relative((*figure)->relative_error()));

  md += "\n## Where the prediction misses\n\n" + explain_gap(c) + "\n";
  return md;
}

std::string format_compare_table(const Comparison& c, const std::string& title) {
  std::string out = title + ": " + std::to_string(c.measured_steps) + " measured step" +
                    (c.measured_steps == 1 ? "" : "s") +
                    (c.dropped_first_step ? " (warm-up step dropped)" : "") + ", " +
                    std::to_string(c.world_size) + " ranks\n";
  out += fmt::format("{:<10} {:>12} {:>12} {:>12}\n", "", "predicted", "measured", "error");
  out +=
      fmt::format("{:<10} {:>12.3f} {:>12.3f} {:>12}\n", "step_ms", c.step_time_s.predicted * 1e3,
                  c.step_time_s.measured * 1e3, relative(c.step_time_s.relative_error()));
  out += fmt::format("{:<10} {:>12.3f} {:>12.3f}\n", "step_sd_ms", c.predicted_step_std_s * 1e3,
                     c.measured_step_std_s * 1e3);
  out +=
      fmt::format("{:<10} {:>12} {:>12} {:>12}\n", "bubble", percent(c.bubble_fraction.predicted),
                  percent(c.bubble_fraction.measured), points(c.bubble_fraction.error()));
  for (const auto& [name, figure] :
       {std::pair{"moe_rho", &c.load_imbalance}, {"peak_rho", &c.peak_load_imbalance}})
    if (*figure)
      out += fmt::format("{:<10} {:>12.3f} {:>12.3f} {:>12}\n", name, (*figure)->predicted,
                         (*figure)->measured, relative((*figure)->relative_error()));
  out += fmt::format("{:<10} {:>5} {:>12} {:>12} {:>12} {:>10}\n", "kind", "count", "pred_ms",
                     "meas_ms", "error", "gap_ms");
  for (const KindComparison& k : c.kinds)
    out += fmt::format("{:<10} {:>5} {:>12.3f} {:>12.3f} {:>12} {:>+10.3f}\n", kind_name(k.kind),
                       k.count_per_step, k.mean_s.predicted * 1e3, k.mean_s.measured * 1e3,
                       relative(k.mean_s.relative_error()), c.gap_share_s(k) * 1e3);
  out += "gap_ms: the kind's part of the step-time error (blocking time per rank); busy " +
         signed_ms(c.busy_error_s()) + " + idle " + signed_ms(c.idle_error_s()) + " = " +
         signed_ms(c.step_time_s.error()) + " ms\n";
  if (const auto cores = c.core_error_s()) {
    out += fmt::format("{:<10} {:>11} {:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>13} {:>13}\n",
                       "on cores", "pred_cpu_ms", "meas_cpu_ms", "error", "pred_wait", "meas_wait",
                       "pred_comm", "meas_comm", "pred_comm_cpu", "meas_comm_cpu");
    for (const KindComparison& k : c.kinds)
      if (k.mean_cpu_s)
        out += fmt::format(
            "{:<10} {:>11.3f} {:>11.3f} {:>8} {:>11.3f} {:>11.3f} {:>11.3f} {:>11.3f} {:>13.3f} "
            "{:>13.3f}\n",
            kind_name(k.kind), k.mean_cpu_s->predicted * 1e3, k.mean_cpu_s->measured * 1e3,
            relative(k.mean_cpu_s->relative_error()), k.mean_core_wait_s()->predicted * 1e3,
            k.mean_core_wait_s()->measured * 1e3, k.mean_inner_comm_s->predicted * 1e3,
            k.mean_inner_comm_s->measured * 1e3, k.mean_comm_cpu_s->predicted * 1e3,
            k.mean_comm_cpu_s->measured * 1e3);
    out +=
        "cpu: time on a core (measured: thread CPU time); comm: communication inside, comm_cpu its "
        "helper threads' time on a core; wait: the rest; per step and rank, cpu " +
        signed_ms(cores->cpu_s) + " + wait " + signed_ms(cores->wait_s) + " + comm " +
        signed_ms(cores->inner_comm_s) + " ms\n";
  }
  const std::vector<ActionKind> kinds = explaining_kinds(c);
  if (!kinds.empty()) out += "the step-time gap comes mostly from " + kind_list(kinds) + "\n";
  return out;
}

}  // namespace dtwin::trace
