#!/usr/bin/env bash
# Install the DirectML-under-Wine stack used by onnx_dml_bench.dml and check it.
#
# Usage: bash .ci/setup_dml.sh [PYTHON]    (PYTHON defaults to python3)
#
# Run as root on Debian bookworm (apt-get installs wine, wine64, xvfb, xauth,
# libvulkan1, vulkan-tools when missing; Mesa lavapipe >= 23 is fetched from
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
import sys, time
from onnx_dml_bench.dml import stack, client

t0 = time.monotonic()
try:
    info = stack.setup()
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
client.shutdown()
sys.exit(0 if res.ok else 1)
PYEOF
echo "DirectML stack setup and canary took $(( $(date +%s) - start )) s"
