#include "runtime/late_receive.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "runtime/clock.hpp"

namespace dtwin::rt {
namespace {

constexpr int kTag = 7;  // any tag; the pair carries nothing else

std::vector<torch::Tensor> message(double bytes) {
  return {torch::zeros({std::max<int64_t>(1, static_cast<int64_t>(bytes / 4))}, torch::kFloat32),
          torch::zeros({1}, torch::kFloat64)};
}

}  // namespace

void send_late_receive_messages(c10d::Backend& pair, int messages, double bytes,
                                const Activity& between) {
  const int peer = 1 - pair.getRank();
  std::vector<torch::Tensor> tensors = message(bytes);
  for (int m = 0; m < messages; ++m) {
    tensors[1].fill_(wall_seconds());
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (int i = 0; i < 2; ++i) {
      std::vector<torch::Tensor> one{tensors[i]};
      works.push_back(pair.send(one, peer, kTag + i));
    }
    between();
    for (const auto& work : works) work->wait();
  }
}

double receive_late_messages(c10d::Backend& pair, int messages, double bytes,
                             const Activity& before) {
  const int peer = 1 - pair.getRank();
  std::vector<torch::Tensor> tensors = message(bytes);
  double total = 0;
  for (int m = 0; m < messages; ++m) {
    before();
    const double posted = wall_seconds();
    for (int i = 0; i < 2; ++i) {
      std::vector<torch::Tensor> one{tensors[i]};
      pair.recv(one, peer, kTag + i)->wait();
    }
    total += wall_seconds() - std::max(posted, tensors[1].item<double>());
  }
  return total / messages;
}

}  // namespace dtwin::rt
