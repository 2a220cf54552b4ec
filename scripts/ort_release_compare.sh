#!/usr/bin/env bash
# The default profile on ONNX Runtime's CPU EP under two releases, and their compare, as committed in
# reports/ort-<old>-to-<new>/. Usage: scripts/ort_release_compare.sh OLD NEW   (e.g. 1.31.1 1.32.0)
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
out=reports/ort-$old-to-$new
tmp=$(mktemp -d)
for v in "$old" "$new"; do
  python3 -m venv "$tmp/venv-$v"
  "$tmp/venv-$v/bin/python" -m pip install -q --disable-pip-version-check "onnxruntime==$v" \
    "$(grep '^onnx==' constraints.txt)" "$(grep '^numpy==' constraints.txt)" "$(grep '^protobuf==' constraints.txt)" \
    jinja2 click rich pyyaml ml_dtypes
  PYTHONPATH=$PWD "$tmp/venv-$v/bin/python" -m onnx_dml_bench run --ep cpu --profile default --jobs "$(nproc)" \
    --out "$tmp/run-$v" --no-report --fail-on CRASH,TIMEOUT
done
mkdir -p "$out"
xz -9e -c "$tmp/run-$old/results.jsonl" > "$out/baseline-$old.jsonl.xz"
xz -9e -c "$tmp/run-$new/results.jsonl" > "$out/current-$new.jsonl.xz"
PYTHONPATH=$PWD "$tmp/venv-$new/bin/python" -m onnx_dml_bench compare "$out/baseline-$old.jsonl.xz" \
  "$out/current-$new.jsonl.xz" --out "$out" | tee "$out/compare.txt" || true
rm -rf "$tmp"
