"""The committed expectations file of DirectML/lavapipe makes the committed default-profile sample
green, and turns red when a case it does not list fails or a listed one passes."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from onnx_dml_bench import expectations
from onnx_dml_bench.results import read

ROOT = Path(__file__).resolve().parent.parent


def test_lavapipe_expectations_make_the_sample_green():
    known = expectations.load(ROOT / "expectations" / "dml-lavapipe.yaml")
    recs = read(ROOT / "reports" / "dml-lavapipe" / "results.jsonl.gz").records
    cls = known.classify(recs, {"FAIL"})
    assert cls.exit_code == 0 and len(cls.expected) == sum(r.verdict == "FAIL" for r in recs) > 0
    # a new failure is unexpected, a listed failure that passes is "fixed": both turn the gate red
    passing = next(r for r in recs if r.verdict == "PASS")
    failing = next(r for r in recs if r.verdict == "FAIL")
    changed = [dataclasses.replace(passing, verdict="FAIL"), dataclasses.replace(failing, verdict="PASS")]
    cls = known.classify(changed, {"FAIL"})
    assert len(cls.unexpected) == 1 and len(cls.fixed) == 1 and cls.exit_code == 1
