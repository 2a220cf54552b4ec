#!/usr/bin/env bash
# On the GPU machine after install.sh: bash .gpu-dml/s/run.sh OUTDIR [LANES] [run options...]
# Prints the Vulkan device and nvidia-smi reading, then runs the default profile of each lane
# (default "dml"; "dml dml-direct" for both) into $G/out/<lane> (run again to resume one cut off by
# the call's time limit) and copies results.jsonl.gz and the log to OUTDIR/<lane>/.
set -uo pipefail
O=${1:?OUTDIR}; LANES=${2:-dml}; shift $(( $# >= 2 ? 2 : $# ))
G=${G:-/tmp/gpu-dml}
export ONNX_DML_BENCH_CACHE=$G/cache PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$O"
${PY:-python3} -m onnx_dml_bench.dml info > "$O/gpu-info.json" 2>&1; head -c 3000 "$O/gpu-info.json"
for lane in $LANES; do
  t0=$(date +%s)
  ${PY:-python3} -m onnx_dml_bench run --ep "$lane" --profile default --jobs "${JOBS:-12}" --out "$G/out/$lane" \
      --no-report --fail-on CRASH,TIMEOUT --resume "$@" > "$O/$lane.log" 2>&1
  echo "$lane: exit $? in $(( $(date +%s) - t0 )) s"; tail -8 "$O/$lane.log"
  mkdir -p "$O/$lane" && mv "$O/$lane.log" "$O/$lane/run.log"
  [ -f "$G/out/$lane/results.jsonl" ] && gzip -c "$G/out/$lane/results.jsonl" > "$O/$lane/results.jsonl.gz"
done
