#!/usr/bin/env python3
"""dtwin's pipeline runtime against PyTorch's own torch.distributed.pipelining on the quickstart
model (LLaMA, vocab 4096, d 288, 6 layers, 6 heads, ffn 768, seq 256; pp 3, microbatches of 1
sequence, AdamW lr 3e-3, betas 0.9/0.95, eps 1e-8, weight decay 0.1, fp32), for each schedule
kind both implement:

  dtwin gpipe            torch ScheduleGPipe
  dtwin 1f1b             torch Schedule1F1B
  dtwin interleaved-1f1b torch ScheduleInterleaved1F1B  (2 stages per rank, 6 microbatches:
                         dtwin needs microbatches to be a multiple of pp for interleaving)
  dtwin zb-h1            torch ScheduleInterleavedZeroBubble with 1 stage per rank (its ZB1P
                         generator, which with one local stage is ZB-H1), and for reference
                         torch ScheduleZBVZeroBubble (ZB-V: 2 stages per rank placed in a V)

It prints
  (a) whether torch's per-rank compute order (schedule.pipeline_order, compute actions only)
      equals dtwin's (`dtwin schedule --compute-only --format json`), or the first difference;
  (b) a Markdown table of the median step time of each (steps after the first) and the largest
      relative difference of the per-step losses over the first LOSS_STEPS steps.

Both runs start from the same weights and read the same batches: build/bench/
dtwin_export_reference writes them exactly as dtwin's ranks build and read them. Each
implementation runs 3 CPU processes over Gloo, one intra-op thread each (what dtwin's ranks
take on a 2-core machine: max(1, cores / 3)).

Usage (from the repository root, after `cmake --build build -j2`):
  .venv/bin/python bench/vs_torch_pipelining.py [steps]      (default 8 steps per run)
The script re-runs itself with --worker for each torch rank.
"""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules

DTWIN = "build/cli/dtwin"
EXPORTER = "build/bench/dtwin_export_reference"
SCENARIO = "scenarios/quickstart.yaml"
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--worker" else 8
LOSS_STEPS = 3  # the first steps whose losses are compared
WORLD = 3  # layout.pp of the quickstart, dp 1
# The quickstart model (scenarios/quickstart.yaml); checked against the exported tensors.
V, D, L, H, FFN, S = 4096, 288, 6, 6, 768, 256
NORM_EPS, ROPE_BASE = 1e-5, 10000.0  # dtwin::nn::StageModule::kNormEps, kRopeBase
ADAMW = dict(lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)  # runtime/rank_model.cpp
TIMEOUT_S = 240  # per torch run

# One row per comparison: dtwin's --set overrides, the torch schedule class, how many stages
# each rank holds and how stages map to ranks ("loop": stage s on rank s mod pp, as dtwin;
# "v": rank r holds stages r and 2·pp-1-r, as ZB-V needs).
KINDS = [
    dict(name="gpipe", dtwin=["layout.schedule=gpipe"], torch="ScheduleGPipe",
         per_rank=1, placement="loop"),
    dict(name="1f1b", dtwin=["layout.schedule=1f1b"], torch="Schedule1F1B",
         per_rank=1, placement="loop"),
    dict(name="interleaved-1f1b",
         dtwin=["layout.schedule=interleaved-1f1b", "layout.virtual_stages=2",
                "layout.microbatches=6"],
         torch="ScheduleInterleaved1F1B", per_rank=2, placement="loop"),
    dict(name="zb-h1", dtwin=["layout.schedule=zb-h1"], torch="ScheduleInterleavedZeroBubble",
         per_rank=1, placement="loop"),
    dict(name="zb-h1 / torch ZB-V", dtwin=["layout.schedule=zb-h1"],
         torch="ScheduleZBVZeroBubble", per_rank=2, placement="v"),
]
COMPUTE = {"F", "B", "I", "W"}  # torch's FORWARD, FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT
ACTION = re.compile(r"(\d+)([A-Z_]+)(\d*)")  # str(_Action): stage, type, microbatch ("0SEND_F1")


# ---------------------------------------------------------------------------------------------
# The model: models/nn/llama_layers.cpp and models/nn/stage_module.cpp in torch.nn, parameters under
# dtwin's global names.


def rms_norm(x, weight):
    """RMSNorm as dtwin: normalise in fp32, cast back to x's dtype, then scale by the weight."""
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)
    return normed.to(x.dtype) * weight


def linear(x, weight):
    """x @ weightᵀ, as dtwin's SplitLinear computes it (torch::matmul(input, weight.t()))."""
    return torch.matmul(x, weight.t())


def rotary_tables(seq_len, head_dim):
    """cos, sin [s, hd] exactly as dtwin::nn::rotary_tables (fp32, rotate-half layout)."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / float(head_dim)
    inv_freq = torch.pow(ROPE_BASE, -exponents)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    full = torch.cat((angles, angles), dim=-1)
    return full.cos(), full.sin()


def apply_rotary(x, cos, sin):
    """x·cos + rotate_half(x)·sin with rotate_half([x1, x2]) = [-x2, x1]."""
    half = x.size(-1) // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Weight(torch.nn.Module):
    """A module holding one parameter named "weight" (norms, embedding, linear layers)."""

    def __init__(self, *shape):
        """An uninitialised fp32 parameter of `shape` (loaded from dtwin's export)."""
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(*shape))


class Attention(torch.nn.Module):
    """Causal multi-head self-attention with RoPE on q and k; wq, wk, wv, wo [d, d]."""

    def __init__(self):
        """Four [d, d] projections without bias."""
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (Weight(D, D) for _ in range(4))

    def forward(self, x, cos, sin):
        """x [b, s, d] -> [b, s, d] through SDPA with is_causal, as dtwin."""
        b, s, d = x.shape
        heads = lambda t: t.view(b, s, H, d // H).transpose(1, 2)
        q = apply_rotary(heads(linear(x, self.wq.weight)), cos, sin)
        k = apply_rotary(heads(linear(x, self.wk.weight)), cos, sin)
        v = heads(linear(x, self.wv.weight))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return linear(out.transpose(1, 2).reshape(b, s, d), self.wo.weight)


class FeedForward(torch.nn.Module):
    """SwiGLU: w2(silu(w1 x) · w3 x), w1 and w3 [f, d], w2 [d, f]."""

    def __init__(self):
        """Three projections without bias."""
        super().__init__()
        self.w1, self.w2, self.w3 = Weight(FFN, D), Weight(D, FFN), Weight(FFN, D)

    def forward(self, x):
        """x [b, s, d] -> [b, s, d]."""
        return linear(F.silu(linear(x, self.w1.weight)) * linear(x, self.w3.weight), self.w2.weight)


class DecoderLayer(torch.nn.Module):
    """Pre-norm decoder layer: h = x + attn(attn_norm(x)); h + mlp(mlp_norm(h))."""

    def __init__(self):
        """attn_norm, attn, mlp_norm, mlp: dtwin's submodule names."""
        super().__init__()
        self.attn_norm, self.attn = Weight(D), Attention()
        self.mlp_norm, self.mlp = Weight(D), FeedForward()

    def forward(self, x, cos, sin):
        """x [b, s, d] -> [b, s, d]."""
        h = x + self.attn(rms_norm(x, self.attn_norm.weight), cos, sin)
        return h + self.mlp(rms_norm(h, self.mlp_norm.weight))


class StageModel(torch.nn.Module):
    """Layers [first, first + count) of the LLaMA, with the embedding on the first stage and the
    final norm and LM head on the last; state_dict names are dtwin's global names. The last stage
    returns fp32 logits [b, s, V] (the schedule's loss_fn takes the cross-entropy)."""

    def __init__(self, first, count, has_embedding, has_head):
        """The stage's modules, uninitialised."""
        super().__init__()
        self.has_embedding, self.has_head = has_embedding, has_head
        if has_embedding:
            self.embed = Weight(V, D)
        self.layers = torch.nn.ModuleDict({str(i): DecoderLayer() for i in range(first, first + count)})
        if has_head:
            self.norm, self.head = Weight(D), Weight(V, D)

    def forward(self, x):
        """Token ids [b, s] (first stage) or hidden states [b, s, d] -> hidden states, or logits
        on the last stage."""
        if self.has_embedding:
            x = F.embedding(x, self.embed.weight)
        cos, sin = rotary_tables(x.size(1), D // H)
        for layer in self.layers.values():
            x = layer(x, cos, sin)
        if not self.has_head:
            return x
        return linear(rms_norm(x, self.norm.weight), self.head.weight).float()


def cross_entropy(logits, targets):
    """The mean cross-entropy of one microbatch, as StageModule's last stage computes it."""
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


# ---------------------------------------------------------------------------------------------
# One torch rank (run as `vs_torch_pipelining.py --worker SPEC_JSON REF OUT`).


def stages_of_rank(rank, kind):
    """The global stage indices rank `rank` holds, and the number of stages."""
    num_stages = WORLD * kind["per_rank"]
    if kind["placement"] == "v":
        return [rank, num_stages - 1 - rank], num_stages
    return [rank + k * WORLD for k in range(kind["per_rank"])], num_stages


def build_stage_model(stage, num_stages, params):
    """The StageModel of `stage` (layers split evenly, as dtwin splits them without
    layout.stage_layers), loaded with dtwin's exported parameters by global name."""
    per_stage = L // num_stages
    model = StageModel(stage * per_stage, per_stage, stage == 0, stage == num_stages - 1)
    state = {name: params[name] for name in model.state_dict()}
    model.load_state_dict(state, strict=True)
    return model


def record_compute(stage, log):
    """Makes `stage` append each compute call it runs to `log` as dtwin-style action strings
    ("<stage>F<mb>", B for a full backward, I for an input-only backward, W for weights)."""
    forward, backward, weight = (stage.forward_one_chunk, stage.backward_one_chunk,
                                 stage.backward_weight_one_chunk)

    def forward_one_chunk(fwd_chunk_id, *args, **kwargs):
        """Logs F, then runs the stage's forward."""
        log.append(f"{stage.stage_index}F{fwd_chunk_id}")
        return forward(fwd_chunk_id, *args, **kwargs)

    def backward_one_chunk(bwd_chunk_id, loss=None, full_backward=True, last_backward=False):
        """Logs B (full backward) or I (input gradients only), then runs it."""
        log.append(f"{stage.stage_index}{'B' if full_backward else 'I'}{bwd_chunk_id}")
        return backward(bwd_chunk_id, loss=loss, full_backward=full_backward,
                        last_backward=last_backward)

    def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
        """Logs W, then runs the deferred weight gradients."""
        log.append(f"{stage.stage_index}W{bwd_chunk_id}")
        return weight(bwd_chunk_id, last_backward=last_backward)

    stage.forward_one_chunk = forward_one_chunk
    stage.backward_one_chunk = backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk


def worker(kind, ref_path, out_path):
    """Trains this rank's stages with torch.distributed.pipelining for the exported steps and
    writes JSON to out_path: the schedule's pipeline_order (rank 0), per-step losses (the rank
    with the last stage), per-step seconds, or the error."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    result = {"rank": rank}
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))
        ref = torch.load(ref_path, weights_only=False)
        params = {k[len("param/"):]: v for k, v in ref.items() if k.startswith("param/")}
        inputs, targets = ref["inputs"], ref["targets"]  # [steps, m, b, s]
        steps, microbatches = inputs.shape[0], inputs.shape[1]
        stage_ids, num_stages = stages_of_rank(rank, kind)
        if kind["placement"] == "loop" and ref["stage_num_layers"].numel() == num_stages:
            assert ref["stage_num_layers"].tolist() == [L // num_stages] * num_stages
        models = [build_stage_model(s, num_stages, params) for s in stage_ids]
        stages = [PipelineStage(m, s, num_stages, torch.device("cpu"))
                  for m, s in zip(models, stage_ids)]
        cls = getattr(schedules, kind["torch"])
        # scale_grads=True divides the summed gradients by the microbatch count after the
        # backward; dtwin back-propagates loss / microbatches instead. Equal in exact
        # arithmetic and in fp32 for a power-of-two count; rounded differently otherwise (with
        # 6 microbatches the step-2 losses differ by ~2e-6 relative).
        multi = issubclass(cls, schedules.PipelineScheduleMulti)  # takes a list of stages
        schedule = cls(stages if multi else stages[0], n_microbatches=microbatches,
                       loss_fn=cross_entropy, scale_grads=True)
        if rank == 0:
            result["order"] = {str(r): [str(a) if a is not None else None for a in actions]
                               for r, actions in schedule.pipeline_order.items()}
        executed = []  # the compute calls this rank really runs (step 1)
        for stage in stages:
            record_compute(stage, executed)
        optimizers = [torch.optim.AdamW(m.parameters(), **ADAMW) for m in models]
        first = any(s == 0 for s in stage_ids)
        last = any(s == num_stages - 1 for s in stage_ids)
        result["losses"], result["seconds"] = [], []
        for step in range(steps):
            ids = inputs[step].reshape(-1, inputs.shape[-1])  # microbatch j = rows j·b .. j·b+b-1
            target = targets[step].reshape(-1, targets.shape[-1])
            losses = []
            start = time.perf_counter()
            schedule.step(*((ids,) if first else ()), target=target if last else None,
                          losses=losses, return_outputs=False)
            for opt in optimizers:
                opt.step()
                opt.zero_grad()
            # The step-end loss reduction over every rank, as dtwin's: both time the whole step.
            dist.all_reduce(torch.zeros(2, dtype=torch.float64))
            result["seconds"].append(time.perf_counter() - start)
            if step == 0:
                result["executed"] = list(executed)
            # The step's mean loss over microbatches, summed over ranks: a global
            # synchronisation at the end of the step, as dtwin's step-end loss all-reduce.
            mean = sum(l.item() for l in losses) / microbatches if last else 0.0
            total = torch.tensor([mean], dtype=torch.float64)
            dist.all_reduce(total)
            result["losses"].append(total.item())
        result["reporter"] = last
        dist.destroy_process_group()
    except Exception as error:  # reported in the table, first line only
        traceback.print_exc()
        message = str(error).strip().splitlines()
        result["error"] = f"{type(error).__name__}: {message[0] if message else ''}"
        result["error_time"] = time.time()
    with open(out_path, "w") as f:
        json.dump(result, f)
    os._exit(1 if "error" in result else 0)


# ---------------------------------------------------------------------------------------------
# The driver.


def free_port():
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def export_reference(overrides, steps, path):
    """Writes dtwin's initial parameters and the batches of `steps` steps to `path`."""
    args = [EXPORTER, SCENARIO, "--steps", str(steps), "-o", path]
    for o in overrides:
        args += ["--set", o]
    subprocess.run(args, check=True)


def dtwin_schedule(overrides):
    """dtwin's compute-only schedule as JSON: "layout" (with "microbatches") and "ranks" (a
    list of action strings per rank)."""
    args = [DTWIN, "schedule", SCENARIO, "--compute-only", "--format", "json"]
    for o in overrides:
        args += ["--set", o]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def dtwin_train(overrides, steps, workdir):
    """Runs `dtwin train` for `steps` steps; returns per-step (losses, seconds) from loss.csv."""
    out = os.path.join(workdir, "dtwin")
    args = [DTWIN, "train", SCENARIO, "--set", f"training.steps={steps}", "-o", out]
    for o in overrides:
        args += ["--set", o]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "loss.csv")) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    return [float(r[1]) for r in rows], [float(r[3]) for r in rows]


def torch_train(kind, ref_path, workdir):
    """Runs the torch pipeline on WORLD local processes; returns the per-rank result dicts."""
    port = free_port()
    procs, outs, logs = [], [], []
    for rank in range(WORLD):
        out = os.path.join(workdir, f"torch-{rank}.json")
        log = os.path.join(workdir, f"torch-{rank}.log")
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(WORLD),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        with open(log, "w") as stderr:
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps(kind), ref_path, out], env=env,
                stdout=subprocess.DEVNULL, stderr=stderr))
        outs.append(out)
        logs.append(log)
    deadline = time.time() + TIMEOUT_S
    for proc in procs:
        try:
            proc.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    results = []
    for rank, (out, log) in enumerate(zip(outs, logs)):
        if os.path.exists(out):
            with open(out) as f:
                results.append(json.load(f))
        else:
            with open(log) as f:
                last = [line for line in f.read().splitlines() if line.strip()]
            results.append({"rank": rank, "error": last[-1] if last else "no result (timed out?)",
                            "error_time": float("inf")})
    return results


def compute_order(order):
    """torch's pipeline_order reduced to compute actions (F, B, I, W), Nones dropped."""
    kept = {}
    for rank, actions in order.items():
        kept[int(rank)] = [a for a in actions
                           if a is not None and ACTION.fullmatch(a)
                           and ACTION.fullmatch(a).group(2) in COMPUTE]
    return [kept[r] for r in sorted(kept)]


def first_difference(dtwin_ranks, torch_ranks):
    """'identical' or the first (rank, position, dtwin action, torch action) that differs."""
    for rank, (mine, theirs) in enumerate(zip(dtwin_ranks, torch_ranks)):
        for pos in range(max(len(mine), len(theirs))):
            a = mine[pos] if pos < len(mine) else "(end)"
            b = theirs[pos] if pos < len(theirs) else "(end)"
            if a != b:
                return f"differs: rank {rank}, position {pos}: dtwin {a}, torch {b}"
    if len(dtwin_ranks) != len(torch_ranks):
        return f"differs: dtwin has {len(dtwin_ranks)} ranks, torch {len(torch_ranks)}"
    return "identical"


def median_after_first(seconds):
    """Median of the step times after the first (warm-up) step."""
    return statistics.median(seconds[1:])


def run_kind(kind, workdir):
    """Order comparison and training of one schedule kind; returns a result dict."""
    row = {"kind": kind}
    ref = os.path.join(workdir, "reference.pt")
    export_reference(kind["dtwin"], STEPS, ref)
    dtwin = dtwin_schedule(kind["dtwin"])
    row["dtwin_order"], row["microbatches"] = dtwin["ranks"], dtwin["layout"]["microbatches"]
    results = torch_train(kind, ref, workdir)
    order = next((r["order"] for r in results if "order" in r), None)
    row["order"] = compute_order(order) if order else None
    executed = [r.get("executed") for r in sorted(results, key=lambda r: r["rank"])]
    row["executed"] = executed if all(e is not None for e in executed) else None
    errors = sorted((r["error_time"], r["error"]) for r in results if "error" in r)
    if errors:
        row["error"] = errors[0][1]
    else:
        reporter = next(r for r in results if r.get("reporter"))
        row["torch_losses"], row["torch_seconds"] = reporter["losses"], reporter["seconds"]
    row["dtwin_losses"], row["dtwin_seconds"] = dtwin_train(kind["dtwin"], STEPS, workdir)
    return row


def bad_microbatches(order, microbatches):
    """The actions of a compute order that name a microbatch outside [0, microbatches)."""
    return [a for actions in order for a in actions
            if int(ACTION.fullmatch(a).group(3)) >= microbatches]


def print_orders(rows):
    """Section (a): each kind's torch orders (IR and executed) against dtwin's."""
    print("## (a) Per-rank compute order: torch vs `dtwin schedule --compute-only`\n")
    print("`pipeline_order` is the torch schedule's IR (None, communication and REDUCE_GRAD "
          "entries dropped); `executed` is the order of the compute calls (forward_one_chunk, "
          "backward_one_chunk, backward_weight_one_chunk) each torch rank really made in step 1. "
          "ScheduleGPipe and Schedule1F1B run their own loop, not pipeline_order. Action names "
          "are <stage><F|B|I|W><microbatch> on both sides (torch's FULL_BACKWARD is B).\n")
    for row in rows:
        kind = row["kind"]
        print(f"- {kind['name']} (dtwin --set {' --set '.join(kind['dtwin'])}; torch "
              f"{kind['torch']}, {kind['per_rank']} stage(s) per rank, {kind['placement']} "
              f"placement, {row['microbatches']} microbatches)")
        for label, name in (("order", "pipeline_order"), ("executed", "executed")):
            theirs = row[label]
            if not theirs:
                print(f"  - {name}: none ({row.get('error', 'unknown error')})")
                continue
            print(f"  - {name}: {first_difference(row['dtwin_order'], theirs)}")
            for rank, (mine, other) in enumerate(zip(row["dtwin_order"], theirs)):
                if mine != other:
                    print(f"    - rank {rank} dtwin: {' '.join(mine)}")
                    print(f"    - rank {rank} torch: {' '.join(other)}")
            bad = bad_microbatches(theirs, row["microbatches"])
            if bad:
                print(f"    - torch's {name} names microbatches that do not exist: "
                      f"{' '.join(bad)}")
    print("\nScheduleInterleavedZeroBubble generates ZB1P (Qi et al. 2024) for any number of "
          "local stages; with 1 stage per rank it is ZB-H1. ScheduleZBVZeroBubble needs exactly "
          "2 stages per rank placed in a V (rank r holds stages r and 2pp-1-r, here 6 stages of "
          "1 layer), which dtwin's layouts (stage s on rank s mod pp) cannot express, so its "
          "order cannot equal dtwin's zb-h1; its row in (b) sets it against dtwin's zb-h1 (same "
          "model and batches, a different schedule).")
    if any("not connected" in row.get("error", "") for row in rows):
        print("On Gloo, ScheduleZBVZeroBubble fails before its first step: rank 2 holds the "
              "adjacent stages 2 and 3, so PipelineStage's neighbour handshake "
              "(_get_init_p2p_neighbors_ops) sends to its own rank, and Gloo has no pair to "
              "itself ('Pair is not connected').")
    print()


def print_table(rows):
    """Section (b): the Markdown table of step times and loss differences, then the losses."""
    print(f"## (b) Step time (median of steps 2..{STEPS}) and loss (steps 1..{LOSS_STEPS})\n")
    print("| schedule | torch schedule | dtwin step s | torch step s | dtwin / torch | "
          f"max rel. loss diff (steps 1-{LOSS_STEPS}) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        kind = row["kind"]
        dtwin_s = median_after_first(row["dtwin_seconds"])
        if "error" in row:
            print(f"| {kind['name']} | {kind['torch']} | {dtwin_s:.3f} | error: {row['error']} "
                  "| - | - |")
            continue
        torch_s = median_after_first(row["torch_seconds"])
        diff = max(abs(a - b) / abs(a) for a, b in
                   zip(row["dtwin_losses"][:LOSS_STEPS], row["torch_losses"][:LOSS_STEPS]))
        print(f"| {kind['name']} | {kind['torch']} | {dtwin_s:.3f} | {torch_s:.3f} | "
              f"{dtwin_s / torch_s:.3f} | {diff:.2e} |")
    print("\nPer-step losses, dtwin / torch, and step seconds, dtwin / torch:")
    for row in rows:
        if "error" in row:
            continue
        losses = ", ".join(f"{a:.7f}/{b:.7f}" for a, b in
                           zip(row["dtwin_losses"][:LOSS_STEPS], row["torch_losses"]))
        seconds = ", ".join(f"{a:.3f}/{b:.3f}" for a, b in
                            zip(row["dtwin_seconds"], row["torch_seconds"]))
        print(f"- {row['kind']['name']}: losses {losses}; seconds {seconds}")


def main():
    """Runs every kind, then prints the order comparison and the Markdown table."""
    for path in (DTWIN, EXPORTER):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run `cmake --build build -j2` first")
    rows = []
    for kind in KINDS:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as workdir:
            rows.append(run_kind(kind, workdir))
        print(f"# {kind['name']}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(f"torch {torch.__version__}; dtwin and torch each run {WORLD} CPU processes over Gloo "
          f"with 1 intra-op thread each, fp32, {STEPS} steps per run, {os.cpu_count()} cores\n")
    print_orders(rows)
    print_table(rows)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        main()
