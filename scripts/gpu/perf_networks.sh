#!/usr/bin/env bash
# The performance lens at real sizes on a GPU machine: census layers of `networks` timed on the
# device (CUDA and TensorRT: CUDA events on the session's stream, `cuda_clock`; WebGPU: the host
# clock, said in its file), each layer's share of the device's measured copy bandwidth, and a check
# that the lens sees the hardware: the largest bandwidth-bound census layers in float16 against the
# same layers in float32 (half the bytes: about half the time), which `perf-compare` flags.
# Written for the H200 machine; run in the project's root, onnxruntime-gpu (and the WebGPU plugin
# EP) importable beside the bench:
#
#   source .gpu/s/install.sh && bash scripts/gpu/perf_networks.sh "$OUT" cuda
#   source .gpu/s/install.sh && bash scripts/gpu/perf_networks.sh "$OUT" tensorrt
#   source .gpu/s/install.sh && bash scripts/gpu/perf_networks.sh "$OUT" webgpu
#
# (one EP per call keeps a call within 10 minutes; `cuda tensorrt webgpu` in one call runs all three).
# Per EP, into $OUT (files to commit under reports/, e.g. reports/h200-perf/):
#   perf-<ep>-f32.json, perf-<ep>-f16.json   the float16/float32 layers (LAYERS, default 4: the largest
#                                            layer of each bandwidth-bound family), RUNS timed runs each
#   perf-<ep>-f16-as-f32.json                the float16 file with each case paired to its float32 twin
#   compare-<ep>-f16-f32.html                perf-compare of the pair (exit 1: float32 slower, flagged)
#   perf-networks-<ep>.json                  every EVERY-th census layer of networks (default 10; a
#                                            large one is committed gzipped, gzip -9n: read as it is)
#   summary-<ep>.txt                         per layer: MB moved, ms, GB/s, share; the f16/f32 ratios
# and log.txt, gpu.txt. The perf files are in the current format (every timed run in samples_ms), so
# later runs (another GPU: H100 -> H200) compare with perf-compare.
# Environment: RUNS (default 100), WARMUP (20), LAYERS (4), EVERY (10), MAX_ELEMENTS (the check's
# layers at most this many elements a tensor; default: all), BENCH (default `python3 -m onnx_dml_bench`).
set -u
OUT=${1:?usage: perf_networks.sh OUT [EP...]}; shift
EPS=${*:-cuda tensorrt webgpu}
RUNS=${RUNS:-100}
WARMUP=${WARMUP:-20}
LAYERS=${LAYERS:-4}
EVERY=${EVERY:-10}
read -r -a BENCH <<< "${BENCH:-python3 -m onnx_dml_bench}"
PY=${PY:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
LOG=$OUT/log.txt
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1; nproc; "${BENCH[@]}" eps; } > "$OUT/gpu.txt" 2>&1
head -c 1500 "$OUT/gpu.txt"

if [ ! -s "$OUT/cases-f32.json" ]; then
  "$PY" scripts/gpu/perf_lens.py cases "$OUT" --layers "$LAYERS" ${MAX_ELEMENTS:+--max-elements "$MAX_ELEMENTS"} | tee -a "$LOG"
fi
for ep in $EPS; do
  for t in f32 f16; do
    log "$ep $t: perf --cases cases-$t.json"
    "${BENCH[@]}" perf --ep "$ep" --cases "$OUT/cases-$t.json" --runs "$RUNS" --warmup "$WARMUP" \
      --out "$OUT/perf-$ep-$t.json" >> "$LOG" 2>&1; log "  exit code $?"
  done
  if [ -s "$OUT/perf-$ep-f16.json" ] && [ -s "$OUT/perf-$ep-f32.json" ]; then
    "$PY" scripts/gpu/perf_lens.py pair "$OUT/perf-$ep-f16.json" "$OUT/perf-$ep-f32.json" "$OUT/perf-$ep-f16-as-f32.json" >> "$LOG" 2>&1
    "${BENCH[@]}" perf-compare "$OUT/perf-$ep-f16-as-f32.json" "$OUT/perf-$ep-f32.json" \
      --out "$OUT/compare-$ep-f16-f32.html" > "$OUT/compare-$ep-f16-f32.txt" 2>&1
    log "$ep perf-compare float16 -> float32: exit code $? (1: float32 slower, flagged)"
    cat "$OUT/compare-$ep-f16-f32.txt" | tail -20
  fi
  log "$ep: perf --profile networks --every $EVERY"
  "${BENCH[@]}" perf --ep "$ep" --profile networks --every "$EVERY" --runs "$RUNS" --warmup "$WARMUP" \
    --out "$OUT/perf-networks-$ep.json" >> "$LOG" 2>&1; log "  exit code $?"
  "$PY" scripts/gpu/perf_lens.py summary $(ls "$OUT/perf-networks-$ep.json" 2>/dev/null) \
    > "$OUT/summary-$ep.txt" 2>&1
  if [ -s "$OUT/perf-$ep-f16-as-f32.json" ]; then
    "$PY" scripts/gpu/perf_lens.py summary "$OUT/perf-$ep-f16-as-f32.json" "$OUT/perf-$ep-f32.json" >> "$OUT/summary-$ep.txt" 2>&1
  fi
  cat "$OUT/summary-$ep.txt"
done
log "done: $OUT"
