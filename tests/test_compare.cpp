// Predicted versus measured (trace/compare.hpp) on a simulated quickstart step
// (tests/golden/quickstart_predicted.trace.json, written by `dtwin simulate
// scenarios/quickstart.yaml`) and measured timelines made from it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/user_error.hpp"
#include "trace/compare.hpp"
#include "trace/summary_table.hpp"
#include "trace/timeline.hpp"

namespace {

using dtwin::sched::ActionKind;
using dtwin::trace::compare_timelines;
using dtwin::trace::Comparison;
using dtwin::trace::TimedAction;
using Events = std::vector<TimedAction>;

Events quickstart_prediction() {
  std::ifstream in(std::string(DTWIN_SOURCE_DIR) + "/tests/golden/quickstart_predicted.trace.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return dtwin::trace::from_chrome_trace(text.str());
}

// Every time t becomes shift + k t (durations and exposed communication scale by k), as step
// `step`.
Events transformed(const Events& events, double k, double shift, int step) {
  Events out = events;
  for (TimedAction& e : out) {
    e.start = shift + k * e.start;
    e.end = shift + k * e.end;
    e.exposed_comm *= k;
    e.step = step;
  }
  return out;
}

Events concat(Events a, const Events& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A measured run of a warm-up step (stretched by 5, to be dropped) and one step stretched by k
// and shifted.
Events measured_run(const Events& predicted, double k, double shift) {
  return concat(transformed(predicted, 5.0, 0.0, 0), transformed(predicted, k, 10.0 + shift, 1));
}

std::string compare_error(const Events& predicted, const Events& measured) {
  try {
    compare_timelines(predicted, measured);
  } catch (const dtwin::UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("compare: a trace against itself has no error") {
  const Events predicted = quickstart_prediction();
  REQUIRE(predicted.size() == 59);
  // Two identical steps, the second after the first.
  const Events measured =
      concat(transformed(predicted, 1.0, 0.0, 0), transformed(predicted, 1.0, 2.0, 1));
  dtwin::trace::StepSummary summary = dtwin::trace::summarize(predicted, 3);
  summary.ranks[1].peak_memory_bytes = 1e8;
  const Comparison c = compare_timelines(predicted, measured, &summary, &summary);
  CHECK(c.world_size == 3);
  CHECK(c.measured_steps == 1);
  CHECK(c.dropped_first_step);
  CHECK(c.step_time_s.predicted == Approx(1.215447).epsilon(1e-4));
  CHECK(std::abs(c.step_time_s.relative_error()) < 1e-9);
  CHECK(std::abs(c.bubble_fraction.error()) < 1e-9);
  REQUIRE(c.kinds.size() == 7);  // F, B, SEND_F, RECV_F, SEND_B, RECV_B, OPTIM
  CHECK(c.kinds[0].kind == ActionKind::F);
  CHECK(c.kinds[0].count_per_step == 12);
  for (const auto& k : c.kinds) {
    INFO(dtwin::sched::kind_name(k.kind));
    CHECK(std::abs(k.mean_s.relative_error()) < 1e-9);
  }
  for (const auto& r : c.ranks)
    for (const auto* f : {&r.compute_s, &r.comm_s, &r.idle_s}) CHECK(std::abs(f->error()) < 1e-9);
  CHECK(c.top_actions.size() == 10);
  for (const auto& a : c.top_actions) CHECK(std::abs(a.duration_s.error()) < 1e-9);
  REQUIRE(c.memory.size() == 3);
  CHECK(c.memory[1].bytes.measured == 1e8);
  CHECK(c.memory[1].bytes.relative_error() == 0);
  CHECK(dtwin::trace::explaining_kinds(c).empty());
}

TEST_CASE("compare: a measurement stretched by k gives a relative error of 1/k - 1") {
  const Events predicted = quickstart_prediction();
  for (double k : {1.25, 0.8, 2.0}) {
    INFO("k = " << k);
    const Comparison c = compare_timelines(predicted, measured_run(predicted, k, 0.37));
    const double expected = 1 / k - 1;
    CHECK(c.step_time_s.measured == Approx(k * c.step_time_s.predicted));
    CHECK(std::abs(c.step_time_s.relative_error() - expected) < 1e-9);
    CHECK(std::abs(c.bubble_fraction.error()) < 1e-9);  // idle and step time scale alike
    for (const auto& kind : c.kinds) {
      INFO(dtwin::sched::kind_name(kind.kind));
      CHECK(std::abs(kind.mean_s.relative_error() - expected) < 1e-9);
    }
    for (const auto& a : c.top_actions)
      CHECK(std::abs(a.duration_s.relative_error() - expected) < 1e-9);
    for (const auto& r : c.ranks) CHECK(std::abs(r.compute_s.relative_error() - expected) < 1e-9);
    // The kinds with the most time explain the gap: B (the largest) first.
    const auto explaining = dtwin::trace::explaining_kinds(c);
    REQUIRE(!explaining.empty());
    CHECK(explaining.front() == ActionKind::B);
    CHECK_THAT(dtwin::trace::explain_gap(c), Catch::Contains(k > 1 ? "shorter" : "longer"));
  }
}

TEST_CASE("compare: a shifted measurement has no error") {
  const Events predicted = quickstart_prediction();
  const Comparison c = compare_timelines(predicted, measured_run(predicted, 1.0, 123.456));
  CHECK(std::abs(c.step_time_s.relative_error()) < 1e-9);
  CHECK(std::abs(c.bubble_fraction.error()) < 1e-9);
  for (const auto& kind : c.kinds) CHECK(std::abs(kind.mean_s.relative_error()) < 1e-9);
}

TEST_CASE("compare: a single measured step is kept, and the warm-up step is not validated") {
  const Events predicted = quickstart_prediction();
  const Comparison one = compare_timelines(predicted, transformed(predicted, 2.0, 1.0, 7));
  CHECK(one.measured_steps == 1);
  CHECK_FALSE(one.dropped_first_step);
  CHECK(std::abs(one.step_time_s.relative_error() + 0.5) < 1e-9);
  // A warm-up step with an extra action is dropped before the schedules are compared.
  Events warmup = transformed(predicted, 1.0, 0.0, 0);
  warmup.pop_back();
  const Comparison c =
      compare_timelines(predicted, concat(warmup, concat(transformed(predicted, 1.0, 5.0, 1),
                                                         transformed(predicted, 1.0, 10.0, 2))));
  CHECK(c.measured_steps == 2);
  CHECK(std::abs(c.step_time_s.relative_error()) < 1e-9);
}

TEST_CASE("compare: the measured steps' spread, in compare.json and report.md") {
  const Events predicted = quickstart_prediction();
  // A warm-up step (stretched by 5, dropped), then steps of T, 1.2 T and 0.8 T: their mean is T
  // and their standard deviation T sqrt(0.08 / 3).
  Events measured = transformed(predicted, 5.0, 0.0, 0);
  double shift = 10;
  int step = 1;
  for (double k : {1.0, 1.2, 0.8}) {
    measured = concat(measured, transformed(predicted, k, shift, step++));
    shift += 5;
  }
  const Comparison c = compare_timelines(predicted, measured);
  const double t = c.step_time_s.predicted;
  CHECK(c.measured_steps == 3);
  CHECK(c.step_time_s.measured == Approx(t));
  CHECK(c.measured_step_std_s == Approx(t * std::sqrt(0.08 / 3)));
  const auto doc = nlohmann::json::parse(dtwin::trace::to_compare_json(c));
  CHECK(doc["step_time"]["measured_std_s"].get<double>() == Approx(c.measured_step_std_s));
  // 16.3% of the mean, and a standard error of 9.4% over 3 steps.
  const std::string md = dtwin::trace::to_markdown_report(c, "spread");
  CHECK_THAT(md, Catch::Contains("(standard deviation, 16.3%)"));
  CHECK_THAT(md, Catch::Contains("standard error over 3 steps"));
  CHECK_THAT(md, Catch::Contains("(9.4%)"));
  // One measured step has no spread, and the report says nothing of it.
  const Comparison one = compare_timelines(predicted, transformed(predicted, 2.0, 1.0, 7));
  CHECK(one.measured_step_std_s == 0);
  CHECK_THAT(dtwin::trace::to_markdown_report(one, "one"), !Catch::Contains("standard deviation"));
}

TEST_CASE("compare: sampled predicted steps, their mean against the measured mean") {
  const Events step = quickstart_prediction();
  const double t = compare_timelines(step, measured_run(step, 1.0, 0.0)).step_time_s.predicted;
  // Predicted steps of 1.1 T and 0.9 T: mean T, standard deviation 0.1 T, and a measured T.
  const Events sampled = concat(transformed(step, 1.1, 0.0, 0), transformed(step, 0.9, 5.0, 1));
  const Comparison c = compare_timelines(sampled, measured_run(step, 1.0, 0.0));
  CHECK(c.predicted_steps == 2);
  CHECK(c.step_time_s.predicted == Approx(t));
  CHECK(c.step_time_s.error() == Approx(0).margin(1e-12));
  CHECK(c.predicted_step_std_s == Approx(0.1 * t));
  // Counts are per step, durations means over the steps: as for one step.
  const Comparison one = compare_timelines(step, measured_run(step, 1.0, 0.0));
  REQUIRE(c.kinds.size() == one.kinds.size());
  for (std::size_t i = 0; i < c.kinds.size(); ++i) {
    CHECK(c.kinds[i].count_per_step == one.kinds[i].count_per_step);
    CHECK(c.kinds[i].mean_s.predicted == Approx(one.kinds[i].mean_s.predicted));
  }
  const auto doc = nlohmann::json::parse(dtwin::trace::to_compare_json(c));
  CHECK(doc["predicted_steps"] == 2);
  CHECK(doc["step_time"]["predicted_std_s"].get<double>() == Approx(0.1 * t));
  CHECK_THAT(dtwin::trace::to_markdown_report(c, "sampled"),
             Catch::Contains("The prediction is the mean of 2 simulated steps"));
  CHECK(nlohmann::json::parse(dtwin::trace::to_compare_json(one))["predicted_steps"] == 1);
}

TEST_CASE("compare: timelines of different schedules are rejected with a clear message") {
  const Events predicted = quickstart_prediction();
  const Events good = measured_run(predicted, 1.0, 0.0);

  SECTION("an action dropped") {
    Events measured = good;
    const auto it = std::find_if(measured.begin(), measured.end(), [](const TimedAction& e) {
      return e.step == 1 && e.rank == 1 && dtwin::sched::to_string(e.action) == "1F3";
    });
    REQUIRE(it != measured.end());
    measured.erase(it);
    CHECK(compare_error(predicted, measured) ==
          "rank 1 did not run 1F3 in measured step 1 but the prediction has it");
  }
  SECTION("an action renamed") {
    Events measured = good;
    for (TimedAction& e : measured)
      if (e.step == 1 && e.rank == 1 && dtwin::sched::to_string(e.action) == "1F3")
        e.action.microbatch = 4;
    CHECK(compare_error(predicted, measured) ==
          "rank 1 ran 1F4 in measured step 1 but the prediction has no such action");
  }
  SECTION("an action run twice") {
    Events measured = good;
    measured.push_back(measured.back());
    CHECK_THAT(compare_error(predicted, measured),
               Catch::Contains("2 times in measured step 1 but the prediction has it once"));
  }
  SECTION("a rank missing from the measurement") {
    Events measured;
    for (const TimedAction& e : good)
      if (e.rank != 2) measured.push_back(e);
    CHECK(compare_error(predicted, measured) ==
          "predicted has 3 ranks, measured 2: predicted rank 2 is missing from the measurement");
  }
  SECTION("a rank missing from the prediction") {
    Events measured = good;
    for (const TimedAction& e : good)
      if (e.rank == 0) {
        measured.push_back(e);
        measured.back().rank = 3;
      }
    CHECK(compare_error(predicted, measured) ==
          "predicted has 3 ranks, measured 4: measured rank 3 is missing from the prediction");
  }
  SECTION("a rank absent from one measured step") {
    Events measured = good;
    for (const TimedAction& e : transformed(predicted, 1.0, 20.0, 2))
      if (e.rank != 0) measured.push_back(e);
    CHECK(compare_error(predicted, measured) == "measured step 2 has no actions on rank 0");
  }
  SECTION("predicted steps that differ, empty traces, summaries of another size") {
    Events sampled = concat(predicted, transformed(predicted, 1.0, 5.0, 1));
    sampled.erase(std::find_if(sampled.begin(), sampled.end(), [](const TimedAction& e) {
      return e.step == 1 && e.rank == 1 && dtwin::sched::to_string(e.action) == "1F3";
    }));
    CHECK(compare_error(sampled, good) ==
          "rank 1 did not run 1F3 in predicted step 1 but the prediction has it");
    CHECK(compare_error({}, good) == "the predicted trace has no actions");
    CHECK(compare_error(predicted, {}) == "the measured trace has no actions");
    dtwin::trace::StepSummary two;
    two.ranks.resize(2);
    CHECK_THROWS_WITH(compare_timelines(predicted, good, &two, nullptr),
                      "the predicted summary has 2 ranks, the traces 3");
  }
}

TEST_CASE("compare: the kinds that explain the step-time gap") {
  Comparison c;
  c.world_size = 2;
  c.measured_steps = 4;
  c.step_time_s = {1.0, 2.0};
  c.bubble_fraction = {0.2, 0.25};
  // Busy -0.4 s and idle -0.6 s per rank on average: the -1 s gap.
  c.ranks = {{0, {0.5, 0.9}, {0, 0}, {0.5, 1.1}}, {1, {0.5, 0.9}, {0, 0}, {0.5, 1.1}}};
  c.kinds = {{ActionKind::F, 4, {0.1, 0.3}, {0.1, 0.3}},        // -0.8 s per step
             {ActionKind::B, 4, {0.2, 0.25}, {0.2, 0.25}},      // -0.2 s
             {ActionKind::SEND_F, 4, {0.01, 0.5}, {0.01, 0}}};  // +0.04 s blocking, the other way
  CHECK(dtwin::trace::explaining_kinds(c) == std::vector<ActionKind>{ActionKind::F});
  CHECK(c.gap_share_s(c.kinds[0]) == Approx(-0.4));
  const std::string text = dtwin::trace::explain_gap(c);
  CHECK_THAT(text, Catch::Contains("1000.000 ms (50.0%) shorter than the measured step"));
  CHECK_THAT(text, Catch::Contains("-400.000 ms of it is busy time"));
  CHECK_THAT(text, Catch::Contains("-600.000 ms idle time"));
  CHECK_THAT(text, Catch::Contains("are F (4 per step, 100.000 ms predicted against 300.000 ms "
                                   "measured, -66.7%: -400.000 ms of the step per rank, 77%"));
  CHECK_THAT(text, Catch::Contains("SEND_F goes the other way (+20.000 ms of the step per rank)"));
  // SEND_F's whole durations err the most (-1.96 s per step), which is not a step-time cost.
  CHECK_THAT(text, Catch::Contains("By whole durations SEND_F errs the most"));
  CHECK_THAT(text, Catch::Contains("(-5.0 pp)"));
  c.kinds[1].mean_blocking_s.measured = 0.35;  // B: -0.6 s; F alone covers 57%, F and B together
  CHECK(dtwin::trace::explaining_kinds(c) == std::vector<ActionKind>{ActionKind::F, ActionKind::B});
  c.step_time_s = {2.0, 2.0};
  CHECK(dtwin::trace::explaining_kinds(c).empty());
  CHECK_THAT(dtwin::trace::explain_gap(c), Catch::StartsWith("The predicted step time matches"));
}

TEST_CASE("compare: the kinds' parts of the gap add up to the busy error") {
  const Events predicted = quickstart_prediction();
  const Comparison c = compare_timelines(predicted, measured_run(predicted, 1.25, 0.0));
  double parts = 0;
  for (const auto& k : c.kinds) parts += c.gap_share_s(k);
  CHECK(parts == Approx(c.busy_error_s()).epsilon(1e-9));
  CHECK(c.busy_error_s() + c.idle_error_s() == Approx(c.step_time_s.error()).epsilon(1e-9));
  for (const auto& k : c.kinds) {
    // Compute blocks for its whole duration; communication only for its exposed transfer.
    if (dtwin::sched::is_compute(k.kind)) CHECK(k.mean_blocking_s.predicted == k.mean_s.predicted);
    if (dtwin::sched::is_p2p(k.kind)) CHECK(k.mean_blocking_s.predicted < k.mean_s.predicted);
  }
}

TEST_CASE("compare: compare.json, report.md and the stdout table") {
  const Events predicted = quickstart_prediction();
  dtwin::trace::StepSummary summary = dtwin::trace::summarize(predicted, 3);
  for (auto& r : summary.ranks) r.peak_memory_bytes = 1 << 20;
  const Comparison c =
      compare_timelines(predicted, measured_run(predicted, 1.25, 0.0), &summary, &summary);
  const auto doc = nlohmann::json::parse(dtwin::trace::to_compare_json(c));
  CHECK(doc["world_size"] == 3);
  CHECK(doc["measured_steps"] == 1);
  CHECK(doc["dropped_first_step"] == true);
  CHECK(doc["step_time"]["relative_error"].get<double>() == Approx(-0.2));
  CHECK(doc["step_time"]["predicted_s"].get<double>() == Approx(c.step_time_s.predicted));
  CHECK(std::abs(doc["bubble"]["difference_pp"].get<double>()) < 1e-7);
  CHECK(doc["ranks"].size() == 3);
  CHECK(doc["ranks"][2]["measured"]["compute_s"].get<double>() ==
        Approx(1.25 * doc["ranks"][2]["predicted"]["compute_s"].get<double>()));
  CHECK(doc["kinds"][1]["kind"] == "B");
  CHECK(doc["kinds"][1]["relative_error"].get<double>() == Approx(-0.2));
  CHECK(doc["top_actions"].size() == 10);
  // Largest |error| first; here the longest action, rank 0's wait for the first gradient.
  CHECK(doc["top_actions"][0]["action"] == "0RECV_B0");
  for (size_t i = 1; i < doc["top_actions"].size(); ++i)
    CHECK(std::abs(doc["top_actions"][i - 1]["error_s"].get<double>()) >=
          std::abs(doc["top_actions"][i]["error_s"].get<double>()));
  CHECK(doc["memory"][0]["relative_error"] == 0);
  CHECK(doc["explaining_kinds"][0] == "B");
  CHECK(doc["where_the_prediction_misses"].get<std::string>().size() > 100);

  const std::string md = dtwin::trace::to_markdown_report(c, "quickstart");
  for (const char* part : {"# Predicted versus measured: quickstart", "| step time (ms) |",
                           "| bubble |", "## Per rank", "## Per action kind", "## The ten actions",
                           "## Peak memory", "## Where the prediction misses", "| B | 12 |"})
    CHECK_THAT(md, Catch::Contains(part));
  const std::string table = dtwin::trace::format_compare_table(c, "compare quickstart");
  CHECK_THAT(table,
             Catch::StartsWith("compare quickstart: 1 measured step (warm-up step dropped)"));
  CHECK_THAT(table, Catch::Contains("-20.0%"));
  CHECK_FALSE(doc.contains("load_imbalance"));  // a dense model's summaries have none

  // An MoE run: the scenario's imbalance against the counted one, in all three outputs.
  dtwin::trace::StepSummary set = summary, counted = summary;
  set.load_imbalance = 1.16;
  counted.load_imbalance = 1.25;
  set.peak_load_imbalance = 1.9;
  counted.peak_load_imbalance = 1.95;
  const Comparison moe =
      compare_timelines(predicted, measured_run(predicted, 1.25, 0.0), &set, &counted);
  REQUIRE(moe.load_imbalance);
  CHECK(moe.load_imbalance->relative_error() == Approx(1.16 / 1.25 - 1));
  const auto moe_doc = nlohmann::json::parse(dtwin::trace::to_compare_json(moe));
  CHECK(moe_doc["load_imbalance"]["measured"].get<double>() == 1.25);
  CHECK_THAT(dtwin::trace::to_markdown_report(moe, "moe"),
             Catch::Contains("1.160 set, 1.250 counted (-7.2%)"));
  CHECK(moe_doc["peak_load_imbalance"]["predicted"].get<double>() == 1.9);
  CHECK_THAT(dtwin::trace::format_compare_table(moe, "moe"),
             Catch::Contains("moe_rho") && Catch::Contains("peak_rho"));
}

TEST_CASE("compare: CPU time and waiting for a core, where both timelines have them") {
  // Predicted: each compute action on a core for 0.8 of its duration and communicating inside
  // it for 0.1. Measured: the step stretched by 1.25, on a core for 0.9 of each duration and
  // communicating for 0.05. The collectives' helper threads on a core for a fifth of that.
  const auto on_cores = [](Events events, double fraction, double comm) {
    for (TimedAction& e : events)
      if (dtwin::sched::is_compute(e.action.kind) || e.action.kind == ActionKind::OPTIM) {
        e.cpu = fraction * (e.end - e.start);
        e.exposed_comm = comm * (e.end - e.start);
        e.comm_cpu = 0.2 * e.exposed_comm;
      }
    return events;
  };
  Events predicted = on_cores(quickstart_prediction(), 0.8, 0.1);
  // The Chrome trace keeps the CPU times.
  const dtwin::sched::Layout quickstart{.pp = 3, .microbatches = 4};
  const Events read =
      dtwin::trace::from_chrome_trace(dtwin::trace::to_chrome_trace(predicted, quickstart));
  REQUIRE(read.size() == predicted.size());
  for (size_t i = 0; i < read.size(); ++i) {
    CHECK(read[i].cpu == Approx(predicted[i].cpu));
    CHECK(read[i].comm_cpu == Approx(predicted[i].comm_cpu));
  }

  Events measured = on_cores(measured_run(predicted, 1.25, 0.0), 0.9, 0.05);
  const Comparison c = compare_timelines(predicted, measured);
  double cpu_error = 0, wait_error = 0;
  for (const auto& k : c.kinds) {
    INFO(dtwin::sched::kind_name(k.kind));
    const bool compute = dtwin::sched::is_compute(k.kind) || k.kind == ActionKind::OPTIM;
    REQUIRE(k.mean_cpu_s.has_value() == compute);
    if (!compute) continue;
    CHECK(k.mean_cpu_s->predicted == Approx(0.8 * k.mean_s.predicted));
    CHECK(k.mean_cpu_s->relative_error() == Approx(0.8 / (0.9 * 1.25) - 1));
    CHECK(k.mean_core_wait_s()->predicted == Approx(0.1 * k.mean_s.predicted));
    CHECK(k.mean_core_wait_s()->measured == Approx(0.05 * k.mean_s.measured));
    CHECK(k.mean_inner_comm_s->relative_error() == Approx(0.1 / (0.05 * 1.25) - 1));
    CHECK(k.mean_comm_cpu_s->predicted == Approx(0.02 * k.mean_s.predicted));
    CHECK(k.mean_comm_cpu_s->measured == Approx(0.01 * k.mean_s.measured));
    cpu_error += k.count_per_step * k.mean_cpu_s->error() / 3;
    wait_error += k.count_per_step * k.mean_core_wait_s()->error() / 3;
  }
  REQUIRE(c.core_error_s().has_value());
  CHECK(c.core_error_s()->cpu_s == Approx(cpu_error));
  CHECK(c.core_error_s()->wait_s == Approx(wait_error));
  // The three parts add up to the compute kinds' duration error per rank.
  double duration_error = 0;
  for (const auto& k : c.kinds)
    if (k.mean_cpu_s) duration_error += k.total_error_s() / 3;
  const auto parts = *c.core_error_s();
  CHECK(parts.cpu_s + parts.wait_s + parts.inner_comm_s == Approx(duration_error));
  const auto doc = nlohmann::json::parse(dtwin::trace::to_compare_json(c));
  CHECK(doc["cores"]["cpu_error_s"].get<double>() == Approx(cpu_error));
  CHECK(doc["kinds"][0]["measured_cpu_mean_s"].get<double>() ==
        Approx(c.kinds[0].mean_cpu_s->measured));
  CHECK(doc["kinds"][0]["predicted_comm_cpu_mean_s"].get<double>() ==
        Approx(c.kinds[0].mean_comm_cpu_s->predicted));
  CHECK_THAT(dtwin::trace::to_markdown_report(c, "q"), Catch::Contains("## On the cores"));
  CHECK_THAT(dtwin::trace::format_compare_table(c, "q"), Catch::Contains("meas_comm_cpu"));
  CHECK(doc["cores"]["inner_comm_error_s"].get<double>() == Approx(parts.inner_comm_s));
  CHECK_THAT(dtwin::trace::explain_gap(c), Catch::Contains("waiting for a core"));

  // One measured B without a CPU time: B is not split; the other kinds still are.
  for (TimedAction& e : measured)
    if (e.step == 1 && e.action.kind == ActionKind::B) {
      e.cpu = 0;
      break;
    }
  const Comparison partial = compare_timelines(predicted, measured);
  for (const auto& k : partial.kinds)
    if (k.kind == ActionKind::B)
      CHECK_FALSE(k.mean_cpu_s);
    else if (k.kind == ActionKind::F)
      CHECK(k.mean_cpu_s);
  // Without CPU times on one side, nothing is split and the reports say nothing of cores.
  const Comparison none = compare_timelines(quickstart_prediction(), measured);
  CHECK_FALSE(none.core_error_s());
  CHECK_FALSE(nlohmann::json::parse(dtwin::trace::to_compare_json(none)).contains("cores"));
  CHECK_THAT(dtwin::trace::to_markdown_report(none, "q"), !Catch::Contains("## On the cores"));
}

TEST_CASE("summary JSON round-trips and rejects malformed input") {
  dtwin::trace::StepSummary s;
  s.step_time_s = 1.5;
  s.bubble_fraction = 0.25;
  s.tokens_per_s = 100;
  s.load_imbalance = 1.162;
  s.peak_load_imbalance = 1.9;
  s.ranks.resize(2);
  s.ranks[1] = {0.5, 0.1, 0.9, 4096, false, 2048};
  const auto back = dtwin::trace::from_summary_json(dtwin::trace::to_summary_json(s));
  CHECK(back.step_time_s == 1.5);
  CHECK(back.mfu == -1);
  CHECK(back.load_imbalance == 1.162);
  CHECK(back.peak_load_imbalance == 1.9);
  REQUIRE(back.ranks.size() == 2);
  CHECK(back.ranks[1].peak_memory_bytes == 4096);
  CHECK(back.ranks[1].model_state_bytes == 2048);
  CHECK_FALSE(back.ranks[1].memory_ok);
  CHECK_THROWS_WITH(dtwin::trace::from_summary_json("{"), "malformed JSON");
  CHECK_THROWS_WITH(dtwin::trace::from_summary_json("{\"ranks\": []}"),
                    Catch::Contains("step_time_s"));
  CHECK_THROWS_WITH(
      dtwin::trace::from_summary_json(
          R"({"step_time_s": 1, "bubble_fraction": 0, "ranks": [{"rank": 0, "compute_s": 1}]})"),
      Catch::Contains("ranks[0]"));
}

TEST_CASE("summary table: rows in rank order, TP groups labelled with their ranks") {
  dtwin::trace::StepSummary summary;
  summary.step_time_s = 1;
  summary.mfu = -1;
  summary.ranks.resize(20);
  summary.ranks[10].compute_s = 0.5;  // the busiest row, in the left-out middle
  const std::string table = dtwin::trace::format_summary_table(summary, "t", 4, 8);
  std::vector<std::string> labels;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    labels.push_back(first);
  }
  const std::vector<std::string> expected = {"t:",    "one",   "ranks", "0-3",   "4-7",
                                             "8-11",  "12-15", "...",   "40-43", "...",
                                             "64-67", "68-71", "72-75", "76-79"};
  CHECK(labels == expected);
  CHECK_THAT(table, Catch::Contains("one row per tensor-parallel group of 4 ranks"));
}
