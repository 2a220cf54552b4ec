#!/usr/bin/env bash
# On the GPU machine, after .gpu/s/install.sh (onnxruntime-gpu) and stage.sh 1..N on the same machine:
#   source .gpu-trt/s/install.sh
# unpacks TensorRT's libraries into /tmp/trt/lib, puts them on LD_LIBRARY_PATH and checks that the
# TensorRT EP really opens a session (`onnx-dml-bench eps` says ok only then). Then, e.g.:
#   python3 -m onnx_dml_bench run --ep tensorrt --profile default --jobs 8 --out "$OUT/trt-default"
#   python3 -m onnx_dml_bench run --ep tensorrt --ep-option trt_fp16_enable=True --profile smoke --out "$OUT/trt-fp16"
#   bash scripts/gpu/networks.sh "$OUT" tensorrt
#   bash scripts/gpu-multi/devices.sh "$OUT" tensorrt           (a host of several GPUs)
R=$PWD
(cd /tmp/gpu-trt/chunks && sha256sum -c --quiet "$R/.gpu-trt/s/SUMS") || {
  echo "chunks missing: the machine was given back; start again at stage.sh 1"; return 3 2>/dev/null || exit 3; }
if [ ! -e /tmp/trt/lib/libnvinfer.so.10 ]; then
  mkdir -p /tmp/trt && cat /tmp/gpu-trt/chunks/part?? | xz -T0 -dc | tar -C /tmp/trt -xf -
  (cd /tmp/trt/lib && for f in libnvinfer.so.10.* libnvonnxparser.so.10.*; do
     [ -e "$f" ] && ln -sf "$f" "${f%.so.*}.so.10"; done; true)
fi
export LD_LIBRARY_PATH=/tmp/trt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m onnx_dml_bench eps 2>&1 | grep -i tensorrt
