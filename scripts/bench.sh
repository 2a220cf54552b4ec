#!/usr/bin/env bash
# Set up (a virtual environment in .venv) and run the conformance bench on the execution providers
# found here (CPU at least; DirectML too when `onnx-dml-bench setup dml` has been run), writing
# reports/latest/report.html. Usage: scripts/bench.sh [PROFILE]   (smoke | default | full; default: default)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-default}
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[cpu,test]'
B=.venv/bin/onnx-dml-bench
rm -rf reports/latest && mkdir -p reports/latest
results=()
for ep in $(.venv/bin/python -c 'from onnx_dml_bench.lanes.catalog import list_available as l; print(" ".join(r["key"] for r in l() if r["status"] == "ok"))'); do
  echo "== $ep"
  $B run --ep "$ep" --profile "$profile" --jobs "$(nproc)" --out "reports/latest/$ep" --fail-on CRASH || true
  results+=("reports/latest/$ep/results.jsonl")
done
$B merge reports/latest/results.jsonl "${results[@]}"
$B report reports/latest/results.jsonl --out reports/latest
echo "open reports/latest/report.html"
