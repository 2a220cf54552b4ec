#!/usr/bin/env bash
# Reproduces reports/h100 on a Linux machine with one NVIDIA H100 80GB HBM3, onnxruntime-gpu 1.31.1
# and onnxruntime-ep-webgpu 0.4.0 installed beside onnx-dml-bench (pip install 'onnx-dml-bench[cuda,webgpu]').
#
#   bash reports/h100/reproduce.sh DEST [STEP...]      STEP: eps perf run-cuda run-webgpu (default: all)
#
# Results are written to $WORK (default /tmp/onnx-dml-bench-h100) and copied, xz-compressed, to DEST:
#   DEST/cuda/results.jsonl.xz  DEST/webgpu/results.jsonl.xz  DEST/perf.json  DEST/log.txt
# HTML reports: onnx-dml-bench report DEST/cuda/results.jsonl.xz --out DEST/cuda
# ONNX_DML_BENCH_REVISION=REV names the bench revision in the records where the copy of the tree has no
# current git metadata.
# DEADLINE (seconds from start, default 3600) bounds the whole script; a step cut off by it keeps
# what it wrote, and running the step again continues it (run --resume).
set -u
DEST=${1:?usage: reproduce.sh DEST [STEP...]}; shift
STEPS=${*:-eps perf run-cuda run-webgpu}
WORK=${WORK:-/tmp/onnx-dml-bench-h100}
BENCH=${BENCH:-onnx-dml-bench}
JOBS=${JOBS:-8}
DEADLINE=${DEADLINE:-3600}
start=$(date +%s)
mkdir -p "$WORK" "$DEST"
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$WORK/log.txt"; }
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
step() {   # step NAME CMD...: run CMD with what is left of the deadline (SIGINT, so workers are stopped)
  local name=$1; shift
  local t; t=$(left)
  if [ "$t" -lt 20 ]; then log "$name: skipped, deadline reached"; return 0; fi
  log "$name: $*"
  timeout -s INT -k 15 "$t" "$@" 2>&1 | tee -a "$WORK/log.txt"
  log "$name: exit ${PIPESTATUS[0]}"
}
run_ep() {   # run_ep KEY
  local res=$WORK/$1/results.jsonl resume=()
  [ -s "$res" ] && resume=(--resume)
  step "run-$1" $BENCH run --ep "$1" --profile default --opset all --jobs "$JOBS" --no-report \
       --fail-on CRASH,TIMEOUT --out "$WORK/$1" "${resume[@]}"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$WORK/log.txt"
for s in $STEPS; do
  case $s in
    eps) step eps $BENCH eps
         step ep-devices ${PYTHON:-python3} -c "import onnxruntime as o, onnxruntime_ep_webgpu as w
o.register_execution_provider_library(w.get_ep_name(), w.get_library_path())
for d in o.get_ep_devices():
    print(d.ep_name, d.device.type, hex(d.device.vendor_id), hex(d.device.device_id), d.device.vendor, dict(d.device.metadata), dict(d.ep_metadata))" ;;
    perf) step perf-cuda $BENCH perf --ep cuda --runs 100 --warmup 20 --out "$WORK"
          step perf-webgpu $BENCH perf --ep webgpu --runs 100 --warmup 20 --out "$WORK" ;;
    run-cuda) run_ep cuda ;;
    run-webgpu) run_ep webgpu ;;
    *) log "unknown step $s" ;;
  esac
done
for ep in cuda webgpu; do
  if [ -s "$WORK/$ep/results.jsonl" ]; then
    mkdir -p "$DEST/$ep" && xz -9e -c "$WORK/$ep/results.jsonl" > "$DEST/$ep/results.jsonl.xz"
  fi
done
[ -f "$WORK/perf.json" ] && cp "$WORK/perf.json" "$DEST/"
cp "$WORK/log.txt" "$DEST/"
ls -la "$DEST" "$DEST"/*/ 2>/dev/null
