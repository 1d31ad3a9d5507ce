#include "runtime/measured_summary.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "base/file_writer.hpp"
#include "models/cost/cost_model.hpp"
#include "runtime/expert_counts.hpp"
#include "schedules/transfer.hpp"
#include "trace/step_figures.hpp"
#include "trace/timeline.hpp"

namespace dtwin::rt {
namespace {

// Gloo completes a send only when the sender waits for it, at the end of its step. The
// receiver knows better: the transfer ended when the matching RECV returned. Each SEND's end
// becomes that time (never before its start).
void end_sends_at_receipt(std::vector<trace::TimedAction>& events, const sched::Layout& layout) {
  std::map<std::tuple<int, int, std::string>, double> received;  // (step, rank, RECV) -> end
  for (const trace::TimedAction& e : events)
    if (sched::is_receive(e.action.kind))
      received[{e.step, e.rank, sched::to_string(e.action)}] = e.end;
  for (trace::TimedAction& e : events) {
    if (e.action.kind != sched::ActionKind::SEND_F && e.action.kind != sched::ActionKind::SEND_B)
      continue;
    const sched::Endpoint to = sched::receiver_of(layout, e.rank, e.action);
    auto it = received.find({e.step, to.rank, sched::to_string(to.action)});
    if (it != received.end()) e.end = std::max(e.start, std::min(e.end, it->second));
  }
}

// Each rank's host interface traffic (trainer's "wire" figures, read on non-loopback interfaces
// only), where no other rank's address is its own (their traffic would add).
void set_interface_traffic(trace::StepSummary& summary, const std::vector<nlohmann::json>& wire) {
  std::map<std::string, int> ranks_at;  // address -> ranks with it
  for (const nlohmann::json& w : wire)
    if (w.is_object()) ++ranks_at[w.value("address", "")];
  for (std::size_t rank = 0; rank < wire.size(); ++rank) {
    const nlohmann::json& w = wire[rank];
    if (!w.is_object() || ranks_at[w.value("address", "")] > 1) continue;
    trace::RankSummary& r = summary.ranks[rank];
    r.interface_sent_bytes = w.value("sent_bytes", 0.0);
    r.interface_received_bytes = w.value("received_bytes", 0.0);
    r.interface_sent_packets = w.value("sent_packets", 0.0);
    r.interface_received_packets = w.value("received_packets", 0.0);
  }
}

}  // namespace

void write_measured(c10d::Store& store, const Scenario& scenario, const sched::Layout& layout,
                    const std::string& output_dir) {
  const int world_size = layout.group_count();
  std::vector<trace::TimedAction> events;
  std::vector<double> peak(world_size, 0), model_states(world_size, 0), all_to_all(world_size, 0),
      cp_exchange(world_size, 0), dp_sent(world_size, 0), dp_received(world_size, 0);
  std::vector<ExpertCount> expert_rows;
  std::vector<nlohmann::json> wire(world_size);  // member 0's
  double peak_imbalance = 0;                     // the largest over the processes
  // A schedule rank's timeline is its first tensor-parallel member's (the members run the
  // same actions together); its memory the largest member's.
  for (int rank = 0; rank < world_size; ++rank) {
    for (int member = 0; member < layout.tp; ++member) {
      const std::vector<uint8_t> data =
          store.get("events/" + std::to_string(layout.rank_of(rank, member)));
      const nlohmann::json doc = nlohmann::json::parse(data.begin(), data.end());
      peak[rank] = std::max(peak[rank], doc["peak_memory_bytes"].get<double>());
      model_states[rank] = std::max(model_states[rank], doc["model_state_bytes"].get<double>());
      peak_imbalance = std::max(peak_imbalance, doc.value("peak_load_imbalance", 0.0));
      if (member > 0) continue;
      all_to_all[rank] = doc.value("all_to_all_bytes", 0.0);
      cp_exchange[rank] = doc.value("cp_exchange_bytes", 0.0);
      dp_sent[rank] = doc.value("gradient_sent_bytes", 0.0);
      dp_received[rank] = doc.value("gradient_received_bytes", 0.0);
      wire[rank] = doc.value("wire", nlohmann::json());
      const std::vector<ExpertCount> rows = expert_counts_from_json(doc["tokens_per_expert"]);
      expert_rows.insert(expert_rows.end(), rows.begin(), rows.end());
      for (trace::TimedAction& e : trace::from_chrome_trace(doc["trace"].dump())) {
        e.rank = rank;
        events.push_back(e);
      }
    }
  }
  end_sends_at_receipt(events, layout);
  write_file(output_dir + "/measured.trace.json", trace::to_chrome_trace(events, layout));
  // Over the steps the summary keeps: all but the first (warm-up) when there are more.
  const auto [first, last] = std::minmax_element(
      expert_rows.begin(), expert_rows.end(),
      [](const ExpertCount& a, const ExpertCount& b) { return a.step < b.step; });
  const double imbalance =
      expert_rows.empty()
          ? 0
          : measured_load_imbalance(expert_rows, scenario.layout.ep,
                                    first->step + (last->step > first->step ? 1 : 0));
  write_expert_counts(std::move(expert_rows), output_dir);

  trace::StepSummary summary = trace::summarize_steps(events, world_size, true);
  summary.load_imbalance = imbalance;
  summary.peak_load_imbalance = peak_imbalance;
  for (int rank = 0; rank < world_size; ++rank) {
    summary.ranks[rank].peak_memory_bytes = peak[rank];
    summary.ranks[rank].model_state_bytes = model_states[rank];
    summary.ranks[rank].all_to_all_bytes = all_to_all[rank];
    summary.ranks[rank].cp_exchange_bytes = cp_exchange[rank];
    summary.ranks[rank].dp_sent_bytes = dp_sent[rank];
    summary.ranks[rank].dp_received_bytes = dp_received[rank];
  }
  set_interface_traffic(summary, wire);
  trace::fill_step_figures(summary, scenario, CostModel(scenario));
  write_file(output_dir + "/measured.summary.json", trace::to_summary_json(summary));
}

}  // namespace dtwin::rt
