#include "models/nn/fused_ops.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#if DTWIN_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>

#include "models/nn/kernels/fused_kernels.hpp"
#endif

namespace dtwin::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool on_cuda(const torch::Tensor& t) {
  if (!t.is_cuda()) return false;
#if DTWIN_HAVE_CUDA
  return true;
#else
  throw std::logic_error("dtwin's fused kernels: this build has no CUDA code (DTWIN_CUDA=OFF)");
#endif
}

#if DTWIN_HAVE_CUDA
void* current_stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}
bool is_bf16(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16;
}
#endif

void check_float(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kBFloat16,
              "dtwin's fused ", what, ": fp32 or bf16, got ", t.scalar_type());
}

/// x·cos + rotate_half(x)·sin (or, `transpose`, x·cos + rotate_halfᵀ(x·sin)) for x [b, s, n, hd]
/// and fp32 tables [s, hd].
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                     bool transpose) {
  const std::int64_t s = x.size(1), hd = x.size(3), half = hd / 2;
  if (on_cuda(x)) {
#if DTWIN_HAVE_CUDA
    const torch::Tensor in = x.contiguous();
    torch::Tensor out = torch::empty_like(in);
    kernels::rotary(in.data_ptr(), cos.data_ptr<float>(), sin.data_ptr<float>(), out.data_ptr(),
                    in.numel() / hd, s, x.size(2), hd, is_bf16(in), transpose, current_stream());
    return out;
#endif
  }
  const torch::Tensor xf = x.to(torch::kFloat32);
  const torch::Tensor c = cos.view({1, s, 1, hd}), sn = sin.view({1, s, 1, hd});
  const auto halves = [&](const torch::Tensor& t) {
    return std::pair{t.narrow(-1, 0, half), t.narrow(-1, half, half)};
  };
  torch::Tensor rotated;
  if (!transpose) {
    const auto [x1, x2] = halves(xf);
    rotated = torch::cat({-x2, x1}, -1) * sn;
  } else {
    const auto [z1, z2] = halves(xf * sn);
    rotated = torch::cat({z2, -z1}, -1);
  }
  return (xf * c + rotated).to(x.scalar_type()).contiguous();
}

struct RotaryFunction : public torch::autograd::Function<RotaryFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    return rotate(x, cos, sin, false);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    return {rotate(grads[0], saved[0], saved[1], true), torch::Tensor(), torch::Tensor()};
  }
};

struct SwigluFunction : public torch::autograd::Function<SwigluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    const torch::Tensor ac = a.contiguous(), bc = b.contiguous();
    ctx->save_for_backward({ac, bc});
    if (on_cuda(ac)) {
#if DTWIN_HAVE_CUDA
      torch::Tensor out = torch::empty_like(ac);
      kernels::swiglu_forward(ac.data_ptr(), bc.data_ptr(), out.data_ptr(), ac.numel(), is_bf16(ac),
                              current_stream());
      return out;
#endif
    }
    return (torch::silu(ac.to(torch::kFloat32)) * bc.to(torch::kFloat32)).to(a.scalar_type());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &b = saved[1];
    const torch::Tensor g = grads[0].contiguous();
    if (on_cuda(a)) {
#if DTWIN_HAVE_CUDA
      torch::Tensor da = torch::empty_like(a), db = torch::empty_like(b);
      kernels::swiglu_backward(a.data_ptr(), b.data_ptr(), g.data_ptr(), da.data_ptr(),
                               db.data_ptr(), a.numel(), is_bf16(a), current_stream());
      return {da, db};
#endif
    }
    const torch::Tensor af = a.to(torch::kFloat32), bf = b.to(torch::kFloat32),
                        gf = g.to(torch::kFloat32), sig = torch::sigmoid(af);
    return {(gf * bf * sig * (1 + af * (1 - sig))).to(a.scalar_type()),
            (gf * af * sig).to(b.scalar_type())};
  }
};

/// Per row of logits [n, V]: the loss (fp32 [n]), and the row replaced by (softmax − onehot) ·
/// scale in place.
torch::Tensor cross_entropy_in_place(torch::Tensor& logits, const torch::Tensor& targets,
                                     double scale) {
  if (on_cuda(logits)) {
#if DTWIN_HAVE_CUDA
    torch::Tensor losses = torch::empty({logits.size(0)}, logits.options().dtype(torch::kFloat32));
    kernels::cross_entropy_rows(logits.data_ptr(), targets.data_ptr<std::int64_t>(),
                                losses.data_ptr<float>(), logits.size(0), logits.size(1),
                                static_cast<float>(scale), is_bf16(logits), current_stream());
    return losses;
#endif
  }
  const torch::Tensor lf = logits.to(torch::kFloat32);
  const torch::Tensor lse = lf.logsumexp(-1);
  const torch::Tensor losses = lse - lf.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  torch::Tensor grad = (lf - lse.unsqueeze(-1)).exp();
  grad.scatter_add_(-1, targets.unsqueeze(-1), -torch::ones_like(losses).unsqueeze(-1));
  logits.copy_(grad * scale);
  return losses;
}

struct LinearCrossEntropyFunction : public torch::autograd::Function<LinearCrossEntropyFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& targets,
                               bool with_grad, std::int64_t chunk_logits) {
    const std::int64_t rows = x.size(0), vocab = weight.size(0);
    const torch::Tensor w = weight.to(x.scalar_type());
    const std::int64_t chunk = std::max<std::int64_t>(1, chunk_logits / vocab);
    torch::Tensor grad_x, grad_w;
    if (with_grad) {
      grad_x = torch::empty_like(x);
      grad_w = torch::zeros_like(weight);
    }
    torch::Tensor loss_sum = torch::zeros({}, x.options().dtype(torch::kFloat32));
    for (std::int64_t start = 0; start < rows; start += chunk) {
      const std::int64_t n = std::min(chunk, rows - start);
      const torch::Tensor xc = x.narrow(0, start, n);
      torch::Tensor logits = xc.mm(w.t());  // [n, V] in x's dtype
      loss_sum += cross_entropy_in_place(logits, targets.narrow(0, start, n).contiguous(),
                                         1.0 / static_cast<double>(rows))
                      .sum();
      if (!with_grad) continue;
      grad_x.narrow(0, start, n).copy_(logits.mm(w));
      grad_w.add_(logits.t().mm(xc).to(weight.scalar_type()));
    }
    if (with_grad) ctx->save_for_backward({grad_x, grad_w});
    return loss_sum / static_cast<double>(rows);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& g = grads[0];
    return {saved[0] * g.to(saved[0].scalar_type()), saved[1] * g.to(saved[1].scalar_type()),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return at::rms_norm(x, {x.size(-1)}, weight.to(x.scalar_type()), eps);
}

torch::Tensor fused_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin) {
  TORCH_CHECK(x.dim() == 4 && x.size(3) % 2 == 0 && cos.dim() == 2 && cos.size(0) == x.size(1) &&
                  cos.size(1) == x.size(3) && sin.sizes() == cos.sizes(),
              "fused_rotary: x [b, s, n, hd] with an even hd and tables [s, hd], got x ", x.sizes(),
              ", cos ", cos.sizes(), ", sin ", sin.sizes());
  check_float(x, "rotary embeddings");
  const auto fp32 = [&](const torch::Tensor& t) {
    return t.to(x.device(), torch::kFloat32).contiguous();
  };
  return RotaryFunction::apply(x, fp32(cos), fp32(sin));
}

torch::Tensor fused_swiglu(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type(),
              "fused_swiglu: a and b of one shape and dtype, got ", a.sizes(), " ", a.scalar_type(),
              " and ", b.sizes(), " ", b.scalar_type());
  check_float(a, "SwiGLU");
  return SwigluFunction::apply(a, b);
}

torch::Tensor fused_linear_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& targets, std::int64_t chunk_logits) {
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) &&
                  targets.dim() == 1 && targets.size(0) == x.size(0) &&
                  targets.scalar_type() == torch::kLong,
              "fused_linear_cross_entropy: x [N, d], weight [V, d], int64 targets [N], got ",
              x.sizes(), ", ", weight.sizes(), ", ", targets.scalar_type(), " ", targets.sizes());
  check_float(x, "cross-entropy");
  const bool with_grad =
      torch::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad());
  return LinearCrossEntropyFunction::apply(x.contiguous(), weight, targets, with_grad,
                                           chunk_logits);
}

}  // namespace dtwin::nn
