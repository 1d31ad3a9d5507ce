#include "models/tensor_parallel.hpp"

#include "models/autograd_node.hpp"

namespace dtwin::nn {
namespace {

// Sums `t` over the group in place (an all-reduce of its contiguous storage) and returns it.
torch::Tensor all_reduce(torch::Tensor t, const TensorParallelGroup& tp,
                         c10d::ReduceOp op = c10d::ReduceOp::SUM) {
  if (tp.size == 1) return t;
  std::vector<torch::Tensor> buffers{t};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  tp.backend->allreduce(buffers, options)->wait();
  return t;
}

// A tensor sharing x's storage without its autograd history.
torch::Tensor same_storage(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  return torch::empty({0}, x.options()).set_(x);
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

torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight_shard,
                                       const TensorParallelGroup& tp) {
  const int64_t rows = weight_shard.size(0), first = tp.rank * rows;
  const torch::Tensor mine = (ids >= first) & (ids < first + rows);
  const torch::Tensor local = torch::where(mine, ids - first, torch::zeros_like(ids));
  const torch::Tensor looked_up =
      torch::embedding(weight_shard, local) * mine.unsqueeze(-1).to(weight_shard.scalar_type());
  return reduce_from_tensor_parallel(looked_up, tp);
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
