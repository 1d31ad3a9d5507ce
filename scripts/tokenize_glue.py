"""Tokenizes a GLUE-format TSV into the fixed-length tensors dtwin's classification training
reads (the step Megatron's preprocess_data.py is for its corpora).

Tasks and their columns (GLUE's files; a header line names the columns):
  sst2   sentence, label                          (single sentences; also kjv-books)
  rte    index, sentence1, sentence2, label       (sentence pairs)
  mrpc   Quality, #1 ID, #2 ID, #1 String, #2 String (pairs; the label is Quality, first)
The tokenizer is the checkpoint's (a folder with tokenizer.json, or vocab.txt for BERT's
WordPiece), applied by Hugging Face's `tokenizers`: [CLS] A [SEP] (B [SEP]), truncated longest
first to --max-len and padded with [PAD] to it.

Output, a safetensors file: input_ids int32 [N, S], token_type_ids int8 [N, S], attention_mask
int8 [N, S] (1 token, 0 padding), labels int64 [N] (the index of each label in --labels), and
metadata "labels" (the names, comma-separated), "task", "source" (the TSV) and "truncated" (how
many examples lost tokens).

Bad input exits 2 with "FILE:LINE: what was expected": a missing column, a label not in --labels,
an empty sentence. Labels: --labels a,b,c (in that order), or a file with one per line.

Usage: tokenize_glue.py --task sst2|rte|mrpc --tokenizer DIR --labels L --max-len 128 TSV OUT
"""

import argparse
import os
import sys

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer

COLUMNS = {"sst2": (["sentence"], "label"),
           "rte": (["sentence1", "sentence2"], "label"),
           "mrpc": (["#1 String", "#2 String"], "Quality")}


def fail(where, what):
    print(f"error: {where}: {what}", file=sys.stderr)
    sys.exit(2)


def load_tokenizer(folder):
    if os.path.exists(os.path.join(folder, "tokenizer.json")):
        return Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    if os.path.exists(os.path.join(folder, "vocab.txt")):
        return BertWordPieceTokenizer(os.path.join(folder, "vocab.txt"), lowercase=True)
    fail(folder, "expected tokenizer.json or vocab.txt (a Hugging Face tokenizer folder)")


def read_labels(text):
    if os.path.exists(text):
        return [line.strip() for line in open(text) if line.strip()]
    return [name for name in text.split(",") if name]


def read_examples(path, task, labels):
    """[(texts, label index)] of the TSV at `path`."""
    text_columns, label_column = COLUMNS[task]
    try:
        lines = open(path, encoding="utf-8").read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        fail(path, f"expected a UTF-8 TSV file: {e}")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        fail(path, "expected a header line naming the columns, the file is empty")
    header = lines[0].split("\t")
    wanted = text_columns + [label_column]
    missing = [c for c in wanted if c not in header]
    if missing:
        fail(f"{path}:1", f"header: expected the columns {', '.join(wanted)} of GLUE's {task}, "
                          f"missing {', '.join(missing)} (got {', '.join(header)})")
    index = {c: header.index(c) for c in wanted}
    examples = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            fail(f"{path}:{number}", f"expected {len(header)} tab-separated columns "
                                     f"({', '.join(header)}), got {len(cells)}")
        texts = [cells[index[c]] for c in text_columns]
        for column, text in zip(text_columns, texts):
            if not text.strip():
                fail(f"{path}:{number}", f"{column}: expected a sentence, got an empty cell")
        label = cells[index[label_column]]
        if label not in labels:
            fail(f"{path}:{number}", f"{label_column}: expected one of {', '.join(labels)}, "
                                     f"got '{label}'")
        examples.append((texts, labels.index(label)))
    if not examples:
        fail(path, "expected at least one example after the header")
    return examples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=sorted(COLUMNS), required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("tsv")
    parser.add_argument("out")
    args = parser.parse_args()
    labels = read_labels(args.labels)
    if len(labels) < 2 or len(set(labels)) != len(labels):
        fail("--labels", f"expected two or more distinct labels, got {labels}")
    if args.max_len < 4:
        fail("--max-len", f"expected at least 4 tokens, got {args.max_len}")
    examples = read_examples(args.tsv, args.task, labels)
    tokenizer = load_tokenizer(args.tokenizer)
    tokenizer.enable_truncation(args.max_len, strategy="longest_first")
    pad = tokenizer.token_to_id("[PAD]")
    if pad is None:
        fail(args.tokenizer, "expected a [PAD] token in the vocabulary")
    tokenizer.enable_padding(pad_id=pad, pad_token="[PAD]", length=args.max_len)
    encodings = tokenizer.encode_batch([tuple(texts) if len(texts) == 2 else texts[0]
                                        for texts, _ in examples])
    tensors = {
        "input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.int32),
        "token_type_ids": torch.tensor([e.type_ids for e in encodings], dtype=torch.int8),
        "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.int8),
        "labels": torch.tensor([label for _, label in examples], dtype=torch.int64),
    }
    truncated = sum(1 for e in encodings if e.overflowing)
    save_file(tensors, args.out, metadata={"labels": ",".join(labels), "task": args.task,
                                           "source": os.path.abspath(args.tsv),
                                           "truncated": str(truncated)})
    print(f"tokenize_glue: {len(examples)} examples of {args.max_len} tokens -> {args.out} "
          f"({truncated} truncated)")


if __name__ == "__main__":
    main()
