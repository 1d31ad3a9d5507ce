"""Checks the classification data step: the shipped kjv-books task (scripts/fetch_data.sh,
make_kjv_classification.py) and the GLUE TSV tokenization (tokenize_glue.py).

  1. data/kjv-books: 27,992 train and 3,110 dev verses, 6 labels, no verse in both splits, the
     dev majority class 22.6%; the tokenized files hold the TSVs' labels in order, [CLS] first,
     padding after the tokens, and ids equal to transformers' BertTokenizerFast on the same text;
  2. sentence pairs (GLUE RTE's columns): the second segment has token type 1, truncation keeps
     --max-len;
  3. bad TSVs exit 2 naming FILE:LINE and what was expected: a missing column, a row with a
     column too few, an unknown label, an empty sentence.

Usage: check_glue_data.py ROOT   (the repository root, whose data/ fetch_data.sh filled)
"""

import os
import subprocess
import sys
import tempfile

from safetensors import safe_open
from transformers import BertTokenizerFast

ROOT = sys.argv[1]
DATA = os.path.join(ROOT, "data", "kjv-books")
TOKENIZE = [sys.executable, os.path.join(ROOT, "scripts", "tokenize_glue.py")]
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def rows(split):
    lines = open(os.path.join(DATA, split + ".tsv"), encoding="utf-8").read().splitlines()
    return [line.split("\t") for line in lines[1:]]


def tokenize(task, labels, tsv, out, max_len=128):
    return subprocess.run(TOKENIZE + ["--task", task, "--tokenizer", os.path.join(DATA, "tokenizer"),
                                      "--labels", labels, "--max-len", str(max_len), tsv, out],
                          capture_output=True, text=True, timeout=300)


def main():
    labels = open(os.path.join(DATA, "labels.txt")).read().split()
    train, dev = rows("train"), rows("dev")
    check(len(train) == 27992 and len(dev) == 3110, f"{len(train)} train and {len(dev)} dev verses")
    check(labels == ["law", "history", "wisdom", "prophets", "gospels", "letters"],
          f"labels {labels}")
    majority = max(sum(1 for _, l in dev if l == name) for name in labels) / len(dev)
    check(abs(majority - 0.2257) < 5e-4, f"dev majority class {majority:.4f}")
    # A verse text may recur in the Bible (e.g. refrains); the split is by position, so count only
    # how many dev texts also occur in train.
    shared = len({t for t, _ in dev} & {t for t, _ in train})
    check(shared < 0.05 * len(dev), f"{shared} dev verses' texts also in train (repeated verses)")

    with safe_open(os.path.join(DATA, "dev.safetensors"), "pt") as f:
        ids, mask, y = f.get_tensor("input_ids"), f.get_tensor("attention_mask"), f.get_tensor("labels")
        check(f.metadata()["labels"] == ",".join(labels), "labels in the metadata, in order")
    check(ids.shape == (3110, 128), f"input_ids {tuple(ids.shape)}")
    check([labels[i] for i in y.tolist()] == [l for _, l in dev], "labels follow dev.tsv")
    reference = BertTokenizerFast.from_pretrained(os.path.join(DATA, "tokenizer"))
    same = all(ids[i, :int(mask[i].sum())].tolist() == reference(dev[i][0])["input_ids"]
               for i in range(0, 3110, 97))
    check(same, "ids equal BertTokenizerFast's on every 97th dev verse")
    check(bool((ids[:, 0] == reference.cls_token_id).all()), "[CLS] first")
    lengths = mask.sum(1)
    padded = all(int(mask[i, lengths[i]:].sum()) == 0 for i in range(0, 3110, 31))
    check(padded, "padding only after the tokens")

    with tempfile.TemporaryDirectory() as tmp:
        pairs = os.path.join(tmp, "rte.tsv")
        with open(pairs, "w") as f:
            f.write("index\tsentence1\tsentence2\tlabel\n")
            f.write("0\tIn the beginning God created the heaven and the earth.\t"
                    "God created the earth.\tentailment\n")
            f.write("1\t" + " ".join(["light"] * 200) + "\tThere was darkness.\tnot_entailment\n")
        out = os.path.join(tmp, "rte.safetensors")
        run = tokenize("rte", "entailment,not_entailment", pairs, out, max_len=64)
        check(run.returncode == 0, f"RTE pairs tokenize ({run.stderr.strip()})")
        if run.returncode == 0:
            with safe_open(out, "pt") as f:
                types, m = f.get_tensor("token_type_ids"), f.get_tensor("attention_mask")
                truncated = f.metadata()["truncated"]
            expected = reference("In the beginning God created the heaven and the earth.",
                                 "God created the earth.")["token_type_ids"]
            check(types[0, :len(expected)].tolist() == expected and int(types[0].sum()) > 0,
                  "the second segment has token type 1, as BertTokenizerFast's")
            check(int(m[1].sum()) == 64 and truncated == "1", "a long pair is cut to --max-len")

        def bad(name, text, label_list, words):
            path = os.path.join(tmp, name + ".tsv")
            open(path, "w").write(text)
            run = tokenize("rte", label_list, path, os.path.join(tmp, "bad.safetensors"))
            message = run.stderr.strip()
            check(run.returncode == 2 and all(w in message for w in words),
                  f"{name}: exit {run.returncode} (expected 2) saying {words}: {message!r}")

        good = "0\tA man walks.\tA person moves.\tentailment\n"
        bad("missing-column", "index\tsentence1\tlabel\n" + "0\tA man walks.\tentailment\n",
            "entailment,not_entailment", ["missing-column.tsv:1", "sentence2", "missing"])
        bad("short-row", "index\tsentence1\tsentence2\tlabel\n" + good + "1\tA man walks.\tentailment\n",
            "entailment,not_entailment", ["short-row.tsv:3", "expected 4", "got 3"])
        bad("unknown-label", "index\tsentence1\tsentence2\tlabel\n" + good +
            "1\tA man walks.\tA dog sleeps.\tcontradiction\n",
            "entailment,not_entailment", ["unknown-label.tsv:3", "expected one of", "contradiction"])
        bad("empty-sentence", "index\tsentence1\tsentence2\tlabel\n" + "0\t \tA dog.\tentailment\n",
            "entailment,not_entailment", ["empty-sentence.tsv:2", "sentence1", "empty"])

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
