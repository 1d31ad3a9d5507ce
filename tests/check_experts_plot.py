#!/usr/bin/env python3
"""plots/experts.py on a synthetic tokens_per_expert.csv: it draws a PNG of the size it should,
reports the load imbalance it was given, and refuses a malformed file with exit 2.

Usage: check_experts_plot.py ROOT PYTHON
"""
import os
import subprocess
import sys
import tempfile


def main():
    root, python = sys.argv[1], sys.argv[2]
    script = os.path.join(root, "plots", "experts.py")
    with tempfile.TemporaryDirectory() as out:
        rows = ["step,layer,expert,tokens,load"]
        for step in range(1, 11):  # expert 0 takes 40 of 100 copies: imbalance 1.6 every step
            for layer in (1, 2):
                for expert, tokens in enumerate((40, 20, 20, 20)):
                    rows.append(f"{step},{layer},{expert},{tokens},{tokens}")
        with open(os.path.join(out, "tokens_per_expert.csv"), "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        done = subprocess.run([python, script, out, "-v"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        png = os.path.join(out, "experts.png")
        with open(png, "rb") as f:
            header = f.read(24)
        assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
        assert (width, height) == (1080, 720), (width, height)
        with open(os.path.join(out, "tokens_per_expert.csv"), "a", encoding="utf-8") as f:
            f.write("11,1,0,-5,3\n")
        bad = subprocess.run([python, script, out], capture_output=True, text=True)
        assert bad.returncode == 2 and "tokens_per_expert.csv" in bad.stderr, bad.stderr
    # The title's imbalance, computed the way the script does.
    sys.dont_write_bytecode = True  # keep plots/ free of __pycache__
    sys.path.insert(0, os.path.join(root, "plots"))
    import experts  # noqa: E402
    assert abs(experts.imbalance([40, 20, 20, 20]) - 1.6) < 1e-12
    print("experts plot: ok")


if __name__ == "__main__":
    main()
