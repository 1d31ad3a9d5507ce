#!/usr/bin/env bash
# An installation runs from outside the source tree: `cmake --install BUILD --prefix TMP`, then,
# from a folder of its own holding copies of two shipped scenarios, TMP/bin/dtwin answers
# --version, names TMP/share/dtwin/devices for an unknown device, simulates a scenario of a
# described GPU (its description read from the installation) and runs the main job (profile,
# simulate, train, compare, plot) on a shrunk quickstart. Usage: check_install.sh BUILD SOURCE.
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
mkdir "$work/run" && cd "$work/run"
cp "$source/scenarios/quickstart.yaml" "$source/scenarios/h100-single.yaml" .
dtwin="$work/prefix/bin/dtwin"
fail() { echo "FAIL: $*"; exit 1; }

"$dtwin" --version | grep -q '^dtwin [0-9]' || fail "dtwin --version"
unknown=$("$dtwin" simulate quickstart.yaml --set cluster.device.model=nonexistent 2>&1) &&
  fail "an unknown device was accepted"
grep -q "$work/prefix/share/dtwin/devices" <<< "$unknown" ||
  fail "devices not looked up in the installation: $unknown"
"$dtwin" simulate h100-single.yaml -o out-h100 > /dev/null || fail "dtwin simulate h100-single"
test -s out-h100/predicted.summary.json || fail "no predicted summary"
"$dtwin" run quickstart.yaml --data-dir "$source/data" -o out-run \
  --set model.d_model=64 --set model.n_heads=4 --set model.ffn_hidden=128 \
  --set model.seq_len=64 --set training.steps=4 > run.log 2>&1 || { cat run.log; fail "dtwin run"; }
for file in predicted.trace.json measured.trace.json compare.json report.md timeline.png; do
  test -s "out-run/$file" || fail "dtwin run wrote no $file"
done
echo "installed dtwin ran simulate and run from $work/run"
