"""Checks dtwin's Hugging Face encoder checkpoints against transformers itself.

For BERT and DistilBERT sequence classifiers, randomly initialised by transformers and saved with
save_pretrained (whole and in shards):
  1. dtwin loads the checkpoint and its logits on padded sentence pairs equal transformers' within
     1e-5 (eval mode, fp32);
  2. the checkpoint dtwin writes back loads into transformers (from_pretrained) with the same
     logits and labels;
  3. a pretraining checkpoint (BertForPreTraining: no classifier, a "cls.*" head) loads with the
     classifier initialised and the unused tensors named;
  4. bad checkpoints exit 2 naming the file and what was expected: a shape that disagrees with
     config.json, a missing tensor, a truncated safetensors file, an unknown model type;
  5. safetensors files of every dtype survive dtwin's reader and writer bit for bit.

Usage: check_hf_checkpoint.py PROBE   (PROBE: the hf_encoder_probe executable)
"""

import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForSequenceClassification, BertConfig, BertForPreTraining,
                          BertForSequenceClassification, DistilBertConfig,
                          DistilBertForSequenceClassification)
from transformers.utils import logging

logging.set_verbosity_error()
logging.disable_progress_bar()
PROBE = sys.argv[1]
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def probe(*args):
    return subprocess.run([PROBE, *args], capture_output=True, text=True, timeout=300)


def bert_config(**extra):
    return BertConfig(vocab_size=120, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
                      intermediate_size=96, max_position_embeddings=40, **extra)


def distilbert_config(**extra):
    return DistilBertConfig(vocab_size=120, dim=48, n_layers=3, n_heads=4, hidden_dim=96,
                            max_position_embeddings=40, **extra)


def inputs(pairs):
    """A batch of 4 sequences of 24 positions: token ids, token types (the second segment 1)
    and padding (lengths 24, 17, 9 and 2)."""
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(1, 120, (4, 24), generator=g)
    mask = torch.zeros(4, 24, dtype=torch.long)
    types = torch.zeros(4, 24, dtype=torch.long)
    for row, length in enumerate([24, 17, 9, 2]):
        mask[row, :length] = 1
        ids[row, length:] = 0
        if pairs:
            types[row, length // 2:length] = 1
    out = {"input_ids": ids, "attention_mask": mask}
    if pairs:
        out["token_type_ids"] = types
    return out


def logits_of(model, batch):
    model.eval()
    with torch.no_grad():
        return model(**batch).logits


def compare(name, model, shard, tmp):
    folder = os.path.join(tmp, name)
    model.save_pretrained(folder, **({"max_shard_size": "20KB"} if shard else {}))
    if shard:
        check(os.path.exists(os.path.join(folder, "model.safetensors.index.json")),
              f"{name}: transformers wrote shards and their index")
    batch = inputs(pairs=isinstance(model, BertForSequenceClassification))
    save_file(batch, os.path.join(tmp, "inputs.safetensors"))
    out, saved = os.path.join(tmp, name + ".logits"), os.path.join(tmp, name + "-dtwin")
    run = probe("logits", folder, os.path.join(tmp, "inputs.safetensors"), out, saved)
    check(run.returncode == 0, f"{name}: dtwin loads the checkpoint ({run.stderr.strip()})")
    if run.returncode != 0:
        return
    expected = logits_of(model, batch)
    diff = (load_file(out)["logits"] - expected).abs().max().item()
    check(diff <= 1e-5, f"{name}: dtwin's logits equal transformers' (max |diff| {diff:.2e})")
    back = AutoModelForSequenceClassification.from_pretrained(saved)
    diff = (logits_of(back, batch) - expected).abs().max().item()
    check(diff <= 1e-5, f"{name}: dtwin's checkpoint loads into transformers (max |diff| {diff:.2e})")
    check(back.config.id2label == model.config.id2label,
          f"{name}: labels kept ({back.config.id2label})")


def expect_error(name, args, words):
    run = probe(*args)
    message = run.stderr.strip()
    check(run.returncode == 2 and all(w in message for w in words),
          f"{name}: exit {run.returncode} (expected 2) saying {words}: {message!r}")


def main():
    torch.manual_seed(0)
    labels = {0: "entailment", 1: "not_entailment", 2: "neutral"}
    with tempfile.TemporaryDirectory() as tmp:
        bert = BertForSequenceClassification(bert_config(id2label=labels))
        distil = DistilBertForSequenceClassification(distilbert_config())
        compare("bert", bert, False, tmp)
        compare("bert-sharded", bert, True, tmp)
        compare("distilbert", distil, False, tmp)
        compare("distilbert-sharded", distil, True, tmp)

        pre = os.path.join(tmp, "pretraining")
        BertForPreTraining(bert_config()).save_pretrained(pre)
        save_file(inputs(True), os.path.join(tmp, "inputs.safetensors"))
        run = probe("logits", pre, os.path.join(tmp, "inputs.safetensors"),
                    os.path.join(tmp, "pre.logits"))
        check(run.returncode == 0 and "classifier.weight: not in the checkpoint" in run.stdout
              and "cls.predictions" in run.stdout,
              f"a pretraining checkpoint loads with a new head ({run.stdout.count('note')} notes)")

        # Bad checkpoints.
        bad = os.path.join(tmp, "bad-shape")
        bert.save_pretrained(bad)
        config = json.load(open(os.path.join(bad, "config.json")))
        config["intermediate_size"] = 80
        json.dump(config, open(os.path.join(bad, "config.json"), "w"))
        expect_error("a shape config.json does not imply",
                     ["logits", bad, os.path.join(tmp, "inputs.safetensors"), "/dev/null"],
                     ["model.safetensors", "intermediate.dense.weight", "expected shape [80, 48]",
                      "got [96, 48]"])
        missing = os.path.join(tmp, "missing")
        bert.save_pretrained(missing)
        weights = load_file(os.path.join(missing, "model.safetensors"))
        del weights["bert.encoder.layer.2.output.dense.bias"]
        save_file(weights, os.path.join(missing, "model.safetensors"))
        expect_error("a missing tensor",
                     ["logits", missing, os.path.join(tmp, "inputs.safetensors"), "/dev/null"],
                     ["bert.encoder.layer.2.output.dense.bias", "missing"])
        path = os.path.join(missing, "model.safetensors")
        data = open(path, "rb").read()
        open(path, "wb").write(data[:len(data) - 100])
        expect_error("a truncated safetensors file",
                     ["logits", missing, os.path.join(tmp, "inputs.safetensors"), "/dev/null"],
                     ["model.safetensors", "data_offsets", "expected"])
        config["model_type"] = "roberta"
        json.dump(config, open(os.path.join(bad, "config.json"), "w"))
        expect_error("another model type",
                     ["logits", bad, os.path.join(tmp, "inputs.safetensors"), "/dev/null"],
                     ["config.json", "model_type", "expected 'bert' or 'distilbert'", "roberta"])

        # Every dtype through dtwin's reader and writer.
        g = torch.Generator().manual_seed(3)
        tensors = {
            "f64": torch.randn(3, 5, generator=g, dtype=torch.float64),
            "f32": torch.randn(7, generator=g),
            "f16": torch.randn(2, 3, 4, generator=g).half(),
            "bf16": torch.randn(6, 2, generator=g).bfloat16(),
            "i64": torch.randint(-2**40, 2**40, (5,), generator=g),
            "i32": torch.randint(-2**30, 2**30, (4, 1), generator=g, dtype=torch.int32),
            "i16": torch.randint(-2**14, 2**14, (3,), generator=g, dtype=torch.int16),
            "i8": torch.randint(-128, 127, (9,), generator=g, dtype=torch.int8),
            "u8": torch.randint(0, 255, (2, 2), generator=g, dtype=torch.uint8),
            "bool": torch.rand(5, generator=g) > 0.5,
            "scalar": torch.tensor(2.5),
            "empty": torch.zeros(0, 4),
        }
        source, copy = os.path.join(tmp, "dtypes.safetensors"), os.path.join(tmp, "copy.safetensors")
        save_file(tensors, source)
        run = probe("copy", source, copy)
        back = load_file(copy) if run.returncode == 0 else {}
        same = back.keys() == tensors.keys() and all(
            back[k].dtype == v.dtype and back[k].shape == v.shape and torch.equal(back[k], v)
            for k, v in tensors.items())
        check(same, f"12 tensors of 10 dtypes, a scalar and an empty one round-trip ({run.stderr.strip()})")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
