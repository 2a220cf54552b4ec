#!/usr/bin/env bash
# The main job: DirectML against ONNX Runtime's CPU EP on this machine, in one report.
#
#   scripts/bench.sh [PROFILE] [--no-dml] [--jobs N] [--out DIR]     PROFILE: smoke | default | full (default: default)
#
# 1. a virtual environment in .venv with the bench (pip, constraints.txt): the CPU EP on Linux,
#    onnxruntime-directml on Windows (Git Bash);
# 2. `onnx-dml-bench bench`: sets DirectML up (Linux: `onnx-dml-bench setup dml` installs Wine,
#    Mesa's lavapipe and the DML EP of onnxruntime-node under Wine; apt-get needs root for missing
#    system packages: without root it says which to install, and the other lanes still run;
#    --no-dml skips it), runs the CPU EP, the DML EP, the direct DirectML lane and any other EP
#    found, writes reports/latest/report.html (who is at fault: DirectML itself, the DML EP's
#    lowering, the CPU EP or the reference), and exits as the shipped expectations say
#    (expectations/): 0 all as expected, 1 unexpected results, 3 a lane that could not start.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=default
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then profile=$1; shift; fi
case "$(uname -s)" in
  MINGW*|MSYS*|CYGWIN*) PY=${PYTHON:-python}; VPY=.venv/Scripts/python.exe; extra=directml ;;
  *) PY=${PYTHON:-python3}; VPY=.venv/bin/python; extra=cpu ;;
esac
t0=$SECONDS
if [ ! -x "$VPY" ]; then
  echo "bench.sh: creating the virtual environment .venv ($($PY --version 2>&1))"
  "$PY" -m venv .venv
fi
echo "bench.sh: installing the bench with extra '$extra' into .venv (pip, constraints.txt; about 20 s the first time) ..."
"$VPY" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extra]"
echo "bench.sh: installed in $(( SECONDS - t0 )) s"
exec "$VPY" -m onnx_dml_bench bench --profile "$profile" "$@"
