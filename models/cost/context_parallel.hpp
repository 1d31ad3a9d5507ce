// Closed forms of context parallelism (layout.cp, layout.cp_comm_type): the keys and values one
// GPU exchanges per transformer layer and microbatch, and the seconds of that exchange that the
// attention does not hide.
//
// Notation: Tc = b·s/cp tokens of a microbatch that one GPU holds; per GPU q = (a/tp)·hd query
// columns and c = kv'·hd key (and as many value) columns (models/cost/attention_split.hpp); e
// bytes per element. Under sequence parallelism the attention's input is gathered over tp first,
// so every GPU of a tensor-parallel group attends with its heads for all Tc tokens.
//
// Bytes one GPU sends per layer (forward F; backward = its input-gradient pass):
//  - p2p (ring attention; Transformer Engine's AttnFuncWithCPAndKVP2P): F sends its current K
//    and V chunk on cp − 1 ring steps, (cp − 1)·2·Tc·c·e; the backward sends K, V and the
//    accumulated dK, dV around the ring, twice that.
//  - all_gather: F all-gathers K and V over the ring, each GPU forwarding cp − 1 chunks,
//    (cp − 1)·2·Tc·c·e; the backward all-gathers them again and reduce-scatters dK and dV,
//    twice that.
//  - a2a (DeepSpeed-Ulysses, Jacobs et al. 2023): F turns q, k and v from sequence shards into
//    head shards and the output back, four all-to-alls keeping 1/cp of each tensor,
//    (cp − 1)/cp · Tc·(2q + 2c)·e; the backward the same on the gradients.
//
// Seconds: p2p and all_gather take cp − 1 ring steps over group_ring_hop (cp members tp apart,
// models/cost/group_links.hpp), (cp − 1)·α + bytes/β; a2a is group_all_to_all_seconds. p2p sends
// while the GPU attends to the chunk it holds, 1/cp of the pass's attention time A each: in F
// cp − 1 sends of one K/V chunk, u = α + c/β (c = one chunk's K and V bytes), leave
// (cp − 1)·max(0, u − A/cp) exposed; the backward's cp steps send K/V first, dK/dV last and both
// between (Transformer Engine's backward loop), 2·max(0, u − A/cp) + (cp − 2)·max(0, u2 − A/cp)
// with u2 = α + 2c/β. all_gather and a2a are exposed whole (their results are needed before the
// attention starts, or after it ends).
#pragma once

#include "models/spec/scenario.hpp"

namespace dtwin {

/// Bytes one GPU sends per layer per microbatch of `tokens_per_gpu` (Tc) tokens at `e` bytes per
/// element, in the forward (`backward` false) or in the backward; 0 when cp = 1.
double cp_exchange_bytes(const ModelSpec& model, const LayoutSpec& layout, double tokens_per_gpu,
                         double e, bool backward);

/// Seconds of the exchange of `bytes` (one GPU's, one pass of one layer), nothing overlapped.
double cp_exchange_seconds(const Scenario& scenario, double bytes);

/// Seconds of that exchange a pass adds (the forward's, or with `backward` the backward's),
/// given the pass's attention seconds on the GPU (`attention_s`): p2p overlaps each ring step
/// with a 1/cp share of it (see the file comment); all_gather and a2a add cp_exchange_seconds
/// whole. 0 when cp = 1.
double cp_exposed_seconds(const Scenario& scenario, double bytes, double attention_s,
                          bool backward);

}  // namespace dtwin
