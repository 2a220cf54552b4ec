#!/usr/bin/env bash
# The smoke profile on the real DirectML EP under Wine. The canary must pass (the run stops with
# exit code 3 otherwise); MaxPool, SpaceToDepth and DepthToSpace cases must come out PASS with
# placement proof. Other divergences are verdicts, not CI failures.
set -euo pipefail
cd "$(dirname "$0")/.."
# The runs are the workflow's Linux jobs, dry: scripts/ci-dml.sh, the very script those jobs run
# (setup dml, the lane with its shipped expectations, the harness kept for the Windows job).
rm -rf reports/ci/dml reports/ci/dml-direct reports/ci/dml-fourway   # fresh runs
bash scripts/ci-dml.sh dml reports/ci/dml smoke
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

# The direct DirectML lane: the smoke profile's descriptors (and the descriptor-only cases ONNX
# cannot express) on the same DirectML.dll, no ONNX Runtime. Its canary must pass (exit code 3
# otherwise); integer MaxPool must get real verdicts; nothing may crash; the four-way report of
# both lanes must be written.
bash scripts/ci-dml.sh dml-direct reports/ci/dml-direct smoke
test -s reports/ci/dml-direct/harness/harness.exe
.venv/bin/python - <<'PY'
from collections import Counter
from onnx_dml_bench.results import read
res = read("reports/ci/dml-direct/results.jsonl")
env, recs = res.envs[-1], res.records
assert env.ep == "DirectML" and env.ep_key == "dml-direct", env.ep
canary = env.get("canary")
assert isinstance(canary, str) and canary.startswith("direct canary passed"), canary
assert env.get("harness_build") and env.get("dml", {}).get("DirectML.dll"), env.flat()
assert "GeForce" not in env.device, env.device          # the Vulkan device, not Wine's D3D12 adapter name
ints = [r for r in recs if r.op == "max_pooling2" and r.dtype in ("INT32", "INT64", "INT16", "UINT16", "UINT32", "UINT64")]
assert len(ints) >= 6 and all(r.verdict in ("PASS", "FAIL", "NOT_SUPPORTED") for r in ints), \
    Counter((r.dtype, r.verdict) for r in ints)
assert not any(r.verdict in ("CRASH", "TIMEOUT") for r in recs), [r.case_id for r in recs if r.verdict in ("CRASH", "TIMEOUT")]
assert not any(r.verdict == "NOT_EXPRESSIBLE" for r in recs)
print("DirectML (direct lane):", dict(Counter(r.verdict for r in recs)), "|", env.get("dml")["DirectML.dll"], env.driver)
PY
.venv/bin/onnx-dml-bench report reports/ci/dml/results.jsonl reports/ci/dml-direct/results.jsonl --out reports/ci/dml-fourway
.venv/bin/python - <<'PY'
import json
s = json.load(open("reports/ci/dml-fourway/summary.json"))
fw = s["fourway"]
assert fw and sum(fw["counts"].values()) > 50, fw and fw["counts"]
print("four-way:", fw["counts"], "| direct only:", fw["direct_only"], "| EP only:", fw["ep_only"])
page = open("reports/ci/dml-fourway/report.html", encoding="utf-8").read()
assert "What DirectML got wrong, and who is at fault" in page and 'href="#fourway"' in page
PY

# The expectations file of DirectML/lavapipe: the committed default-profile sample classifies with no
# unexpected FAIL and no fixed case against it (a gate on FAIL; the live smoke run above gates on
# CRASH and TIMEOUT).
.venv/bin/python - <<'PY'
from onnx_dml_bench import expectations
from onnx_dml_bench.results import read
cls = expectations.load("expectations/dml-lavapipe.yaml").classify(
    read("reports/dml-lavapipe/results.jsonl.xz").records, {"FAIL"})
print("\n".join(cls.summary_lines()))
assert cls.exit_code == 0 and not cls.unexpected and not cls.fixed
PY
