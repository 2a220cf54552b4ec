#!/usr/bin/env bash
# Every GPU of one host in one run, each compared bit for bit with its siblings: the CUDA EP (and the
# TensorRT EP where its libraries are staged) over `--devices all --same-cases`, so that a GPU whose
# outputs differ from those of the other GPUs of its model, driver and build gets the finding
# DEVICE_DIFFERS (in the default --fail-on). Written for the 2-GPU H200 machine (nvidia-h200-x2:
# 32 cores, 256 GB, two H200); any host with two or more NVIDIA GPUs will do. Run in the project's
# root with onnxruntime-gpu importable beside the bench (on the offline device machine:
# `source .gpu/s/install.sh`, after .gpu/s/stage.sh 1..3, as /work/shared/device/*.sh describe):
#
#   source .gpu/s/install.sh && bash scripts/gpu-multi/devices.sh "$OUT" [LANE...]
#
# LANE: cuda (default) and/or tensorrt. Per lane, within LANE_SECONDS (default 500: a device-machine
# call runs at most 10 minutes), in this order:
#   1. `eps` and nvidia-smi's list of the GPUs (index, name, UUID, PCI bus id) into OUT/gpu.txt;
#   2. the default profile on every GPU (--same-cases), one worker pool per GPU (--jobs JOBS each);
#      a call cut off is continued by the same call on the same warm machine (--resume);
#   3. the same once more with one GPU's answers made wrong on purpose (the test hook
#      ONNX_DML_BENCH_DEVICE_FAULT=1 flips one bit of every output of GPU 1), smoke profile: the check
#      that the finding names GPU 1 on this machine (SELFTEST=0 skips it).
# OUT receives <lane>-devices.jsonl.gz (one environment per GPU), <lane>-devices/ (report.html with
# its "Devices compared" section, junit.xml, summary.json), <lane>-selftest.txt, log.txt, gpu.txt.
# Exit code: 0 when no GPU differs from its siblings (and the self-test named GPU 1), else 1.
#
# Many hosts: run this on each, then on any machine
#   onnx-dml-bench merge all.jsonl hostA/cuda-devices.jsonl.gz hostB/cuda-devices.jsonl.gz
#   onnx-dml-bench report all.jsonl --out rack
# compares the GPUs of every host with each other (docs/ci.md: the same through a CI engine).
# Environment: JOBS (default 8 per GPU), LANE_SECONDS, PROFILE (default `default`), SELFTEST, BENCH
# (default `python3 -m onnx_dml_bench`), WORK (default /tmp/odb-gpu-devices).
set -u
OUT=${1:?usage: devices.sh OUT [LANE...]}; shift
LANES=${*:-cuda}
JOBS=${JOBS:-8}
LANE_SECONDS=${LANE_SECONDS:-500}
PROFILE=${PROFILE:-default}
SELFTEST=${SELFTEST:-1}
WORK=${WORK:-/tmp/odb-gpu-devices}
read -r -a BENCH <<< "${BENCH:-python3 -m onnx_dml_bench}"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
LOG=$OUT/log.txt
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
{ nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total --format=csv,noheader; nproc; free -g
  "${BENCH[@]}" eps; } > "$OUT/gpu.txt" 2>&1
head -c 2000 "$OUT/gpu.txt"
status=0
for lane in $LANES; do
  start=$(date +%s)
  dir=$WORK/$lane-devices resume=()
  [ -s "$dir/results.jsonl" ] && resume=(--resume)
  t=$(( LANE_SECONDS * 4 / 5 ))
  log "$lane: --profile $PROFILE on every GPU ($t s)"
  timeout -s INT -k 20 "$t" "${BENCH[@]}" run --ep "$lane" --devices all --same-cases --profile "$PROFILE" \
      --jobs "$JOBS" --out "$dir" --no-report "${resume[@]}" >> "$LOG" 2>&1
  code=$?
  log "$lane: exit $code"
  [ -s "$dir/results.jsonl" ] || { status=1; continue; }
  gzip -9 -c "$dir/results.jsonl" > "$OUT/$lane-devices.jsonl.gz"
  "${BENCH[@]}" report "$dir/results.jsonl" --out "$OUT/$lane-devices" --allow-partial >> "$LOG" 2>&1
  grep -h "DEVICE_DIFFERS\|every device gave the same bits" "$LOG" | tail -5
  # DEVICE_DIFFERS anywhere in the results: a GPU out of line (exit 1 of the run may be other verdicts)
  if zcat "$OUT/$lane-devices.jsonl.gz" | grep -q '"finding:DEVICE_DIFFERS"'; then status=1; fi
  if [ "$SELFTEST" = 1 ]; then
    left=$(( start + LANE_SECONDS - $(date +%s) ))
    if [ "$left" -gt 40 ]; then
      ONNX_DML_BENCH_DEVICE_FAULT=1 timeout -s INT -k 10 "$left" "${BENCH[@]}" run --ep "$lane" --devices all \
          --same-cases --profile smoke --op MAX_POOLING2 --jobs 2 --out "$WORK/$lane-selftest" --overwrite \
          --no-report --fail-on DEVICE_DIFFERS > "$OUT/$lane-selftest.txt" 2>&1
      if grep -q "DEVICE_DIFFERS: device 1 " "$OUT/$lane-selftest.txt"; then
        log "$lane: self-test: the finding named GPU 1, whose bits were flipped on purpose"
      else
        log "$lane: self-test FAILED: GPU 1's flipped bits were not named"; status=1
      fi
    else
      log "$lane: self-test skipped (the lane's time is spent)"
    fi
  fi
done
ls -la "$OUT"
exit $status
