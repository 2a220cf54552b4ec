#!/usr/bin/env bash
# On the GPU machine, in the project's root, carrying .gpu-trt/s and .gpu-trt/cN:
#   bash .gpu-trt/s/stage.sh N
# keeps chunk N in /tmp/gpu-trt/chunks until install.sh (it lasts while the machine is held).
set -eu
mkdir -p /tmp/gpu-trt/chunks && cp .gpu-trt/c"$1"/* /tmp/gpu-trt/chunks/
echo "chunks held: $(ls /tmp/gpu-trt/chunks | tr '\n' ' ') (of $(cat .gpu-trt/s/CHUNKS 2>/dev/null || echo '?'))"
