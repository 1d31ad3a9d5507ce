#include "models/nn/ring_attention.hpp"

#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/nn/autograd_node.hpp"
#include "models/nn/timed_collective.hpp"

namespace dtwin::nn {
namespace {

constexpr int kKeyValueTag = 0;  // the keys and values going round
constexpr int kGradientTag = 1;  // the accumulated gradients of another member's keys and values

// A block's partial result: out [b, h, n, hd] and its log-sum-exp fp32 [b, h, n].
struct Partial {
  torch::Tensor out, lse;
};

struct BlockGrads {
  torch::Tensor dq, dk, dv;
};

// One block of attention, q [b, h, n, hd] over k, v [b, kv, m, hd] (causal: n = m, position i
// attends to 0..i; else every key), and its backward given the merged output and log-sum-exp.
class Block {
 public:
  Block(RingKernel kernel, int64_t groups, int64_t head_dim)
      : kernel_(kernel), groups_(groups), scale_(1.0 / std::sqrt(static_cast<double>(head_dim))) {}

  Partial forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                  bool causal) const {
    const torch::Tensor kf = expand(k), vf = expand(v);
    if (kernel_ == RingKernel::Fused) {
      auto [out, lse] =
          at::_scaled_dot_product_flash_attention_for_cpu(q, kf, vf, 0.0, causal, {}, scale_);
      return {out, lse.to(torch::kFloat32)};
    }
    const torch::Tensor s = scores(q, kf, causal);
    const torch::Tensor lse = s.logsumexp(-1);
    const torch::Tensor p = (s - lse.unsqueeze(-1)).exp();
    return {torch::matmul(p, vf.to(torch::kFloat32)).to(q.scalar_type()), lse};
  }

  BlockGrads backward(const torch::Tensor& dout, const torch::Tensor& q, const torch::Tensor& k,
                      const torch::Tensor& v, const torch::Tensor& out, const torch::Tensor& lse,
                      bool causal) const {
    const torch::Tensor kf = expand(k), vf = expand(v);
    torch::Tensor dq, dk, dv;
    if (kernel_ == RingKernel::Fused) {
      std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_for_cpu_backward(
          dout.contiguous(), q.contiguous(), kf.contiguous(), vf.contiguous(), out.contiguous(),
          lse.contiguous(), 0.0, causal, {}, scale_);
    } else {
      // Flash attention's backward (Dao 2023, Algorithm 2) with the merged output and
      // log-sum-exp: P = exp(S - lse), dV = Pᵀ·dO, dS = P ∘ (dO·Vᵀ - rowsum(dO ∘ O)).
      const auto fp32 = [](const torch::Tensor& t) { return t.to(torch::kFloat32); };
      const torch::Tensor p = (scores(q, kf, causal) - lse.unsqueeze(-1)).exp();
      const torch::Tensor d_out = fp32(dout);
      const torch::Tensor rowsum = (d_out * fp32(out)).sum(-1, /*keepdim=*/true);
      const torch::Tensor ds = p * (torch::matmul(d_out, fp32(vf).transpose(-2, -1)) - rowsum);
      dq = (torch::matmul(ds, fp32(kf)) * scale_).to(q.scalar_type());
      dk = (torch::matmul(ds.transpose(-2, -1), fp32(q)) * scale_).to(k.scalar_type());
      dv = torch::matmul(p.transpose(-2, -1), d_out).to(v.scalar_type());
    }
    return {dq, fold(dk), fold(dv)};
  }

 private:
  // [b, kv, m, hd] -> [b, h, m, hd]: query head j reads key/value head j / groups.
  torch::Tensor expand(const torch::Tensor& t) const {
    return groups_ == 1 ? t : t.repeat_interleave(groups_, 1);
  }
  // A gradient [b, h, m, hd] summed over each key/value head's query heads -> [b, kv, m, hd].
  torch::Tensor fold(const torch::Tensor& t) const {
    if (groups_ == 1) return t;
    return t.reshape({t.size(0), t.size(1) / groups_, groups_, t.size(2), t.size(3)}).sum(2);
  }
  // fp32 q·kᵀ/sqrt(hd) [b, h, n, m], the future masked with -inf when causal.
  torch::Tensor scores(const torch::Tensor& q, const torch::Tensor& kf, bool causal) const {
    torch::Tensor s =
        torch::matmul(q.to(torch::kFloat32), kf.to(torch::kFloat32).transpose(-2, -1)) * scale_;
    if (causal) {
      const auto mask = torch::ones({s.size(-2), s.size(-1)},
                                    torch::TensorOptions().dtype(torch::kBool).device(s.device()))
                            .triu(1);
      s = s.masked_fill(mask, -INFINITY);
    }
    return s;
  }

  RingKernel kernel_;
  int64_t groups_;
  double scale_;
};

// Messages to the next member of the ring and from the previous one, counted and timed.
class Ring {
 public:
  explicit Ring(const ContextParallelGroup& cp)
      : cp_(cp), next_((cp.rank + 1) % cp.size), previous_((cp.rank + cp.size - 1) % cp.size) {}

  c10::intrusive_ptr<c10d::Work> send(const torch::Tensor& t, int tag) {
    std::vector<torch::Tensor> buffers{t};
    *cp_.bytes_sent += static_cast<int64_t>(t.nbytes());
    return cp_.backend->send(buffers, next_, tag);
  }
  c10::intrusive_ptr<c10d::Work> receive(const torch::Tensor& t, int tag) {
    std::vector<torch::Tensor> buffers{t};
    return cp_.backend->recv(buffers, previous_, tag);
  }
  void wait(const c10::intrusive_ptr<c10d::Work>& work) {
    timed_collective(cp_.collective_ns, cp_.helper_cpu_ns, [&] { return work; });
  }

 private:
  const ContextParallelGroup& cp_;
  int next_, previous_;
};

// The keys and values [2, b, kv, n, hd] a member holds at a ring step, and the next step's on
// their way while it computes: sent to the next member, received from the previous one.
class KeyValueSteps {
 public:
  KeyValueSteps(Ring& ring, const torch::Tensor& k, const torch::Tensor& v)
      : ring_(ring), kv_(torch::stack({k, v}).contiguous()) {}

  const torch::Tensor& current() const { return kv_; }
  /// Starts passing the current ones on, unless this step is the last.
  void post(bool more) {
    if (!more) return;
    next_ = torch::empty_like(kv_);
    sent_ = ring_.send(kv_, kKeyValueTag);
    received_ = ring_.receive(next_, kKeyValueTag);
  }
  /// Makes the received ones current, after both messages completed.
  void advance() {
    if (!sent_) return;
    ring_.wait(sent_);
    ring_.wait(received_);
    kv_ = next_;
    sent_.reset();
    received_.reset();
  }

 private:
  Ring& ring_;
  torch::Tensor kv_, next_;
  c10::intrusive_ptr<c10d::Work> sent_, received_;
};

// Adds `part` (the rows [row, row + rows) of the member's queries) into `acc` (fp32 out and lse
// of all rows): lse' = log(e^lse + e^lse_part), out' = out·e^(lse - lse') + out_part·e^(lse_part
// - lse').
void merge(Partial& acc, const Partial& part, int64_t row, int64_t rows) {
  torch::Tensor out = acc.out.narrow(2, row, rows), lse = acc.lse.narrow(2, row, rows);
  const torch::Tensor merged = torch::logaddexp(lse, part.lse);
  out.copy_(out * (lse - merged).exp().unsqueeze(-1) +
            part.out.to(torch::kFloat32) * (part.lse - merged).exp().unsqueeze(-1));
  lse.copy_(merged);
}

// The member's queries against ring step i's keys and values, those of member j = rank - i:
// i = 0 its own, causal over its 2 chunks (chunk rank precedes chunk 2·cp - 1 - rank); j < rank:
// every query sees j's first chunk (earlier than both of this member's) and none of its second
// (later than both); j > rank: only the second chunk's queries see j's, both of them whole.
enum class StepKind { Own, FirstHalf, SecondHalfQueries };
StepKind step_kind(int i, int j, int rank) {
  if (i == 0) return StepKind::Own;
  return j < rank ? StepKind::FirstHalf : StepKind::SecondHalfQueries;
}

Partial ring_forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const ContextParallelGroup& cp, const Block& block) {
  const int64_t n = q.size(2), half = n / 2;
  Ring ring(cp);
  KeyValueSteps steps(ring, k, v);
  Partial acc;
  for (int i = 0; i < cp.size; ++i) {
    const int j = (cp.rank - i + cp.size) % cp.size;
    steps.post(i + 1 < cp.size);
    const torch::Tensor& kv = steps.current();
    switch (step_kind(i, j, cp.rank)) {
      case StepKind::Own: {
        const Partial own = block.forward(q, k, v, /*causal=*/true);
        acc = {own.out.to(torch::kFloat32).contiguous(), own.lse.contiguous()};
        break;
      }
      case StepKind::FirstHalf:
        merge(acc, block.forward(q, kv[0].narrow(2, 0, half), kv[1].narrow(2, 0, half), false), 0,
              n);
        break;
      case StepKind::SecondHalfQueries:
        merge(acc, block.forward(q.narrow(2, half, half), kv[0], kv[1], false), half, half);
    }
    steps.advance();
  }
  return acc;
}

std::vector<torch::Tensor> ring_backward(const torch::Tensor& dout, const torch::Tensor& q,
                                         const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& out, const torch::Tensor& lse,
                                         const ContextParallelGroup& cp, const Block& block) {
  torch::NoGradGuard no_grad;
  const int64_t n = q.size(2), half = n / 2;
  Ring ring(cp);
  KeyValueSteps steps(ring, k, v);
  torch::Tensor dq = torch::zeros(q.sizes(), q.options().dtype(torch::kFloat32));
  torch::Tensor own;       // the gradients of this member's keys and values [2, b, kv, n, hd]
  torch::Tensor incoming;  // another member's accumulated gradients, received
  c10::intrusive_ptr<c10d::Work> incoming_received;
  std::vector<c10::intrusive_ptr<c10d::Work>> gradient_sends;
  std::vector<torch::Tensor> in_flight;  // the sent gradients, alive until their sends complete
  for (int i = 0; i < cp.size; ++i) {
    const int j = (cp.rank - i + cp.size) % cp.size;
    steps.post(i + 1 < cp.size);
    const torch::Tensor& kv = steps.current();
    torch::Tensor dkv;  // the gradients of member j's keys and values from this member's queries
    switch (step_kind(i, j, cp.rank)) {
      case StepKind::Own: {
        const BlockGrads g = block.backward(dout, q, k, v, out, lse, /*causal=*/true);
        dq += g.dq;
        own = torch::stack({g.dk, g.dv});
        break;
      }
      case StepKind::FirstHalf: {
        const BlockGrads g = block.backward(dout, q, kv[0].narrow(2, 0, half),
                                            kv[1].narrow(2, 0, half), out, lse, false);
        dq += g.dq;
        dkv = torch::zeros_like(kv);
        dkv[0].narrow(2, 0, half).copy_(g.dk);
        dkv[1].narrow(2, 0, half).copy_(g.dv);
        break;
      }
      case StepKind::SecondHalfQueries: {
        const auto rows = [&](const torch::Tensor& t) { return t.narrow(2, half, half); };
        const BlockGrads g =
            block.backward(rows(dout), rows(q), kv[0], kv[1], rows(out), rows(lse), false);
        dq.narrow(2, half, half) += g.dq;
        dkv = torch::stack({g.dk, g.dv});
      }
    }
    if (i >= 1) {
      // The gradients of member j's keys and values travel with its keys and values: started
      // at member j + 1, added to at each member after it, and handed back to j after the last.
      if (i >= 2) {
        ring.wait(incoming_received);
        dkv = incoming + dkv;
      }
      dkv = dkv.contiguous();
      in_flight.push_back(dkv);
      gradient_sends.push_back(ring.send(dkv, kGradientTag));
      incoming = torch::empty_like(kv);
      incoming_received = ring.receive(incoming, kGradientTag);
    }
    steps.advance();
  }
  if (cp.size > 1) {
    ring.wait(incoming_received);  // this member's own, from the member before it
    own = own + incoming;
  }
  for (const auto& work : gradient_sends) ring.wait(work);
  return {dq.to(q.scalar_type()), own[0].contiguous(), own[1].contiguous()};
}

}  // namespace

torch::Tensor context_parallel_positions(int64_t seq_len, const ContextParallelGroup& cp,
                                         const torch::Device& device) {
  const int64_t chunks = 2 * static_cast<int64_t>(cp.size);
  if (seq_len <= 0 || seq_len % chunks != 0)
    throw std::invalid_argument("context_parallel_positions: a sequence of " +
                                std::to_string(seq_len) + " tokens does not split into " +
                                std::to_string(chunks) + " equal chunks");
  const int64_t chunk = seq_len / chunks;
  const auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  return torch::cat(
      {torch::arange(cp.rank * chunk, (cp.rank + 1) * chunk, options),
       torch::arange((chunks - 1 - cp.rank) * chunk, (chunks - cp.rank) * chunk, options)});
}

torch::Tensor context_parallel_shard(const torch::Tensor& x, const ContextParallelGroup& cp) {
  if (cp.size == 1) return x;
  return x.index_select(1, context_parallel_positions(x.size(1), cp, x.device()));
}

torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const ContextParallelGroup& cp, RingKernel kernel) {
  const int64_t heads = q.size(1), kv_heads = k.size(1);
  if (kv_heads <= 0 || heads % kv_heads != 0 || v.size(1) != kv_heads)
    throw std::invalid_argument("ring_attention: " + std::to_string(kv_heads) +
                                " key/value heads do not serve " + std::to_string(heads) +
                                " query heads in equal groups");
  if (q.size(2) % 2 != 0 || k.size(2) != q.size(2) || v.size(2) != q.size(2))
    throw std::invalid_argument(
        "ring_attention: expected an even number of tokens, the same for "
        "q, k and v (2 chunks per member)");
  if (kernel == RingKernel::Fused && !q.device().is_cpu())
    throw std::invalid_argument("ring_attention: the fused kernel takes CPU tensors");
  const Block block(kernel, heads / kv_heads, q.size(3));
  Partial result;
  {
    torch::NoGradGuard no_grad;
    result = ring_forward(q, k, v, cp, block);
  }
  const torch::Tensor out = result.out.to(q.scalar_type());
  // Saved as tensors of their own (detached), so that the node does not hold its own output.
  const torch::Tensor q0 = q.detach(), k0 = k.detach(), v0 = v.detach(), out0 = out.detach(),
                      lse = result.lse;
  return with_backward(
      out, {q, k, v},
      [q0, k0, v0, out0, lse, cp, block](const torch::Tensor& grad) {
        return ring_backward(grad, q0, k0, v0, out0, lse, cp, block);
      },
      "RingAttentionBackward");
}

}  // namespace dtwin::nn
