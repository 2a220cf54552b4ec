#!/usr/bin/env bash
# The performance lens of DirectML on a GPU host under Wine (hardware Vulkan): DirectML.dll 1.13.1 ->
# 1.15.4 on the direct lane (GPU time per descriptor from D3D12 timestamps, the device's copy bandwidth as
# the yardstick), perf's default cases and real network layers, two runs of each build (1.13.1, 1.15.4,
# 1.15.4, 1.13.1: a drift of the device over the call moves both alike), perf-compare with the run as the
# unit; the latency of session.run through ONNX Runtime's DirectML EP (1.15.4) beside it.
#
# Here, once (a Debian bookworm machine with registry access):
#   onnx-dml-bench setup dml --directml-dll wheel:onnxruntime-directml==1.17.3    # DirectML.dll 1.13.1
#   bash scripts/gpu-dml/prepare.sh                                              # .gpu-dml/: chunks + scripts
# On the GPU machine, back to back, in the project's root (one chunk carried per call; see
# reports/dml-h100/README.md), the last call being the timed one:
#   bash .gpu-dml/s/stage.sh 1   ...   bash .gpu-dml/s/stage.sh N-1
#   bash .gpu-dml/s/stage.sh N && bash .gpu-dml/s/install.sh && bash scripts/gpu/dml_perf.sh $OUT
# The script keeps its steps within BUDGET_S seconds (default 450: a call of 600 s less the staging, the
# install and the two comparisons, 45 s at most each): a step that would not fit is not started, and the
# log says so (exit code 4); run it again in the next call (`bash scripts/gpu/dml_perf.sh $OUT`, while the
# machine is still held) and it goes on from the first step not done ($G/perf keeps the finished ones). Each call writes into OUTDIR (flat): gpu-info.json,
# dml-perf.log, the perf files done so far (perf-1.13.1-1.json, perf-1.15.4-1.json with the DML EP's
# session.run latency, perf-1.15.4-2.json, perf-1.13.1-2.json) and their pages, and once both builds have
# run: perf-compare-1.13.1-vs-1.15.4.html (every run of both; the exit code says whether a descriptor is
# slower) and perf-compare-1.15.4-run1-vs-run2.html (one file a side: what it flags is the device's drift
# between runs, which the first comparison takes into account). Back here:
#   onnx-dml-bench perf-compare perf-1.13.1-1.json perf-1.15.4-1.json \
#       --baseline-run perf-1.13.1-2.json --current-run perf-1.15.4-2.json --out DIR
#
# Shader model 5.1 -> 6.0 is not run: the wine10-sm6 stack is a debootstrap root of Debian trixie (Wine 10,
# its glibc, Mesa) of several hundred MB, on top of the 7 chunks of 34 MiB the default stack already
# takes; at 64 MiB per call that is several more calls of staging, and inside its chroot the root would
# also need NVIDIA's user-space driver (libGLX_nvidia, the Vulkan ICD's libraries), which the root's bind
# mounts (/proc, /dev, /sys, /tmp, the cache) do not bring. See docs/directml-on-linux.md.
#
# Environment: G (default /tmp/gpu-dml, as install.sh), PY (python3), RUNS (30 timed runs a case),
# WARMUP (5), ROUNDS (5: the runs taken in rounds over all the cases), EVERY (time every N-th layer of
# the networks profile where the checkout has one, default 4), BUDGET_S (450), STEP_S (the most one step
# may take, default 200), CASES (a case file to time instead of perf's default cases and the layers).
set -uo pipefail
O=${1:?OUTDIR}
G=${G:-/tmp/gpu-dml}
PY=${PY:-python3}
RUNS=${RUNS:-30}; WARMUP=${WARMUP:-5}; ROUNDS=${ROUNDS:-5}; EVERY=${EVERY:-4}
BUDGET_S=${BUDGET_S:-450}; STEP_S=${STEP_S:-200}
export ONNX_DML_BENCH_CACHE=$G/cache PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
W=$G/perf
mkdir -p "$O" "$W"
exec > >(tee -a "$O/dml-perf.log") 2>&1
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( BUDGET_S - ($(date +%s) - t0) )); }
[ -f "$ONNX_DML_BENCH_CACHE/stack.json" ] || { say "no $ONNX_DML_BENCH_CACHE/stack.json: run .gpu-dml/s/install.sh first"; exit 2; }

say "GPU and stack (budget $BUDGET_S s; steps done in an earlier call: $(cd "$W" && ls done-* 2>/dev/null | sed 's/done-//' | tr '\n' ' '))"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv 2>&1 | head -3
[ -s "$W/gpu-info.json" ] || timeout 120 $PY -m onnx_dml_bench.dml info > "$W/gpu-info.json" 2>&1
cp "$W/gpu-info.json" "$O/"; head -c 1500 "$O/gpu-info.json"; echo

# the cases: perf's default cases (1x64x224x224) and real layers: the networks profile where this
# checkout has it (every EVERY-th layer), else the committed case file of census layers
if [ -n "${CASES:-}" ]; then
  cp "$CASES" "$W/cases.json"
elif [ ! -s "$W/cases.json" ]; then
  $PY - "$W/cases.json" "$EVERY" <<'PY'
import json, sys
from onnx_dml_bench import casefile, perf
from onnx_dml_bench.errors import PlanError
from onnx_dml_bench.plan import select_noted
out, every = sys.argv[1], int(sys.argv[2])
cases = [(pc.case, pc.name) for pc in perf.default_cases()]
try:
    layers = [(pc.case, pc.name) for pc in perf.lens_cases(select_noted("networks"), distinct=True, every=every)]
    source = f"the networks profile, every {every}-th layer"
except (PlanError, perf.PerfCaseError):
    layers = [(c, n) for c, n in casefile.load_noted("reports/dml-perf-lavapipe/networks-layers.json")]
    source = "reports/dml-perf-lavapipe/networks-layers.json"
doc = {"schema": "onnx-dml-bench/cases/1",
       "cases": [dict(c.to_dict(), note=n) for c, n in cases + layers]}
json.dump(doc, open(out, "w"), indent=1)
print(f"{len(cases)} default cases and {len(layers)} layers ({source})")
PY
fi

need=60      # fewest seconds left for a step to start
step() {    # step NAME LANE OUTFILE [EP options]: perf once, remembered as done
  local name=$1 lane=$2 file=$3; shift 3
  if [ -f "$W/done-$name" ]; then say "$name: done in an earlier call"; return 0; fi
  local l; l=$(left)
  if [ "$l" -lt "$need" ]; then
    say "$name: not started ($l s of the budget left); run this script again for the rest"; return 1
  fi
  local lim=$(( l < STEP_S ? l : STEP_S ))
  say "$name: perf --ep $lane $* -> $(basename "$file") (at most $lim s)"
  timeout --kill-after=10 "$lim" $PY -m onnx_dml_bench perf --ep "$lane" "$@" --cases "$W/cases.json" \
      --runs "$RUNS" --warmup "$WARMUP" --rounds "$ROUNDS" --out "$file" | tail -n 40
  local rc=${PIPESTATUS[0]}
  say "$name: exit $rc"
  # 0: every case PASS; 1: a case did not PASS (its figures are still written); else no figures
  if [ "$rc" -le 1 ] && [ -f "$file" ]; then touch "$W/done-$name"; else return 1; fi
}
step a1 dml-direct "$W/perf-1.13.1-1.json" --ep-option directml=1.13.1
step b1 dml-direct "$W/perf-1.15.4-1.json"
step b2 dml-direct "$W/perf-1.15.4-2.json"
step a2 dml-direct "$W/perf-1.13.1-2.json" --ep-option directml=1.13.1
step ep dml "$W/perf-1.15.4-1.json"          # session.run latency through the DML EP, beside the GPU time
for f in "$W"/perf-*.json "$W"/perf-*.html; do [ -f "$f" ] && cp "$f" "$O/"; done

if [ -f "$W/done-a1" ] && [ -f "$W/done-b1" ]; then
  more=()
  [ -f "$W/done-a2" ] && more+=(--baseline-run "$W/perf-1.13.1-2.json")
  [ -f "$W/done-b2" ] && more+=(--current-run "$W/perf-1.15.4-2.json")
  say "perf-compare DirectML 1.13.1 -> 1.15.4 (second runs: $( [ -f "$W/done-a2" ] && echo "1.13.1 ")$( [ -f "$W/done-b2" ] && echo 1.15.4))"
  timeout 45 $PY -m onnx_dml_bench perf-compare "$W/perf-1.13.1-1.json" "$W/perf-1.15.4-1.json" "${more[@]}" \
      --out "$O/perf-compare-1.13.1-vs-1.15.4.html"; say "exit $? (1: a descriptor slower)"
fi
if [ -f "$W/done-b1" ] && [ -f "$W/done-b2" ]; then
  say "perf-compare 1.15.4 run 1 -> run 2, one file a side (what it flags is drift between runs)"
  timeout 45 $PY -m onnx_dml_bench perf-compare "$W/perf-1.15.4-1.json" "$W/perf-1.15.4-2.json" \
      --out "$O/perf-compare-1.15.4-run1-vs-run2.html"; say "exit $?"
fi
say "SM 5.1 -> 6.0: not run here (the wine10-sm6 root does not travel within the call limits; see the header)"
missing=$(for s in a1 b1 b2 a2 ep; do [ -f "$W/done-$s" ] || printf '%s ' "$s"; done)
if [ -n "$missing" ]; then say "not done yet: $missing- run this script again"; exit 4; fi
say "done"
