#!/usr/bin/env bash
# On the GPU machine, in the project's root, carrying .gpu-dml/s and .gpu-dml/cN:
#   bash .gpu-dml/s/stage.sh N
# keeps chunk N in /tmp/gpu-dml/chunks until install.sh (it lasts while the machine is held).
set -eu
mkdir -p /tmp/gpu-dml/chunks && cp .gpu-dml/c"$1"/* /tmp/gpu-dml/chunks/
echo "chunks held: $(ls /tmp/gpu-dml/chunks | tr '\n' ' ')"
