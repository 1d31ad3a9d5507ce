#include "schedules/format.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/user_error.hpp"

namespace dtwin::sched {

std::string to_text(const Schedule& schedule) {
  std::ostringstream out;
  for (size_t rank = 0; rank < schedule.ranks.size(); ++rank) {
    out << "rank " << rank << ":";
    for (const Action& a : schedule.ranks[rank]) out << " " << to_string(a);
    out << "\n";
  }
  return out.str();
}

Schedule parse_text(const std::string& text, const std::string& name, const Layout& layout) {
  Schedule schedule{name, layout, {}};
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream tokens(line);
    std::string word, label;
    tokens >> word >> label;
    const std::string expected = "rank " + std::to_string(schedule.ranks.size()) + ":";
    if (word + " " + label != expected)
      throw UserError("line " + std::to_string(number) + ": expected '" + expected + "', got '" +
                      word + " " + label + "'");
    ActionList& actions = schedule.ranks.emplace_back();
    for (std::string token; tokens >> token;) {
      auto action = parse_action(token);
      if (!action)
        throw UserError("line " + std::to_string(number) + ": '" + token +
                        "' is not an action such as 0F1, 1SEND_B0 or 0OPTIM");
      actions.push_back(*action);
    }
  }
  return schedule;
}

std::string to_csv(const Schedule& schedule) {
  std::ostringstream out;
  out << "rank,step,action,stage,kind,microbatch\n";
  for (size_t rank = 0; rank < schedule.ranks.size(); ++rank)
    for (size_t step = 0; step < schedule.ranks[rank].size(); ++step) {
      const Action& a = schedule.ranks[rank][step];
      out << rank << "," << step << "," << to_string(a) << "," << a.stage << ","
          << kind_name(a.kind) << ",";
      if (has_microbatch(a.kind)) out << a.microbatch;
      out << "\n";
    }
  return out.str();
}

std::string to_json(const Schedule& schedule, const DryRun* dry) {
  const Layout& l = schedule.layout;
  nlohmann::json doc;
  doc["name"] = schedule.name;
  doc["layout"] = {{"dp", l.dp},
                   {"pp", l.pp},
                   {"virtual_stages", l.virtual_stages},
                   {"microbatches", l.microbatches},
                   {"dp_sync", kDpSyncNames.name(l.dp_sync)},
                   {"zero", l.zero}};
  if (l.zero == 3) doc["layout"]["zero3_gather"] = kZero3GatherNames.name(l.zero3_gather);
  if (l.hybrid_shard()) doc["layout"]["dp_shard"] = l.dp_shard;
  if (l.placement == StagePlacement::VShape) doc["layout"]["placement"] = "v-shape";
  nlohmann::json ranks = nlohmann::json::array();
  for (const ActionList& actions : schedule.ranks) {
    nlohmann::json row = nlohmann::json::array();
    for (const Action& a : actions) row.push_back(to_string(a));
    ranks.push_back(row);
  }
  doc["ranks"] = ranks;
  if (dry)
    doc["dry_run"] = {{"step_units", dry->step_units},
                      {"bubble_fraction", dry->bubble_fraction()},
                      {"deadlocked", dry->deadlocked}};
  return doc.dump(2) + "\n";
}

}  // namespace dtwin::sched
