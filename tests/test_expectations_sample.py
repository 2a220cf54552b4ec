"""The committed expectations file of DirectML/lavapipe makes the committed default-profile sample
green, and turns red when a case it does not list fails or a listed one passes."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from onnx_dml_bench import expectations
from onnx_dml_bench.results import read

ROOT = Path(__file__).resolve().parent.parent


def test_lavapipe_expectations_make_the_sample_green():
    known = expectations.load(ROOT / "expectations" / "dml-lavapipe.yaml")
    recs = read(ROOT / "reports" / "dml-lavapipe" / "results.jsonl.xz").records
    cls = known.classify(recs, {"FAIL"})
    assert cls.exit_code == 0 and len(cls.expected) == sum(r.verdict == "FAIL" for r in recs) > 0
    # a new failure is unexpected, a listed failure that passes is "fixed": both turn the gate red
    passing = next(r for r in recs if r.verdict == "PASS")
    failing = next(r for r in recs if r.verdict == "FAIL")
    changed = [dataclasses.replace(passing, verdict="FAIL"), dataclasses.replace(failing, verdict="PASS")]
    cls = known.classify(changed, {"FAIL"})
    assert len(cls.unexpected) == 1 and len(cls.fixed) == 1 and cls.exit_code == 1


SHIPPED = {"cpu.yaml": "CPUExecutionProvider", "dml-lavapipe.yaml": "DmlExecutionProvider",
           "dml-direct-lavapipe.yaml": "DirectML"}


def test_every_shipped_entry_has_a_real_reason():
    """Each entry says who is at fault and why: a CPU EP entry quotes the declared text of each known
    deviation it names; a DirectML entry names DirectML itself or the DML EP's lowering."""
    import re
    from onnx_dml_bench import registry
    devs = {d.key: d for op in registry.OPERATORS.values() for d in op.deviations()}
    for name, ep in SHIPPED.items():
        known = expectations.load(ROOT / "expectations" / name)
        assert known.ep == ep and known.entries, name
        for e in known.entries:
            if ep == "CPUExecutionProvider" and e.verdicts == {"EP_ERROR"}:
                # a run-time refusal no deviation declares: the EP's own message is the reason
                assert e.reason.startswith("no answer: ") and "Status Message: " in e.reason, (name, e.index)
            elif ep == "CPUExecutionProvider":
                keys = re.findall(r"known deviation ([\w-]+) \(", e.reason)
                assert keys, (name, e.index, e.reason)
                for k in keys:
                    assert devs[k].summary in e.reason, (name, k)
            else:
                assert e.reason.startswith(("DirectML itself: ", "DML EP lowering: ")), (name, e.index, e.reason)
                assert "differ" in e.reason


@pytest.mark.parametrize("profile", ["smoke", "default"])
def test_cpu_expectations_follow_a_fresh_run(tmp_path, profile):
    """The CPU EP's shipped expectations classify a fresh run of this machine's ONNX Runtime, in
    both profiles they are written from (the default one is what scripts/bench.sh runs), with
    nothing unexpected and nothing fixed: a verdict that moves shows here, not on a user's first
    run of the main job."""
    from onnx_dml_bench.cli import main
    out = tmp_path / "cpu"
    code = main(["run", "--ep", "cpu", "--profile", profile, "--jobs", "2", "--out", str(out), "--no-report",
                 "--expectations", str(ROOT / "expectations" / "cpu.yaml")])
    recs = read(out / "results.jsonl").records
    cls = expectations.load(ROOT / "expectations" / "cpu.yaml").classify(recs)
    assert not cls.unexpected and not cls.fixed and cls.expected and code == 0, \
        ([r.case_id for r in cls.unexpected], [r.case_id for r in cls.fixed])
