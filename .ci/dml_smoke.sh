#!/usr/bin/env bash
# The smoke profile on the real DirectML EP under Wine. The canary must pass (the run stops with
# exit code 3 otherwise); MaxPool, SpaceToDepth and DepthToSpace cases must come out PASS with
# placement proof. Other divergences are verdicts, not CI failures.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/onnx-dml-bench run --ep dml --profile smoke --out reports/ci/dml --fail-on CRASH,TIMEOUT
.venv/bin/python - <<'PY'
from collections import Counter
from onnx_dml_bench.results import read
res = read("reports/ci/dml/results.jsonl")
envs, recs = res.envs, res.records
env = envs[-1]
canary, statement, dml = env.get("canary"), env.get("statement"), env.get("dml")
assert isinstance(canary, str) and "canary passed" in canary, canary
assert isinstance(statement, str) and statement.startswith("DirectML on a software Vulkan device"), statement
assert isinstance(dml, dict) and "DirectML.dll" in dml, dml
for op in ("max_pooling2", "space_to_depth1", "depth_to_space1"):
    ok = [r for r in recs if r.op == op and r.verdict == "PASS"]
    assert len(ok) >= 5, (op, Counter(r.verdict for r in recs if r.op == op))
    for r in ok:
        assert r.ep == "DmlExecutionProvider" and r.placement.fallback_disabled, r.case_id
        assert set(r.placement.nodes.values()) == {"DmlExecutionProvider"}, (r.case_id, r.placement)
print("DirectML:", dict(Counter(r.verdict for r in recs)), "|", dml["DirectML.dll"], env.driver)
PY
