#!/usr/bin/env bash
# The performance lens of DirectML on a GPU host under Wine (hardware Vulkan): DirectML.dll 1.13.1 ->
# 1.15.4 on the direct lane (GPU time per descriptor from D3D12 timestamps, the device's copy bandwidth as
# the yardstick), perf's default cases and real network layers, and perf-compare between them; the
# latency of session.run through ONNX Runtime's DirectML EP (1.15.4) beside it.
#
# Here, once (a Debian bookworm machine with registry access):
#   onnx-dml-bench setup dml --directml-dll wheel:onnxruntime-directml==1.17.3    # DirectML.dll 1.13.1
#   bash scripts/gpu-dml/prepare.sh                                              # .gpu-dml/: chunks + scripts
# On the GPU machine, back to back, in the project's root (one chunk carried per call; see
# reports/dml-h100/README.md), the last call being the timed one (about 5 minutes; each step is bounded):
#   bash .gpu-dml/s/stage.sh 1   ...   bash .gpu-dml/s/stage.sh N-1
#   bash .gpu-dml/s/stage.sh N && bash .gpu-dml/s/install.sh && bash scripts/gpu/dml_perf.sh $OUT
# It writes into OUTDIR (7 files, flat): gpu-info.json, dml-perf.log, perf-1.13.1.json, perf-1.15.4.json
# (with the dml lane's session.run latency), perf-1.15.4-again.json (a second pass: the noise-only check),
# perf-compare-1.13.1-vs-1.15.4.html, perf-compare-1.15.4-again.html. Back here:
#   onnx-dml-bench perf-compare perf-1.13.1.json perf-1.15.4.json        # text, page, exit code
#   python -c 'from onnx_dml_bench.report.perf import write_perf_html; write_perf_html("perf-1.15.4.json")'
#
# Shader model 5.1 -> 6.0 is not run: the wine10-sm6 stack is a debootstrap root of Debian trixie (Wine 10,
# its glibc, Mesa) of several hundred MB, on top of the 7 chunks of 34 MiB the default stack already
# takes; at 64 MiB per call that is several more calls of staging, and inside its chroot the root would
# also need NVIDIA's user-space driver (libGLX_nvidia, the Vulkan ICD's libraries), which the root's bind
# mounts (/proc, /dev, /sys, /tmp, the cache) do not bring. See docs/directml-on-linux.md.
#
# Environment: G (default /tmp/gpu-dml, as install.sh), PY (python3), RUNS (30 timed runs a case),
# WARMUP (5), EVERY (time every N-th layer of the networks profile, default 4), STEP_S (seconds a step may
# take, default 150).
set -uo pipefail
O=${1:?OUTDIR}
G=${G:-/tmp/gpu-dml}
PY=${PY:-python3}
RUNS=${RUNS:-30}; WARMUP=${WARMUP:-5}; EVERY=${EVERY:-4}; STEP_S=${STEP_S:-150}
export ONNX_DML_BENCH_CACHE=$G/cache PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
W=$G/perf
mkdir -p "$O" "$W"
exec > >(tee -a "$O/dml-perf.log") 2>&1
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

say "GPU and stack"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv 2>&1 | head -3
timeout 120 $PY -m onnx_dml_bench.dml info > "$O/gpu-info.json" 2>&1; head -c 1500 "$O/gpu-info.json"; echo

# the cases: perf's default cases (1x64x224x224) and real layers: the networks profile where this
# checkout has it (every EVERY-th layer), else the committed case file of census layers
$PY - "$W/cases.json" "$EVERY" <<'PY'
import json, sys
from onnx_dml_bench import casefile, perf
out, every = sys.argv[1], int(sys.argv[2])
cases = [(pc.case, pc.name) for pc in perf.default_cases()]
try:
    layers = [(pc.case, pc.name) for pc in perf.select_cases("networks", every=every)]
    source = f"the networks profile, every {every}-th layer"
except perf.PerfCaseError:
    layers = [(c, n) for c, n in casefile.load_noted("reports/dml-perf-lavapipe/networks-layers.json")]
    source = "reports/dml-perf-lavapipe/networks-layers.json"
doc = {"schema": "onnx-dml-bench/cases/1",
       "cases": [dict(c.to_dict(), note=n) for c, n in cases + layers]}
json.dump(doc, open(out, "w"), indent=1)
print(f"{len(cases)} default cases and {len(layers)} layers ({source})")
PY

perf() {    # perf LANE OUTFILE [EP options]
  local lane=$1 file=$2; shift 2
  say "perf --ep $lane $* -> $(basename "$file")"
  timeout "$STEP_S" $PY -m onnx_dml_bench perf --ep "$lane" "$@" --cases "$W/cases.json" --runs "$RUNS" \
      --warmup "$WARMUP" --out "$file" | tail -n 40
  say "exit ${PIPESTATUS[0]}"
}
perf dml-direct "$W/perf-1.13.1.json" --ep-option directml=1.13.1
perf dml-direct "$W/perf-1.15.4.json"
perf dml-direct "$W/perf-1.15.4-again.json"
perf dml "$W/perf-1.15.4.json"           # session.run latency through the DML EP, beside the GPU time

for f in perf-1.13.1.json perf-1.15.4.json perf-1.15.4-again.json; do
  [ -f "$W/$f" ] && cp "$W/$f" "$O/$f"
done
say "perf-compare DirectML 1.13.1 -> 1.15.4"
$PY -m onnx_dml_bench perf-compare "$O/perf-1.13.1.json" "$O/perf-1.15.4.json" \
    --out "$O/perf-compare-1.13.1-vs-1.15.4.html"; say "exit $?"
say "perf-compare 1.15.4 -> 1.15.4 again (noise only: nothing should be flagged)"
$PY -m onnx_dml_bench perf-compare "$O/perf-1.15.4.json" "$O/perf-1.15.4-again.json" \
    --out "$O/perf-compare-1.15.4-again.html"; say "exit $?"
say "SM 5.1 -> 6.0: not run here (the wine10-sm6 root does not travel within the call limits; see the header)"
say "done"
