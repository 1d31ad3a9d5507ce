#include "sim/collectives.hpp"

#include <algorithm>
#include <stdexcept>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>

namespace sg4 = simgrid::s4u;

namespace dtwin::sim {
namespace {

int payload_token = 0;  // SimGrid moves a pointer; sizes are what the model times

sg4::Mailbox* mailbox(const Group& group, int to, int step) {
  return sg4::Mailbox::by_name(group.tag + ":" + std::to_string(to) + ":" + std::to_string(step));
}

// Sends `bytes` to group member `to` while receiving this step's message from the previous
// member; returns when both end.
void exchange(const Group& group, int to, int step, double bytes) {
  sg4::CommPtr send = mailbox(group, to, step)->put_async(&payload_token, bytes);
  mailbox(group, group.me, step)->get<int>();
  send->wait();
}

double route_latency(const Platform& platform, int from_rank, int to_rank) {
  std::vector<sg4::Link*> links;
  double latency = 0;
  platform.rank_hosts[from_rank]->route_to(platform.rank_hosts[to_rank], links, &latency);
  return latency;
}

// The CPU work of sending (and reducing) `bytes` in ring steps at `cpu_s_per_byte`, one thread
// on the calling actor's host.
void process_on_cpu(double cpu_s_per_byte, double bytes) {
  const double seconds = cpu_s_per_byte * bytes;
  if (seconds > 0) sg4::this_actor::execute(seconds * sg4::this_actor::get_host()->get_speed());
}

// `steps` ring steps of bytes/N each to the next member, each followed by its CPU work: one
// tensor-parallel member's, on its 1/tp of the bytes (the members work at once); then the
// group's extra latency.
void ring_steps(const Group& group, double bytes, int steps, CollectiveModel model,
                const Platform& platform, double cpu_s_per_byte) {
  const int n = group.members();
  const int simulated = static_cast<int>(group.ranks.size());
  if (simulated < 2) return;
  const int next = (group.me + 1) % simulated;
  const double chunk = bytes / n;
  const double member_s_per_byte = cpu_s_per_byte / platform.group_members;
  if (model == CollectiveModel::Message) {
    if (simulated != n) throw std::logic_error("ring_steps: folded replicas need the Flow model");
    for (int step = 0; step < steps; ++step) {
      exchange(group, next, step, chunk);
      process_on_cpu(member_s_per_byte, chunk);
    }
  } else {
    exchange(group, next, 0, steps * chunk);
    process_on_cpu(member_s_per_byte, steps * chunk);
    const double alpha = route_latency(platform, group.ranks[group.me], group.ranks[next]);
    sg4::this_actor::sleep_for((steps - 1) * alpha);
  }
  if (group.extra_latency_s > 0) sg4::this_actor::sleep_for(group.extra_latency_s);
}

}  // namespace

void ring_allreduce(const Group& group, double bytes, CollectiveModel model,
                    const Platform& platform) {
  ring_steps(group, bytes, 2 * (group.members() - 1), model, platform,
             platform.collective_cpu_s_per_byte);
}

void ring_half(const Group& group, double bytes, CollectiveModel model, const Platform& platform,
               double cpu_s_per_byte) {
  ring_steps(group, bytes, group.members() - 1, model, platform, cpu_s_per_byte);
}

double max_ring_latency(const std::vector<int>& ranks, const Platform& platform) {
  double latency = 0;
  const size_t n = ranks.size();
  for (size_t i = 0; n > 1 && i < n; ++i)
    latency = std::max(latency, route_latency(platform, ranks[i], ranks[(i + 1) % n]));
  return latency;
}

void gather_scatter(const Group& group, double bytes, const Platform&) {
  const int n = static_cast<int>(group.ranks.size());
  if (n < 2) return;
  if (group.me != 0) {
    mailbox(group, 0, group.me)->put(&payload_token, bytes);
    mailbox(group, group.me, n)->get<int>();
    return;
  }
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> received(n);
  for (int member = 1; member < n; ++member)
    comms.push_back(mailbox(group, 0, member)->get_async(&received[member]));
  sg4::Comm::wait_all(comms);
  comms.clear();
  for (int member = 1; member < n; ++member)
    comms.push_back(mailbox(group, member, n)->put_async(&payload_token, bytes));
  sg4::Comm::wait_all(comms);
}

}  // namespace dtwin::sim
