#!/usr/bin/env bash
# The sized profiles on a GPU machine: `networks` and `limits` on CUDA, WebGPU and DirectML under
# Wine, each lane within a time budget, the results gzipped into one folder of at most 8 files.
# Written for the H100 machine (16 cores, ~128 GB of memory, one 80 GB GPU); run in the project's
# root, with onnxruntime-gpu and onnxruntime-ep-webgpu importable beside the bench and, for the dml
# lane, the DirectML stack of scripts/gpu-dml/ (its cache in $G/cache):
#
#   bash scripts/gpu/networks.sh OUT [LANE...]          LANE: cuda webgpu dml (default: all three)
#
# On the offline device machine (the packages staged in .gpu/ by the device's prepare.sh, the
# DirectML stack in .gpu-dml/ by scripts/gpu-dml/prepare.sh), one lane per call, since a lane takes
# up to LANE_SECONDS and a call at most 10 minutes; every file lands in $OUT:
#
#   source .gpu/s/install.sh && bash scripts/gpu/networks.sh "$OUT" cuda
#   source .gpu/s/install.sh && bash scripts/gpu/networks.sh "$OUT" webgpu
#   bash .gpu-dml/s/install.sh && bash scripts/gpu/networks.sh "$OUT" dml
#
# A call that ran out of time is continued by the same call on the same (warm) machine: the runs
# resume from $WORK.
# Per lane, in this order, each step under what is left of the lane's budget (LANE_SECONDS, default
# 480; a step cut off keeps the records it saved: `report --allow-partial` reads them, and running
# the script again continues them with run --resume):
#   1. networks at --max-elements $NET_MAX (default 2^28: every census layer, the 1x256x1024x1024
#      PixelShuffle of RCAN and SwinIR included, and serving batches up to 2^28 elements a tensor);
#   2. limits at --max-elements $LIM_MAX (default 2^28: the thread-group cases of 2 x 65,535 x 1024
#      elements included);
#   3. the MaxPool index cases past 2^31 and 2^32 (8 GiB inputs; --max-elements $BIG_MAX, default
#      2^33), from a case file of those cases alone, so that they run last and never hold up the rest.
# OUT receives <lane>-networks.jsonl.gz, <lane>-limits.jsonl.gz (the index cases' records merged into
# the limits file) for each lane, log.txt and gpu.txt: 8 files for the three lanes. Reports:
#   onnx-dml-bench report OUT/cuda-networks.jsonl.gz --out OUT/cuda-networks --allow-partial
# Environment: JOBS (default 16; DML_JOBS for the dml lane, default 12), LANE_SECONDS, NET_MAX,
# LIM_MAX, BIG_MAX, BENCH (default `python3 -m onnx_dml_bench`), WORK (default /tmp/odb-gpu-networks),
# G (the gpu-dml folder, default /tmp/gpu-dml), ONNX_DML_BENCH_REVISION (the bench's revision where
# the copy of the tree has no git metadata).
set -u
OUT=${1:?usage: networks.sh OUT [LANE...]}; shift
LANES=${*:-cuda webgpu dml}
JOBS=${JOBS:-16}
DML_JOBS=${DML_JOBS:-12}
LANE_SECONDS=${LANE_SECONDS:-480}
NET_MAX=${NET_MAX:-268435456}
LIM_MAX=${LIM_MAX:-268435456}
BIG_MAX=${BIG_MAX:-8589934592}
WORK=${WORK:-/tmp/odb-gpu-networks}
G=${G:-/tmp/gpu-dml}
read -r -a BENCH <<< "${BENCH:-python3 -m onnx_dml_bench}"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
LOG=$OUT/log.txt
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g
  "${BENCH[@]}" eps; } > "$OUT/gpu.txt" 2>&1
head -c 2000 "$OUT/gpu.txt"

step() {   # step SECONDS NAME CMD...: CMD under a deadline (SIGINT first: the run saves and stops its workers)
  local t=$1 name=$2; shift 2
  if [ "$t" -lt 20 ]; then log "$name: skipped, the lane's budget is spent"; return 0; fi
  log "$name ($t s): $*"
  timeout -s INT -k 20 "$t" "$@" >> "$LOG" 2>&1
  log "$name: exit $?"
}

run_profile() {   # run_profile LANE NAME DEADLINE MAX [run options...]
  local lane=$1 name=$2 deadline=$3 max=$4; shift 4
  local dir=$WORK/$lane-$name resume=()
  [ -s "$dir/results.jsonl" ] && resume=(--resume)
  step $(( deadline - $(date +%s) )) "$lane $name" "${BENCH[@]}" run --ep "$lane" --max-elements "$max" \
       --jobs "$jobs" --out "$dir" --no-report "${resume[@]}" "$@"
}

for lane in $LANES; do
  jobs=$JOBS
  if [ "$lane" = dml ]; then
    jobs=$DML_JOBS
    [ -d "$G/cache" ] && export ONNX_DML_BENCH_CACHE=$G/cache
  fi
  start=$(date +%s)
  end=$(( start + LANE_SECONDS ))
  # networks first, with most of the budget; then limits; the 8 GiB index cases last
  run_profile "$lane" networks $(( start + LANE_SECONDS * 11 / 20 )) "$NET_MAX" --profile networks
  run_profile "$lane" limits $(( end - 60 )) "$LIM_MAX" --profile limits
  big=$WORK/index-cases.json
  if [ ! -s "$big" ]; then
    "${BENCH[@]}" cases --profile limits --op max_pooling2 --max-elements "$BIG_MAX" --export "$WORK/all-limits.json" >> "$LOG" 2>&1
    python3 - "$WORK/all-limits.json" "$big" <<'PY' >> "$LOG" 2>&1
import json, sys
doc = json.load(open(sys.argv[1]))
doc["cases"] = [c for c in doc["cases"] if (c.get("source") or {}).get("boundary") in ("index-2^31", "index-2^32")]
json.dump(doc, open(sys.argv[2], "w"))
print(f"{len(doc['cases'])} index cases past 2^31 and 2^32")
sys.exit(0 if doc["cases"] else 1)
PY
    [ $? -eq 0 ] || echo '{"cases": []}' > "$big"
  fi
  if grep -q '"op"' "$big"; then
    run_profile "$lane" index $end "$BIG_MAX" --cases "$big" --timeout 600
  fi
  for name in networks limits; do
    f=$WORK/$lane-$name/results.jsonl
    [ -s "$f" ] || continue
    if [ "$name" = limits ] && [ -s "$WORK/$lane-index/results.jsonl" ]; then
      # the index cases' records beside the limits records, in one results file (merge; where a run
      # cut off mid-line makes merge refuse it, the two files one after the other)
      m=$WORK/$lane-limits-merged.jsonl
      if "${BENCH[@]}" merge "$m" "$f" "$WORK/$lane-index/results.jsonl" --overwrite >> "$LOG" 2>&1; then
        gzip -9 -c "$m" > "$OUT/$lane-$name.jsonl.gz"
      else
        cat "$f" "$WORK/$lane-index/results.jsonl" | gzip -9 > "$OUT/$lane-$name.jsonl.gz"
      fi
    else
      gzip -9 -c "$f" > "$OUT/$lane-$name.jsonl.gz"
    fi
  done
  log "$lane: done in $(( $(date +%s) - start )) s"
done
ls -la "$OUT"
