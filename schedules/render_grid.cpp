#include <algorithm>
#include <sstream>

#include "schedules/validate.hpp"

namespace dtwin::sched {
namespace {

constexpr int kContext = 6;    // columns shown on each side of the first mark
constexpr int kMaxRanks = 64;  // rows shown at most

}  // namespace

std::string render_grid(const Schedule& schedule, const std::vector<std::pair<int, int>>& marks) {
  const int world = static_cast<int>(schedule.ranks.size());
  int first = 0;
  if (!marks.empty()) first = std::max(0, marks.front().second - kContext);
  const int end = first + 2 * kContext + 1;
  size_t width = 0;
  for (const ActionList& actions : schedule.ranks)
    for (const Action& a : actions) width = std::max(width, to_string(a).size() + 2);

  std::ostringstream out;
  for (int rank = 0; rank < std::min(world, kMaxRanks); ++rank) {
    const ActionList& actions = schedule.ranks[rank];
    out << "rank " << rank << ":" << (first > 0 ? " ..." : "");
    for (int i = first; i < std::min<int>(end, actions.size()); ++i) {
      std::string cell = to_string(actions[i]);
      if (std::find(marks.begin(), marks.end(), std::pair{rank, i}) != marks.end())
        cell = ">" + cell + "<";
      out << " " << cell << std::string(width - cell.size(), ' ');
    }
    if (end < static_cast<int>(actions.size())) out << " ...";
    out << "\n";
  }
  if (world > kMaxRanks) out << "... " << world - kMaxRanks << " more ranks\n";
  return out.str();
}

}  // namespace dtwin::sched
