#include "models/nn/expert_parallel.hpp"

#include <numeric>

#include "models/nn/autograd_node.hpp"
#include "models/nn/timed_collective.hpp"

namespace dtwin::nn {
namespace {

// The all-to-all itself, without autograd: x's rows by `send` out, `recv` rows in.
torch::Tensor exchange_rows(const torch::Tensor& x, const std::vector<int64_t>& send,
                            const std::vector<int64_t>& recv, const ExpertParallelGroup& ep) {
  torch::Tensor in = x.contiguous();
  std::vector<int64_t> sizes = in.sizes().vec();
  sizes[0] = std::accumulate(recv.begin(), recv.end(), int64_t{0});
  torch::Tensor out = torch::empty(sizes, in.options());
  std::vector<int64_t> out_splits = recv, in_splits = send;
  timed_collective(ep.collective_ns, ep.helper_cpu_ns,
                   [&] { return ep.backend->alltoall_base(out, in, out_splits, in_splits); });
  const int64_t row_bytes = in.size(0) == 0 ? 0 : static_cast<int64_t>(in.nbytes()) / in.size(0);
  const int64_t rows = std::accumulate(send.begin(), send.end(), int64_t{0}) - send.at(ep.rank);
  *ep.bytes_sent += rows * row_bytes;
  return out;
}

}  // namespace

torch::Tensor exchange_counts(const torch::Tensor& counts, const ExpertParallelGroup& ep) {
  if (ep.size == 1) return counts;
  torch::Tensor in = counts.to(torch::kLong).contiguous();
  torch::Tensor out = torch::empty_like(in);
  std::vector<int64_t> equal;  // empty splits: equal parts
  timed_collective(ep.collective_ns, ep.helper_cpu_ns,
                   [&] { return ep.backend->alltoall_base(out, in, equal, equal); });
  return out;
}

torch::Tensor all_to_all_rows(const torch::Tensor& x, const std::vector<int64_t>& send,
                              const std::vector<int64_t>& recv, const ExpertParallelGroup& ep) {
  if (ep.size == 1) return x;
  torch::Tensor out;
  {
    torch::NoGradGuard no_grad;
    out = exchange_rows(x, send, recv, ep);
  }
  return with_backward(
      out, {x},
      [send, recv, ep](const torch::Tensor& grad) {
        return std::vector<torch::Tensor>{exchange_rows(grad, recv, send, ep)};
      },
      "AllToAllBackward");
}

}  // namespace dtwin::nn
