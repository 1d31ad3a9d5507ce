#include "runtime/classification_eval.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace dtwin::rt {

ClassificationScores scores_of(const std::vector<std::int64_t>& confusion, int labels) {
  ClassificationScores s;
  std::int64_t correct = 0, commonest = 0;
  std::vector<double> f1(static_cast<std::size_t>(labels));
  for (int l = 0; l < labels; ++l) {
    std::int64_t truth = 0, predicted = 0;
    for (int k = 0; k < labels; ++k) {
      truth += confusion[l * labels + k];
      predicted += confusion[k * labels + l];
    }
    const std::int64_t tp = confusion[l * labels + l];
    correct += tp;
    s.examples += truth;
    commonest = std::max(commonest, truth);
    f1[l] = truth + predicted > 0 ? 2.0 * tp / static_cast<double>(truth + predicted) : 0.0;
  }
  if (s.examples == 0) return s;
  s.accuracy = static_cast<double>(correct) / s.examples;
  s.majority = static_cast<double>(commonest) / s.examples;
  double sum = 0;
  for (double v : f1) sum += v;
  s.f1 = labels == 2 ? f1[1] : sum / labels;
  return s;
}

ClassificationScores evaluate_classifier(nn::StageModule& module, const ClassificationDataset& data,
                                         int micro_batch_size, int replica, int dp,
                                         Communicator& comm) {
  const int labels = static_cast<int>(data.labels().size());
  const std::int64_t n = data.dev_examples();
  const std::int64_t first = n * replica / dp, end = n * (replica + 1) / dp;
  torch::Tensor confusion = torch::zeros({labels * labels}, torch::kFloat64);
  module.eval();
  {
    torch::NoGradGuard no_grad;
    for (std::int64_t at = first; at < end; at += micro_batch_size) {
      const Batch batch = data.dev_range(at, std::min<std::int64_t>(micro_batch_size, end - at));
      const torch::Tensor predicted =
          module.classify(batch.inputs.to(comm.device())).argmax(1).cpu();
      confusion.index_add_(0, batch.targets * labels + predicted,
                           torch::ones({predicted.size(0)}, torch::kFloat64));
    }
  }
  module.train();
  std::vector<torch::Tensor> sums{confusion.to(comm.device())};
  const std::string what = "the dev-split evaluation's all-reduce";
  comm.wait(comm.post(what, {}, [&] { return comm.world().allreduce(sums); }), what, {});
  const torch::Tensor total = sums[0].cpu().to(torch::kLong);
  return scores_of(std::vector<std::int64_t>(total.data_ptr<std::int64_t>(),
                                             total.data_ptr<std::int64_t>() + total.numel()),
                   labels);
}

}  // namespace dtwin::rt
