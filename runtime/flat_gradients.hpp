// One flat fp32 buffer of several parameters' gradients, for a collective over all of them at
// once, and the buffer's values written back.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace dtwin::rt {

/// The gradients of `parameters` flattened and concatenated in order [Σ numel]; a parameter
/// without a gradient contributes zeros.
torch::Tensor flat_gradients(const std::vector<torch::Tensor>& parameters);

/// Writes consecutive slices of `flat` [Σ numel] (divided by `divisor`) into the gradients of
/// `parameters`, in order, under no-grad: in place where a gradient exists (under ZeRO it is a
/// view of the flat gradient buffer), else as a new one.
void set_gradients(const std::vector<torch::Tensor>& parameters, const torch::Tensor& flat,
                   double divisor = 1);

/// Copies consecutive slices of `flat` [Σ numel] into `tensors`, in order, under no-grad.
void copy_slices(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors);

/// What a data-parallel synchronisation sums over its group: the gradients of `parameters` (a
/// parameter without one first gets a zero gradient), or with `weights` the parameters.
std::vector<torch::Tensor> sync_tensors(const std::vector<torch::Tensor>& parameters, bool weights);

/// `tensors` flattened and concatenated in order [Σ numel].
torch::Tensor flatten(const std::vector<torch::Tensor>& tensors);

/// Writes `flat` [Σ numel] (flatten's layout), divided by `replicas` in place, back into
/// `tensors`: the average after the group's sum.
void write_average(const torch::Tensor& flat, int replicas,
                   const std::vector<torch::Tensor>& tensors);

}  // namespace dtwin::rt
