#!/usr/bin/env bash
# One DirectML lane on a Debian machine as root, as the CI workflow's Linux jobs run it (and as a
# local dry run of those jobs runs it):
#
#   scripts/ci-dml.sh LANE OUT [PROFILE]        LANE: dml | dml-direct; PROFILE: default (default) | smoke
#
# 1. the bench in .venv (pip, constraints.txt);
# 2. `onnx-dml-bench setup dml` (apt-get for the system packages; everything else into the cache
#    folder, $ONNX_DML_BENCH_CACHE or ~/.cache/onnx-dml-bench/dml, which the workflow keeps between
#    runs with actions/cache: a second run takes seconds);
# 3. the lane's run into OUT (results.jsonl, no report: the merge job writes the one report), exit
#    code 1 on a result its shipped expectations do not list (expectations/<lane>-lavapipe.yaml) or
#    a crash or a hang, 3 when its canary fails;
# 4. for dml-direct, the harness it ran copied to OUT/harness/harness.exe (the Windows job runs the
#    same executable natively).
set -euo pipefail
lane=${1:?usage: scripts/ci-dml.sh LANE OUT [PROFILE]}
out=${2:?usage: scripts/ci-dml.sh LANE OUT [PROFILE]}
profile=${3:-default}
cd "$(dirname "$0")/.."
case "$lane" in dml|dml-direct) ;; *) echo "ci-dml.sh: LANE must be dml or dml-direct, not $lane" >&2; exit 2 ;; esac
t0=$SECONDS
step() { echo "== ci-dml.sh $lane: $* ($(( SECONDS - t0 )) s)"; }
step "the bench in .venv"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[cpu]'
step "DirectML's stack (onnx-dml-bench setup dml, cache ${ONNX_DML_BENCH_CACHE:-~/.cache/onnx-dml-bench/dml})"
.venv/bin/onnx-dml-bench setup dml
step "the $profile profile on $lane"
.venv/bin/onnx-dml-bench run --ep "$lane" --profile "$profile" --jobs "$(nproc)" --out "$out" --overwrite --no-report \
  --fail-on CRASH,TIMEOUT --expectations "expectations/$lane-lavapipe.yaml"
if [ "$lane" = dml-direct ]; then
  mkdir -p "$out/harness"
  .venv/bin/python -c 'import shutil, sys; from onnx_dml_bench.dml import find_stack; from onnx_dml_bench.dml.direct import ensure_built; shutil.copy(ensure_built(find_stack()), sys.argv[1])' "$out/harness/harness.exe"
  step "harness copied to $out/harness/harness.exe"
fi
step "done"
