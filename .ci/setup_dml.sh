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
set -euo pipefail

PY="${1:-python3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

start=$(date +%s)
"$PY" - <<'PYEOF'
import os, sys, time
from onnx_dml_bench.dml import stack, client

t0 = time.monotonic()
try:
    # further onnxruntime-node builds side by side, e.g. ONNX_DML_BENCH_ORT_NODE_VERSIONS="1.18.0 1.20.1"
    extra = os.environ.get("ONNX_DML_BENCH_ORT_NODE_VERSIONS", "").split()
    info = stack.setup(onnxruntime_node=extra)
except stack.StackError as e:
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
adapter = client.adapter_info(info)
print("adapter: " + ", ".join(f"{k}={adapter[k]}" for k in
                              ("deviceName", "driverInfo", "apiVersion") if k in adapter))
# the direct lane: its harness built from onnx_dml_bench/dml/direct (MinGW from Debian) and its
# known-answer canary on the same DirectML.dll
from onnx_dml_bench.dml.direct import DirectRunner, ensure_built
from onnx_dml_bench.dml.direct.lane import run_canary
t2 = time.monotonic()
try:
    exe = ensure_built(info)
except stack.StackError as e:
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
