#!/usr/bin/env python3
"""Validation against published GPU results: simulates every scenario in validation/ with the
shipped device descriptions and prints predicted against published iteration time and
teraFLOP/s per GPU (each computed with its source's own FLOP formula), the error of each row and
the mean and max |error|. Prints a Markdown table (README, "Validation against published runs").

Each scenario's header has one line
  # validate: source=...; iteration_s=<published seconds>; flops=<formula>[; ...]
with flops one of
  narayanan-eq3      96·B·s·l·h²·(1 + s/6h + V/16lh)  (Narayanan et al. 2021, eq. 3; counts the
                     forward that full recomputation repeats)
  korthikanti-model  72·B·l·s·h²·(1 + s/6h + V/12hl)  (Korthikanti et al. 2022, Appendix A,
                     model FLOPs: MFU's numerator)
  torchtitan         B·s·(6·N + 12·l·h·s)  (torchtitan's get_num_flop_per_token, N every
                     parameter of the LLaMA, embedding included, as torchtitan counted it when
                     docs/performance.md was written; N = l·(2h² + 2h·kv·h/a + 3h·f + 2h) + 2Vh + h
                     with kv = n_kv_heads, a = n_heads, f = ffn_hidden: grouped-query attention)
  nemo-dense         B·s·(12·l·h²·(1 + g/a + s/h) + 18·l·f·h + 6·V·h)  (the model flops of NVIDIA's
                     DGX Cloud Llama 3.1 recipes, llama3.1/README_8b.md's Notes: g = n_kv_heads,
                     a = n_heads, f = ffn_hidden; attention counted without the causal mask's
                     half, s/h; 4.74E+14 per sequence for Llama 3.1 8B at s 8192)
  nemo-moe           B·s·(12·l·h²·(1 + g/a + s/2h) + 18·l·fe·h·k + 6·V·h)  (the model flops of
                     NVIDIA's DGX Cloud MoE recipes, grok1/README.md's Notes: g = n_kv_heads,
                     a = n_heads, fe = the experts' FFN width, k = top_k; every layer counted as a
                     MoE layer, the router left out)

Usage: python3 bench/validate.py [path/to/dtwin [scenario.yaml ...]] (default: validation/*.yaml)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

DTWIN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/dtwin"


def header(path):
    """The `# validate:` fields and the model/layout figures the FLOP formulas need."""
    fields, dims = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("# validate:"):
                for part in line[len("# validate:"):].split(";"):
                    key, _, value = part.strip().partition("=")
                    fields[key] = value
            for key in ("d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_hidden", "vocab_size",
                        "seq_len", "dp", "microbatches", "micro_batch_size", "nodes",
                        "devices_per_node", "expert_ffn_hidden", "top_k"):
                stripped = line.strip()
                if stripped.startswith(key + ":"):
                    dims[key] = int(stripped.split(":")[1].split("#")[0])
    return fields, dims


def step_flops(formula, d):
    """FLOPs of one iteration by the source's formula."""
    B = d["dp"] * d["microbatches"] * d["micro_batch_size"]
    s, l, h, V = d["seq_len"], d["n_layers"], d["d_model"], d["vocab_size"]
    if formula == "narayanan-eq3":
        return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    if formula == "korthikanti-model":
        return 72 * B * l * s * h * h * (1 + s / (6 * h) + V / (12 * h * l))
    if formula == "torchtitan":
        a, f = d["n_heads"], d["ffn_hidden"]
        kv = d.get("n_kv_heads", a)
        N = l * (2 * h * h + 2 * h * kv * (h // a) + 3 * h * f + 2 * h) + 2 * V * h + h
        return B * s * (6 * N + 12 * l * h * s)
    if formula == "nemo-dense":
        g, a, f = d["n_kv_heads"], d["n_heads"], d["ffn_hidden"]
        return B * s * (12 * l * h * h * (1 + g / a + s / h) + 18 * l * f * h + 6 * V * h)
    if formula == "nemo-moe":
        g, a, fe, k = d["n_kv_heads"], d["n_heads"], d["expert_ffn_hidden"], d["top_k"]
        return B * s * (12 * l * h * h * (1 + g / a + s / (2 * h)) + 18 * l * fe * h * k
                        + 6 * V * h)
    sys.exit(f"unknown FLOP formula '{formula}'")


def simulate(path):
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([DTWIN, "simulate", path, "--allow-oom", "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        with open(os.path.join(out, "predicted.summary.json")) as f:
            return json.load(f)["step_time_s"], wall


def group_of(path):
    """The validation set a scenario belongs to: its file name up to the second '-'
    (narayanan2021-t1, qi2024-t4, dgxc-h100, ...)."""
    return "-".join(os.path.basename(path).split("-")[:2])


rows, errors, groups = [], [], {}
for path in sys.argv[2:] or sorted(glob.glob("validation/*.yaml")):
    fields, dims = header(path)
    published = float(fields["iteration_s"])
    predicted, wall = simulate(path)
    gpus = dims["nodes"] * dims["devices_per_node"]
    flops = step_flops(fields["flops"], dims)
    error = predicted / published - 1
    errors.append(abs(error))
    groups.setdefault(group_of(path), []).append(error)
    rows.append(f"| {fields['source']} | {gpus} | {published:.2f} | {predicted:.2f} | "
                f"{flops / published / gpus / 1e12:.0f} | {flops / predicted / gpus / 1e12:.0f} | "
                f"{error:+.1%} | {wall:.1f} |")
    print(rows[-1], file=sys.stderr, flush=True)

print("| published result | GPUs | published s | predicted s | published TFLOP/s/GPU | "
      "predicted TFLOP/s/GPU | error | sim wall s |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print(f"\nmean |error| {sum(errors) / len(errors):.1%}, max |error| {max(errors):.1%} "
      f"over {len(errors)} rows")
print("\n| set | rows | mean \\|error\\| | max \\|error\\| | mean signed error |")
print("|---|---|---|---|---|")
for name, signed in sorted(groups.items()):
    magnitudes = [abs(e) for e in signed]
    print(f"| {name} | {len(signed)} | {sum(magnitudes) / len(signed):.1%} | "
          f"{max(magnitudes):.1%} | {sum(signed) / len(signed):+.1%} |")
