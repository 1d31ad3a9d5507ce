"""Writes dtwin's shipped text-classification task, kjv-books: each verse of the King James Bible
labelled by the group of books it comes from, in GLUE's single-sentence TSV layout (as SST-2:
a header "sentence<TAB>label", then one example per line), with a WordPiece tokenizer trained on
the training split.

Labels (the Protestant canon's usual groups, in canonical order):
  law       Genesis–Deuteronomy          history   Joshua–Esther
  wisdom    Job–Song of Solomon          prophets  Isaiah–Malachi
  gospels   Matthew–Acts                 letters   Romans–Revelation
Split, fixed: every tenth verse in canonical order (verses 10, 20, ...) is dev, the rest train.
Text as scripts/fetch_data.sh cleans it (Debian's bible-kjv-text, read by its `bible` program).
The tokenizer: BERT's WordPiece (lower-cased, 8,000 entries with [PAD] [UNK] [CLS] [SEP] [MASK])
trained by Hugging Face's `tokenizers` on train.tsv's sentences and committed as
scripts/kjv-books-vocab.txt: the trainer breaks ties between merges of equal count in hash order,
so two trainings differ in about 1% of their entries; the committed vocabulary is the task's.
OUT_DIR/tokenizer/ holds it as tokenizer.json and vocab.txt (transformers' BertTokenizerFast
loads the folder).

Usage: make_kjv_classification.py OUT_DIR   (writes OUT_DIR/{train,dev}.tsv, labels.txt and
OUT_DIR/tokenizer/; prints the label counts and each split's majority-class accuracy)
       make_kjv_classification.py OUT_DIR --train-tokenizer VOCAB   (also trains a new
       vocabulary on the training split into VOCAB)
"""

import collections
import os
import re
import subprocess
import sys

from tokenizers import BertWordPieceTokenizer

GROUPS = [("law", "Genesis"), ("history", "Joshua"), ("wisdom", "Job"),
          ("prophets", "Isaiah"), ("gospels", "Matthew"), ("letters", "Romans")]
VOCAB = 8000
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
COMMITTED_VOCAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kjv-books-vocab.txt")


def verses():
    """(book, text) of every verse from Genesis 1:1 to Revelation 22:21."""
    out = subprocess.run(["bible", "-l", "100000", "Gen1:1-Rev22:21"], check=True,
                         capture_output=True, text=True).stdout
    book = None
    for line in out.splitlines():
        verse = re.match(r"^ +[0-9]+ (.*)$", line)
        if verse:
            yield book, re.sub(r" +", " ", verse.group(1)).strip()
        elif line.strip():
            book = re.sub(r" [0-9]+$", "", line.strip())


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "tokenizer"), exist_ok=True)
    firsts = {first: label for label, first in GROUPS}
    label = None
    rows = {"train": [], "dev": []}
    for i, (book, text) in enumerate(verses()):
        label = firsts.get(book, label)
        if "\t" in text or not text:
            sys.exit(f"make_kjv_classification: verse {i + 1} ({book}) is empty or has a tab")
        rows["dev" if i % 10 == 9 else "train"].append((text, label))
    for split, examples in rows.items():
        with open(os.path.join(out, split + ".tsv"), "w") as f:
            f.write("sentence\tlabel\n")
            f.writelines(f"{text}\t{label}\n" for text, label in examples)
    with open(os.path.join(out, "labels.txt"), "w") as f:
        f.writelines(label + "\n" for label, _ in GROUPS)
    if len(sys.argv) == 4 and sys.argv[2] == "--train-tokenizer":
        trained = BertWordPieceTokenizer(lowercase=True)
        trained.train_from_iterator((text for text, _ in rows["train"]), vocab_size=VOCAB,
                                    special_tokens=SPECIAL)
        with open(sys.argv[3], "w") as f:
            f.writelines(t + "\n" for t, _ in sorted(trained.get_vocab().items(),
                                                       key=lambda item: item[1]))
    tokenizer = BertWordPieceTokenizer(COMMITTED_VOCAB, lowercase=True)
    tokenizer.save(os.path.join(out, "tokenizer", "tokenizer.json"))
    tokenizer.save_model(os.path.join(out, "tokenizer"))
    for split, examples in rows.items():
        counts = collections.Counter(label for _, label in examples)
        majority = max(counts.values()) / len(examples)
        print(f"{split}: {len(examples)} verses, " +
              ", ".join(f"{l} {counts[l]}" for l, _ in GROUPS) +
              f"; majority class {majority:.1%}")


if __name__ == "__main__":
    main()
