#!/usr/bin/env bash
# On the GPU machine, after stage.sh for every chunk but the last, carrying .gpu-dml/s and the last chunk:
#   bash .gpu-dml/s/install.sh
# Checks the chunks, unpacks the Debian packages privately (dpkg -x into $G/root, nothing into /
# except /usr/bin/xkbcomp when the image has none: Xvfb runs it from that fixed path), makes the
# bundle self-contained (wineserver wrapper, zlib1.dll, an Xvfb wrapper), unpacks Node.js and
# onnxruntime-node into the cache and writes the stack (Wine prefix included).
# G (default /tmp/gpu-dml) holds chunks/, root/ and cache/.
set -euo pipefail
R=$PWD
G=${G:-/tmp/gpu-dml}
mkdir -p "$G/chunks"
for d in .gpu-dml/c*; do [ -d "$d" ] && cp "$d"/* "$G/chunks/"; done
(cd "$G/chunks" && sha256sum -c --quiet "$R/.gpu-dml/s/SUMS") || { echo "chunks missing or damaged (the machine was given back in between?): start again at stage.sh 1" >&2; exit 3; }
t0=$(date +%s)
rm -rf "$G/payload" "$G/root" && mkdir -p "$G/payload" "$G/root" "$G/cache"
cat "$G"/chunks/part?? | tar -C "$G/payload" -xf -
for f in "$G"/payload/debs/*.deb; do dpkg-deb -x "$f" "$G/root"; done
xz -dc "$G/payload/stack.tar.xz" | tar -C "$G/cache" -xf -
rm -rf "$G/payload"
if ! command -v xkbcomp >/dev/null && [ ! -e /usr/bin/xkbcomp ]; then
  ln -s "$G/root/usr/bin/xkbcomp" /usr/bin/xkbcomp && echo "/usr/bin/xkbcomp -> $G/root/usr/bin/xkbcomp"
fi
mkdir -p /var/lib/xkb 2>/dev/null || true
export ONNX_DML_BENCH_CACHE=$G/cache PYTHONPATH=$R${PYTHONPATH:+:$PYTHONPATH}
${PY:-python3} -m onnx_dml_bench.dml install --root "$G/root" --cache "$G/cache"
echo "bundle installed in $(( $(date +%s) - t0 )) s"
