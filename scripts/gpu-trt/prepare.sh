#!/usr/bin/env bash
# Run in the project's root on a machine that can reach NVIDIA's package index (pypi.nvidia.com).
# Builds .gpu-trt/ (git-ignored) for the offline NVIDIA GPU machine that receives at most 64 MiB per
# call (the working tree included), as /work/shared/device/prepare.sh does for onnxruntime-gpu:
#   .gpu-trt/s/        stage.sh, install.sh, SUMS, FIGURES (the sizes below)
#   .gpu-trt/c1 .. cN  one chunk each (CHUNK_MB, default 20: 64 MiB minus the working tree, 43 MB
#                      with reports/, with room) of trt.tar.xz: TensorRT's libraries that
#                      onnxruntime-gpu's TensorRT EP loads (libnvinfer.so.10, its builder resources,
#                      libnvonnxparser.so.10), nothing else of the wheel
# onnxruntime-gpu 1.31.1's libonnxruntime_providers_tensorrt.so needs libnvinfer.so.10 and
# libnvonnxparser.so.10 (readelf -d), and CUDA 13: so TensorRT 10 for CUDA 13, tensorrt-cu13-libs 10.x
# (TRT_VERSION, default 10.16.1.11, the last 10.x on the index; 11.x is libnvinfer.so.11, which this
# build does not load). PyPI holds only a 15.5 kB source stub of tensorrt-cu13-libs that fetches the
# wheel from pypi.nvidia.com when installed; the wheel itself is on NVIDIA's index only.
#
# The transfer is feasible only while the chunks fit the device time: every chunk is one call that
# carries it (bash .gpu-trt/s/stage.sh N), back to back on a machine held warm (it is given back
# after ~30 s idle, which loses the chunks held in /tmp), after onnxruntime-gpu's own 4 chunks, within
# 30 minutes of device time for everything, the runs included. MAX_CHUNKS (default 20) is where this
# script stops and says the libraries cannot reach the machine (exit 4), with the figures.
set -euo pipefail
TRT_VERSION=${TRT_VERSION:-10.16.1.11}
CHUNK_MB=${CHUNK_MB:-20}
MAX_CHUNKS=${MAX_CHUNKS:-20}
here=$(cd "$(dirname "$0")" && pwd)
out=$PWD/.gpu-trt
tmp=${TMPDIR:-/tmp}/gpu-trt-prep
ex=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$ex")" && { grep -qx '/.gpu-trt/' "$ex" 2>/dev/null || echo '/.gpu-trt/' >> "$ex"; }
rm -rf "$out" "$tmp" && mkdir -p "$out/s" "$tmp/whl" "$tmp/unz" "$tmp/keep/lib"
flags="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
python3 -m pip download -q $flags --extra-index-url https://pypi.nvidia.com -d "$tmp/whl" "tensorrt-cu13-libs==$TRT_VERSION" || {
  echo "tensorrt-cu13-libs $TRT_VERSION: no wheel from https://pypi.nvidia.com here (PyPI has only its source stub);" \
       "run this where NVIDIA's index can be reached" >&2; exit 3; }
whl=$(ls "$tmp"/whl/*.whl)
(cd "$tmp/unz" && python3 -m zipfile -e "$whl" .)
find "$tmp/unz" \( -name 'libnvinfer.so.10*' -o -name 'libnvinfer_builder_resource*.so*' -o -name 'libnvonnxparser.so.10*' \) \
     -exec cp -L {} "$tmp/keep/lib/" \;
ls "$tmp/keep/lib"/libnvinfer.so.10* "$tmp/keep/lib"/libnvonnxparser.so.10* > /dev/null
tar -C "$tmp/keep" -cf - lib | xz -9 -T2 -c > "$tmp/trt.tar.xz"
(cd "$tmp" && split -b "${CHUNK_MB}m" -d -a 2 trt.tar.xz part && sha256sum part?? > SUMS)
n=$(ls "$tmp"/part?? | wc -l)
mb() { du -m "$1" | cut -f1; }
{
  echo "tensorrt-cu13-libs $TRT_VERSION: wheel $(mb "$whl") MB; the libraries kept $(du -sm "$tmp/keep" | cut -f1) MB;"
  echo "xz -9: $(mb "$tmp/trt.tar.xz") MB = $n chunks of $CHUNK_MB MB (one device call each; limit $MAX_CHUNKS)"
} | tee "$out/s/FIGURES"
if [ "$n" -gt "$MAX_CHUNKS" ]; then
  echo "the libraries cannot reach the GPU machine within its transfer limits: $n calls of $CHUNK_MB MB, besides" \
       "onnxruntime-gpu's 4, each on a machine held warm, within 30 minutes of device time" | tee -a "$out/s/FIGURES"
  exit 4
fi
i=0
for p in "$tmp"/part??; do i=$((i + 1)); mkdir -p "$out/c$i"; cp "$p" "$out/c$i/"; done
cp "$tmp/SUMS" "$out/s/SUMS"
cp "$here/stage.sh" "$here/install.sh" "$out/s/"
echo "$n" > "$out/s/CHUNKS"
du -sh "$out"/*
echo "ready: .gpu-trt/ holds $n chunks; on the GPU machine: bash .gpu-trt/s/stage.sh 1 .. $n, then source .gpu-trt/s/install.sh"
