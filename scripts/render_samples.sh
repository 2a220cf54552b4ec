#!/usr/bin/env bash
# Writes every report and compare page of reports/ again from the committed records, with the code of
# this tree (run from the project's root):
#
#   bash scripts/render_samples.sh [BENCH]        BENCH: the command (default: onnx-dml-bench)
#
# - each report.html: `report` of the results beside it, into a scratch folder (the samples keep no
#   junit.xml nor summary.json), then copied back; its summary.json must equal the committed
#   summary.json.gz but for its date and source paths (the same verdicts, counts, bugs), else the
#   page is left as it was and the script exits 1;
# - each compare page: `compare` of its two runs; a baseline that is no longer a committed file is
#   read from git (`git show COMMIT:PATH`, named git-COMMIT/... in the page);
# - each perf-compare page: `perf-compare` of its perf files, in their folder.
#
# Pages it does not write: the perf pages (perf-*.html: `perf` writes them as it measures) and
# dml-versions/compare-dml-speed-before-vs-after.html (its runs are not committed).
set -u
BENCH=${1:-onnx-dml-bench}
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0

for page in $(find reports -name report.html | sort); do
  d=$(dirname "$page")
  r=$d/results.jsonl.xz; [ -f "$r" ] || r=$d/results.jsonl
  out=$TMP/$d
  mkdir -p "$out"
  $BENCH report "$r" --out "$out" > "$out.log" 2>&1
  if grep -q -- "--allow-partial" "$out.log"; then $BENCH report "$r" --out "$out" --allow-partial > "$out.log" 2>&1; fi
  if $PY - "$d/summary.json.gz" "$out/summary.json" <<'EOF'
import gzip, json, sys
old = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
new = json.load(open(sys.argv[2]))
keys = (set(old) | set(new)) - {"generated", "sources"}
sys.exit(0 if all(old.get(k) == new.get(k) for k in keys) else 1)
EOF
  then cp "$out/report.html" "$page"; echo "$page"
  else echo "$page: its summary differs from summary.json.gz: left as it was" >&2; status=1
  fi
done

# a committed run of an earlier commit, as git-COMMIT/<folder>/results.jsonl.gz
old() { local f=$TMP/git-$1/$(basename "$(dirname "$2")")/$(basename "$2"); mkdir -p "$(dirname "$f")"; git show "$1:$2" > "$f"; echo "$f"; }
cmp() { local page=$1; shift; $BENCH compare "$@" --out "$page" > "$TMP/compare.log" 2>&1; echo "$page"; }

cmp reports/dml-lavapipe-sm6/compare-sm51.html "$(old c1ee758 reports/dml-lavapipe/results.jsonl.gz)" reports/dml-lavapipe-sm6/results.jsonl.xz
cmp reports/dml-direct-lavapipe-sm6/compare-sm51.html "$(old c1ee758 reports/dml-direct-lavapipe/results.jsonl.gz)" reports/dml-direct-lavapipe-sm6/results.jsonl.xz
cmp reports/dml-h100/compare-lavapipe.html reports/dml-lavapipe/results.jsonl.xz reports/dml-h100/results.jsonl.xz
cmp reports/dml-h100/compare-previous.html "$(old 2b2c3f2 reports/dml-h100/results.jsonl.gz)" reports/dml-h100/results.jsonl.xz
for p in 1.13.1-vs-1.14.1 1.14.1-vs-1.15.1 1.15.1-vs-1.15.2 1.15.2-vs-1.15.4 1.13.1-vs-1.15.4; do
  cmp reports/dml-versions/compare-direct-$p.html reports/dml-versions/direct-${p%%-vs-*}/results.jsonl.xz \
      reports/dml-versions/direct-${p##*-vs-}/results.jsonl.xz
done
cmp reports/h100/compare-cuda-2026-11-21-to-now.html "$(old a64b6f5 reports/h100/cuda/results.jsonl.gz)" \
    "$(old e48f2e1 reports/h100/cuda/results.jsonl.gz)"
cmp reports/limits-cpu/compare-2026-11-25.html "$(old b32494d reports/limits-cpu/results.jsonl.xz)" reports/limits-cpu/results.jsonl.xz
cmp reports/h100/compare-cuda-morning-to-evening.html "$(old e48f2e1 reports/h100/cuda/results.jsonl.gz)" reports/h100/cuda/results.jsonl.xz
# the 21 Nov WebGPU records come from two devices (the H100 and an H200 re-run): matched by case id
cmp reports/h100/compare-webgpu-2026-11-21-to-now.html "$(old a64b6f5 reports/h100/webgpu/results.jsonl.gz)" \
    reports/h100/webgpu/results.jsonl.xz --by-case
for s in limits-h200-cuda:limits-h100-cuda limits-h200-webgpu:limits-h100-webgpu networks-h200-webgpu:networks-h100-webgpu; do
  cmp reports/${s%%:*}/compare-h100.html reports/${s##*:}/results.jsonl.xz reports/${s%%:*}/results.jsonl.xz
done
cmp reports/ort-1.31.1-to-1.32.0/compare.html reports/ort-1.31.1-to-1.32.0/baseline-1.31.1.jsonl.xz \
    reports/ort-1.31.1-to-1.32.0/current-1.32.0.jsonl.xz
(cd reports/h200-perf && $BENCH perf-compare perf-cuda-f16-as-f32.json perf-cuda-f32.json \
    --out compare-cuda-f16-f32.html > "$TMP/compare.log" 2>&1; echo reports/h200-perf/compare-cuda-f16-f32.html)
for d in dml-perf-h100 dml-perf-lavapipe; do
  (cd reports/$d && $BENCH perf-compare perf-1.13.1-1.json perf-1.15.4-1.json --baseline-run perf-1.13.1-2.json \
      --current-run perf-1.15.4-2.json --out perf-compare-1.13.1-vs-1.15.4.html > "$TMP/compare.log" 2>&1
   $BENCH perf-compare perf-1.15.4-1.json perf-1.15.4-2.json --out perf-compare-1.15.4-run1-vs-run2.html \
      > "$TMP/compare.log" 2>&1; echo reports/$d/perf-compare-*.html)
done
exit $status
