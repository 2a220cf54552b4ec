#!/usr/bin/env bash
# Install the DirectML-under-Wine stack used by onnx_dml_bench.dml, build the direct lane's
# harness (MinGW-w64 from Debian, into the cache, never committed) and check both lanes.
#
# Usage: bash .ci/setup_dml.sh [PYTHON]    (PYTHON defaults to python3)
#
# Run as root on Debian bookworm (apt-get installs wine, wine64, xvfb, xauth,
# libvulkan1, vulkan-tools and gcc-mingw-w64-x86-64-posix when missing; Mesa lavapipe >= 23 is fetched from
# bookworm-backports into the cache with a private apt state, the system's
# apt sources are not changed).  The cache folder is $ONNX_DML_BENCH_CACHE or
# ~/.cache/onnx-dml-bench/dml.  Re-running is cheap: finished steps are kept.
#
# ONNX_DML_BENCH_STACKS="wine10-sm6" also sets up the shader model 6 stack (Debian trixie's Wine 10
# in a debootstrap root, wined3d.dll rebuilt from Debian's source; several minutes on two cores, so
# not done by default) and runs its canary.
set -euo pipefail

PY="${1:-python3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

start=$(date +%s)
"$PY" - <<'PYEOF'
import os, sys, time
from onnx_dml_bench.dml import StackError, adapter_info, setup
from onnx_dml_bench.dml.node import client

t0 = time.monotonic()
try:
    # further onnxruntime-node builds side by side, e.g. ONNX_DML_BENCH_ORT_NODE_VERSIONS="1.18.0 1.20.1"
    extra = os.environ.get("ONNX_DML_BENCH_ORT_NODE_VERSIONS", "").split()
    info = setup(onnxruntime_node=extra)
except StackError as e:
    print(f"DirectML stack setup failed:\n{e}", file=sys.stderr)
    sys.exit(2)
print(f"setup: {time.monotonic() - t0:.1f} s")
for k, v in sorted(info.versions.items()):
    print(f"  {k}: {v}")
t1 = time.monotonic()
res = client.canary(info)
print(f"canary: {'ok' if res.ok else 'FAILED'} ({time.monotonic() - t1:.1f} s): {res.message}")
for line in res.details.get("placement", []):
    print("  " + line)
adapter = adapter_info(info)
print("adapter: " + ", ".join(f"{k}={adapter[k]}" for k in
                              ("deviceName", "driverInfo", "apiVersion") if k in adapter))
# the direct lane: its harness built from onnx_dml_bench/dml/direct (MinGW from Debian) and its
# known-answer canary on the same DirectML.dll
from onnx_dml_bench.dml.direct import DirectRunner, ensure_built
from onnx_dml_bench.lanes.dml_direct import run_canary
t2 = time.monotonic()
try:
    exe = ensure_built(info)
except StackError as e:
    print(f"direct lane harness build failed:\n{e}", file=sys.stderr)
    client.shutdown()
    sys.exit(2)
with DirectRunner(info, exe=exe) as runner:
    direct_ok, message = run_canary(runner)
    dev = runner.device_info()
print(f"direct lane: {exe.name} ({time.monotonic() - t2:.1f} s): {message}")
print(f"  DirectML.dll {dev['dml_version'].get('file_version')}, max feature level {dev['max_feature_level']}")
client.shutdown()
sys.exit(0 if res.ok and direct_ok else 1)
PYEOF
echo "DirectML stack setup and canary took $(( $(date +%s) - start )) s"

for name in ${ONNX_DML_BENCH_STACKS:-}; do
    case "$name" in
        wine8-sm51) ;;                       # the stack above
        wine10-sm6)
            t=$(date +%s)
            "$PY" -m onnx_dml_bench.cli setup dml --stack wine10-sm6
            echo "stack $name: setup, shader model and canary took $(( $(date +%s) - t )) s" ;;
        *) echo "ONNX_DML_BENCH_STACKS: unknown stack $name (wine8-sm51, wine10-sm6)" >&2; exit 2 ;;
    esac
done
