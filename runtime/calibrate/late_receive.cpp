#include "runtime/calibrate/late_receive.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "base/cpu_clock.hpp"
#include "runtime/clock.hpp"

namespace dtwin::rt {
namespace {

constexpr int kPayload = 7;  // tags: any; the pair carries nothing else
constexpr int kPosted = 8;   // the one-element message that says the payload's send is posted

std::vector<torch::Tensor> fp32_message(int64_t elements) {
  return {torch::zeros({std::max<int64_t>(1, elements)}, torch::kFloat32)};
}

}  // namespace

double send_late_receive_messages(c10d::Backend& pair, int messages, double bytes,
                                  const Activity& between) {
  const int peer = 1 - pair.getRank();
  std::vector<torch::Tensor> payload = fp32_message(static_cast<int64_t>(bytes / 4)),
                             posted = fp32_message(1);
  const double helpers_start = other_threads_cpu_seconds();
  for (int m = 0; m < messages; ++m) {
    const auto sent = pair.send(payload, peer, kPayload);
    const auto told = pair.send(posted, peer, kPosted);
    between();
    sent->wait();
    told->wait();
  }
  return other_threads_cpu_seconds() - helpers_start;
}

double receive_late_messages(c10d::Backend& pair, int messages, double bytes,
                             const Activity& before) {
  const int peer = 1 - pair.getRank();
  std::vector<torch::Tensor> payload = fp32_message(static_cast<int64_t>(bytes / 4)),
                             posted = fp32_message(1);
  double total = 0;
  for (int m = 0; m < messages; ++m) {
    pair.recv(posted, peer, kPosted)->wait();  // the payload's send is posted by now
    before();
    const double start = wall_seconds();
    pair.recv(payload, peer, kPayload)->wait();
    total += wall_seconds() - start;
  }
  return total / messages;
}

}  // namespace dtwin::rt
