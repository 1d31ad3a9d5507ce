#include "models/cost/layer_host_stall.hpp"

#include <string>
#include <vector>

#include "models/cost/host_queue.hpp"
#include "models/cost/layer_ops.hpp"

namespace dtwin {
namespace {

bool row_parallel(const std::string& name) {
  return name == "attention_out" || name == "mlp_fc2" || name == "mlp_down";
}

bool column_parallel_first(const std::string& name) {
  return name == "qkv dgrad" || name == "mlp_fc1 dgrad" || name == "mlp_gate dgrad";
}

struct IssueList {
  const DeviceDescription& device;
  Precision precision;
  Issue collective;  ///< a tensor-parallel collective, or {0, 0} without tp
  std::vector<Issue> issues;

  void add(const Op& op, bool no_grad) {
    const double host = no_grad ? op.host_ops_no_grad * device.host_op_overhead_no_grad
                                : op.host_ops * device.host_op_overhead;
    issues.push_back({host, op_seconds(device, op, precision)});
  }
  void add_collective() {
    if (collective.device > 0) issues.push_back(collective);
  }
  void add_forward(const std::vector<Op>& ops, bool no_grad) {
    for (const Op& op : ops) {
      add(op, no_grad);
      if (row_parallel(op.name)) add_collective();
    }
  }
};

}  // namespace

HostStall layer_host_stall(const DeviceDescription& device, const Scenario& scenario, int layers,
                           double tp_collective_s) {
  const ModelSpec& m = scenario.model;
  const LayoutSpec& l = scenario.layout;
  const Precision precision = scenario.training.precision;
  const auto ops = [&](Pass pass) {
    return layer_ops(m, l, precision, pass, scenario.training.fp8_recipe);
  };
  const std::vector<Op> forward = ops(Pass::Forward), input = ops(Pass::InputBackward),
                        weight = ops(Pass::WeightBackward);
  const Issue collective{l.tp > 1 ? device.host_op_overhead : 0, l.tp > 1 ? tp_collective_s : 0};
  const auto list = [&] { return IssueList{device, precision, collective, {}}; };

  // The forward that I and B repeat first: the whole layer's (full) or its attention core's.
  const auto recompute = [&](IssueList& to) {
    if (l.recompute == Recompute::Full) to.add_forward(forward, false);
    if (l.recompute == Recompute::Selective)
      for (const Op& op : forward)
        if (op.kind == OpKind::Attention) to.add(op, false);
  };

  IssueList f = list();
  f.add_forward(forward, l.recompute == Recompute::Full);

  IssueList i = list();
  recompute(i);
  for (const Op& op : input) {
    i.add(op, false);
    if (column_parallel_first(op.name)) i.add_collective();
  }

  IssueList w = list();
  for (const Op& op : weight) w.add(op, false);

  // B: each operator's I, then its W (weights' gradients follow their dgrad in one node).
  IssueList b = list();
  recompute(b);
  std::size_t next_weight = 0;
  for (const Op& op : input) {
    b.add(op, false);
    const std::string base = op.name.substr(0, op.name.rfind(' '));
    if (next_weight < weight.size() &&
        weight[next_weight].name.substr(0, weight[next_weight].name.rfind(' ')) == base)
      b.add(weight[next_weight++], false);
    if (column_parallel_first(op.name)) b.add_collective();
  }
  for (; next_weight < weight.size(); ++next_weight) b.add(weight[next_weight], false);

  return {host_stall_seconds(f.issues, layers), host_stall_seconds(i.issues, layers),
          host_stall_seconds(w.issues, layers), host_stall_seconds(b.issues, layers)};
}

}  // namespace dtwin
