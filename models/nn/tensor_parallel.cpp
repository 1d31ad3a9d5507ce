#include "models/nn/tensor_parallel.hpp"

#include "models/nn/autograd_node.hpp"
#include "models/nn/timed_collective.hpp"

namespace dtwin::nn {
namespace {

// Sums `t` over the group in place (an all-reduce of its contiguous storage) and returns it.
torch::Tensor all_reduce(torch::Tensor t, const TensorParallelGroup& tp,
                         c10d::ReduceOp op = c10d::ReduceOp::SUM) {
  if (tp.size == 1) return t;
  std::vector<torch::Tensor> buffers{t};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  timed_collective(tp.collective_ns, tp.helper_cpu_ns,
                   [&] { return tp.backend->allreduce(buffers, options); });
  return t;
}

// The member's shards of x [b, s/t, d] gathered along the sequence: [b, s, d] (an all-gather
// over the first dimension of the [s, b, d] transpose, so that each shard is contiguous).
torch::Tensor gather_sequence(const torch::Tensor& x, const TensorParallelGroup& tp) {
  torch::Tensor shard = x.transpose(0, 1).contiguous();
  std::vector<int64_t> sizes = shard.sizes().vec();
  sizes[0] *= tp.size;
  torch::Tensor whole = torch::empty(sizes, shard.options());
  timed_collective(tp.collective_ns, tp.helper_cpu_ns,
                   [&] { return tp.backend->_allgather_base(whole, shard); });
  return whole.transpose(0, 1).contiguous();
}

// The sum over the group of x [b, s, d], sequence shard `tp.rank`: [b, s/t, d].
torch::Tensor reduce_scatter_sequence(const torch::Tensor& x, const TensorParallelGroup& tp) {
  TORCH_CHECK(x.size(1) % tp.size == 0, "sequence parallelism: the sequence (", x.size(1),
              ") is not a multiple of tp (", tp.size, ")");
  torch::Tensor whole = x.transpose(0, 1).contiguous();
  std::vector<int64_t> sizes = whole.sizes().vec();
  sizes[0] /= tp.size;
  torch::Tensor shard = torch::empty(sizes, whole.options());
  timed_collective(tp.collective_ns, tp.helper_cpu_ns,
                   [&] { return tp.backend->_reduce_scatter_base(shard, whole); });
  return shard.transpose(0, 1).contiguous();
}

// A tensor sharing x's storage without its autograd history.
torch::Tensor same_storage(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  return torch::empty({0}, x.options()).set_(x);
}

using SequenceCollective = torch::Tensor (*)(const torch::Tensor&, const TensorParallelGroup&);

// forward(x) over the group, computed without history, whose backward applies `backward`, the
// conjugate collective, to the gradient.
torch::Tensor sequence_collective(const torch::Tensor& x, const TensorParallelGroup& tp,
                                  SequenceCollective forward, SequenceCollective backward,
                                  const std::string& name) {
  torch::Tensor out;
  {
    torch::NoGradGuard no_grad;
    out = forward(x, tp);
  }
  return with_backward(
      out, {x},
      [tp, backward](const torch::Tensor& grad) {
        return std::vector<torch::Tensor>{backward(grad, tp)};
      },
      name);
}

}  // namespace

torch::Tensor copy_to_tensor_parallel(const torch::Tensor& x, const TensorParallelGroup& tp) {
  return with_backward(
      same_storage(x), {x},
      [tp](const torch::Tensor& grad) {
        return std::vector<torch::Tensor>{all_reduce(grad.contiguous().clone(), tp)};
      },
      "CopyToTensorParallelBackward");
}

torch::Tensor reduce_from_tensor_parallel(const torch::Tensor& x, const TensorParallelGroup& tp) {
  torch::Tensor sum;
  {
    torch::NoGradGuard no_grad;
    sum = all_reduce(x.contiguous().clone(), tp);
  }
  return with_backward(
      sum, {x}, [](const torch::Tensor& grad) { return std::vector<torch::Tensor>{grad}; },
      "ReduceFromTensorParallelBackward");
}

torch::Tensor enter_parallel_region(const torch::Tensor& x, const TensorParallelGroup& tp) {
  if (tp.size == 1) return x;
  if (!tp.sequence_parallel) return copy_to_tensor_parallel(x, tp);
  return sequence_collective(x, tp, gather_sequence, reduce_scatter_sequence,
                             "GatherFromSequenceParallelBackward");
}

torch::Tensor leave_parallel_region(const torch::Tensor& x, const TensorParallelGroup& tp) {
  if (tp.size == 1) return x;
  if (!tp.sequence_parallel) return reduce_from_tensor_parallel(x, tp);
  return sequence_collective(x, tp, reduce_scatter_sequence, gather_sequence,
                             "ReduceScatterToSequenceParallelBackward");
}

torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight_shard,
                                       const TensorParallelGroup& tp) {
  const int64_t rows = weight_shard.size(0), first = tp.rank * rows;
  const torch::Tensor mine = (ids >= first) & (ids < first + rows);
  const torch::Tensor local = torch::where(mine, ids - first, torch::zeros_like(ids));
  const torch::Tensor looked_up =
      torch::embedding(weight_shard, local) * mine.unsqueeze(-1).to(weight_shard.scalar_type());
  return leave_parallel_region(looked_up, tp);
}

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard,
                                           const torch::Tensor& targets,
                                           const TensorParallelGroup& tp) {
  const int64_t n = logits_shard.size(0), columns = logits_shard.size(1);
  const int64_t first = tp.rank * columns;
  // This member's column of each target, and whether it holds it.
  const torch::Tensor mine = (targets >= first) & (targets < first + columns);
  const torch::Tensor local = torch::where(mine, targets - first, torch::zeros_like(targets));
  torch::Tensor softmax, loss;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = logits_shard.to(torch::kFloat32);
    const torch::Tensor max = all_reduce(std::get<0>(logits.max(1)), tp, c10d::ReduceOp::MAX);
    const torch::Tensor shifted = logits - max.unsqueeze(1);
    const torch::Tensor exp = shifted.exp();
    const torch::Tensor sum = all_reduce(exp.sum(1), tp);
    torch::Tensor target_logit = shifted.gather(1, local.unsqueeze(1)).squeeze(1) * mine;
    all_reduce(target_logit, tp);
    loss = (sum.log() - target_logit).mean();
    softmax = exp / sum.unsqueeze(1);
  }
  const BackwardFunction backward =
      [softmax, mine, local, n, dtype = logits_shard.scalar_type()](const torch::Tensor& grad) {
        torch::Tensor g = softmax.clone();
        g.scatter_add_(1, local.unsqueeze(1), -mine.to(torch::kFloat32).unsqueeze(1));
        return std::vector<torch::Tensor>{(g * (grad / n)).to(dtype), torch::Tensor()};
      };
  return with_backward(loss, {logits_shard, targets}, backward,
                       "VocabParallelCrossEntropyBackward");
}

}  // namespace dtwin::nn
