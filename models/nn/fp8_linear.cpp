#include "models/nn/fp8_linear.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

#if DTWIN_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>

#include "models/nn/kernels/fused_kernels.hpp"
#endif

namespace dtwin::nn {
namespace {

double largest_finite(torch::ScalarType format) {
  return format == torch::kFloat8_e4m3fn ? 448.0 : 57344.0;
}

/// `t` [r, c] laid out column-major (the layout _scaled_mm takes its second operand in).
torch::Tensor column_major(const torch::Tensor& t) {
  return t.t().contiguous().t();
}

/// a [m, k] (row-major) · b [k, n] (column-major) with a ≈ qa / sa, b ≈ qb / sb, in `out`.
torch::Tensor scaled_product(const torch::Tensor& qa, const torch::Tensor& sa,
                             const torch::Tensor& qb, const torch::Tensor& sb,
                             torch::ScalarType out) {
  return at::_scaled_mm(qa, qb, sa.reciprocal(), sb.reciprocal(), /*bias=*/{},
                        /*scale_result=*/{}, out);
}

struct Fp8LinearFunction : public torch::autograd::Function<Fp8LinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, Fp8Scaling* scaling, StashSlot* slot) {
    const std::int64_t in = input.size(-1), out = weight.size(0);
    auto [qx, sx] = quantize_fp8(input.reshape({-1, in}), torch::kFloat8_e4m3fn, scaling->input,
                                 scaling->recipe, scaling->history_len);
    auto [qw, sw] = quantize_fp8(weight, torch::kFloat8_e4m3fn, scaling->weight, scaling->recipe,
                                 scaling->history_len);
    ctx->save_for_backward({qx, sx, qw, sw, weight});
    ctx->saved_data["scaling"] = reinterpret_cast<std::int64_t>(scaling);
    ctx->saved_data["slot"] = reinterpret_cast<std::int64_t>(slot);
    ctx->saved_data["input_dtype"] = input.scalar_type();
    std::vector<std::int64_t> shape = input.sizes().vec();
    shape.back() = out;
    return scaled_product(qx, sx, qw.t(), sw, torch::kBFloat16).view(shape);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &qx = saved[0], &sx = saved[1], &qw = saved[2], &sw = saved[3];
    const torch::Tensor& weight = saved[4];
    auto* scaling = reinterpret_cast<Fp8Scaling*>(ctx->saved_data["scaling"].toInt());
    const auto* slot = reinterpret_cast<StashSlot*>(ctx->saved_data["slot"].toInt());
    const torch::Tensor& grad_y = grad_outputs[0];
    const std::int64_t out = qw.size(0), in = qw.size(1);
    auto [qg, sg] = quantize_fp8(grad_y.reshape({-1, out}), torch::kFloat8_e5m2,
                                 scaling->grad_output, scaling->recipe, scaling->history_len);
    torch::Tensor grad_input, grad_weight;
    if (ctx->needs_input_grad(0)) {
      std::vector<std::int64_t> shape = grad_y.sizes().vec();
      shape.back() = in;
      grad_input = scaled_product(qg, sg, column_major(qw), sw, torch::kBFloat16)
                       .view(shape)
                       .to(ctx->saved_data["input_dtype"].toScalarType());
    }
    if (ctx->needs_input_grad(1)) {
      if (slot->active != nullptr)  // the stash's W pass multiplies in bf16: dequantised input
        slot->active->record((qx.to(torch::kFloat32) / sx).to(grad_y.scalar_type()), grad_y,
                             weight);
      else
        grad_weight = scaled_product(qg.t().contiguous(), sg, column_major(qx), sx,
                                     weight.scalar_type() == torch::kFloat32 ? torch::kFloat32
                                                                             : torch::kBFloat16)
                          .to(weight.scalar_type());
    }
    return {grad_input, grad_weight, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

Fp8Scaling::Fp8Scaling(Fp8Recipe recipe_, std::int64_t history_len_)
    : recipe(recipe_), history_len(history_len_) {
  if (recipe != Fp8Recipe::Delayed && recipe != Fp8Recipe::Tensorwise)
    throw std::invalid_argument(
        "Fp8Scaling: the runtime scales fp8 operands per tensor (recipe "
        "delayed or tensorwise), got '" +
        std::string(kFp8RecipeNames.name(recipe)) + "'");
  if (history_len < 1)
    throw std::invalid_argument("Fp8Scaling: the amax history needs at least 1 entry, got " +
                                std::to_string(history_len));
}

std::pair<torch::Tensor, torch::Tensor> quantize_fp8(const torch::Tensor& x,
                                                     torch::ScalarType format,
                                                     Fp8OperandScaling& scaling, Fp8Recipe recipe,
                                                     std::int64_t history_len) {
  torch::NoGradGuard no_grad;
  const double fmax = largest_finite(format);
  const auto fp32 = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
  const bool delayed = recipe == Fp8Recipe::Delayed;
  if (delayed && !scaling.history.defined()) scaling.history = torch::zeros({history_len}, fp32);
  const bool from_history = delayed && scaling.calls > 0;
  const auto scale_for = [&](const torch::Tensor& amax) {
    return torch::where(amax > 0, fmax / amax, torch::ones_like(amax));
  };
  torch::Tensor q, scale, amax;
  if (x.is_cuda()) {
#if DTWIN_HAVE_CUDA
    // One pass with the history's scale (delayed), else a pass for the amax and one to cast.
    const torch::Tensor in = x.contiguous();
    TORCH_CHECK(in.scalar_type() == torch::kFloat32 || in.scalar_type() == torch::kBFloat16,
                "quantize_fp8: fp32 or bf16, got ", in.scalar_type());
    const bool bf16 = in.scalar_type() == torch::kBFloat16, e5m2 = format == torch::kFloat8_e5m2;
    void* stream = c10::cuda::getCurrentCUDAStream().stream();
    amax = torch::zeros({}, fp32);
    q = torch::empty(in.sizes(), in.options().dtype(format));
    if (!from_history)
      kernels::quantize_fp8(in.data_ptr(), in.numel(), bf16, nullptr, e5m2, nullptr,
                            amax.data_ptr<float>(), stream);
    scale = scale_for(from_history ? scaling.history.max() : amax);
    kernels::quantize_fp8(in.data_ptr(), in.numel(), bf16, scale.data_ptr<float>(), e5m2,
                          q.data_ptr(), from_history ? amax.data_ptr<float>() : nullptr, stream);
#else
    throw std::logic_error("quantize_fp8: this build has no CUDA code (DTWIN_CUDA=OFF)");
#endif
  } else {
    amax = x.abs().max().to(torch::kFloat32);
    scale = scale_for(from_history ? scaling.history.max() : amax);
    q = (x.to(torch::kFloat32) * scale).clamp(-fmax, fmax).to(format);
  }
  if (delayed)  // in place: a captured CUDA graph's replays read and write the same history
    scaling.history.copy_(
        torch::cat({amax.reshape({1}), scaling.history.narrow(0, 0, history_len - 1)}));
  ++scaling.calls;
  return {q, scale};
}

torch::Tensor fp8_linear(const torch::Tensor& input, const torch::Tensor& weight,
                         Fp8Scaling& scaling, StashSlot& slot) {
  return Fp8LinearFunction::apply(input, weight, &scaling, &slot);
}

}  // namespace dtwin::nn
