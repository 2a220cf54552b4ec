"""The NumPy reference (written from the DirectML documentation) against two other implementations:
ONNX Runtime's CPU EP and ``onnx.reference.ReferenceEvaluator``, over the smoke and default sweeps.

Neither is ground truth. Where one of them departs from the DirectML semantics, that departure is
a deviation: each operator declares its own in its file (``Operator.deviations``, an
``ops.base.Deviation`` with a predicate over a case and its inputs); ``DEVIATIONS`` (conftest.py)
collects them from the registry, and each has its own test in its operator's test file
(tests/ops/test_<op>.py) that shows, on a small explicit configuration, who departs and how. The
agreement tests here skip exactly the cases the predicates match, so any new disagreement still
fails them; another test checks that every exclusion still matches a real disagreement in the
sweep.

Kinds of deviation (``ops.base.DEVIATION_KINDS``):
- ``bug``: the implementation departs from the DirectML semantics (and, for these, from ONNX's);
- ``open point``: the DirectML page says nothing (NaN, the sign of a zero maximum); the reference
  follows its documented policy, the implementation another one. Not a bug of either;
- ``tolerance``: both are defensible, but the bench's tolerance does not cover the difference;
- ``limitation``: the implementation cannot run the configuration at all.
"""
from __future__ import annotations

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case
from onnx_dml_bench.ops.base import DEVIATION_KINDS, ONNX_REFERENCE, ORT_CPU, Deviation

from conftest import (DEV, DEVIATIONS, PROFILES, Failure, deviations_for, expressible, inputs_of, onnx_mismatches,
                      onnx_reference_run, ort_sweep_results, sweep)

pytest.importorskip("onnxruntime")

OPS = list(registry.OPERATORS)
ORT = ORT_CPU
OREF = ONNX_REFERENCE


# ---- agreement over the sweeps ---------------------------------------------------------------


# the share of each operator's cases an implementation must still be checked on (ROI pooling on
# ORT: half its cases are float16, which ORT cannot run; RoiAlign on onnx.reference: its readings
# of open points differ from the reference's on the denormal family too, where RoiAlign's bound has
# only its data type's subnormal term)
MIN_CHECKED = {ORT: 0.35, OREF: 0.35}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", OPS)
def test_reference_agrees_with_ort_cpu(profile, op_key):
    results = ort_sweep_results(profile)
    cases = expressible(sweep(profile, op_key))
    checked = [c for c in cases if not deviations_for(c, ORT)]
    assert len(checked) >= MIN_CHECKED[ORT] * len(cases), f"only {len(checked)}/{len(cases)} checked"
    problems = [p for c in checked for p in onnx_mismatches(c, results[c.id])]
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", OPS)
def test_reference_agrees_with_onnx_reference(profile, op_key):
    cases = expressible(sweep(profile, op_key))
    checked = [c for c in cases if not deviations_for(c, OREF)]
    if op_key == "roi_pooling":
        assert not checked          # no MaxRoiPool in onnx.reference: see its deviation test
        return
    assert len(checked) >= MIN_CHECKED[OREF] * len(cases), f"only {len(checked)}/{len(cases)} checked"
    problems = [p for c in checked for p in onnx_mismatches(c, onnx_reference_run(c))]
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:15])


def test_every_case_of_ort_results_ran_or_is_a_limitation():
    """A session failure is only acceptable where a 'limitation' deviation says so."""
    results = ort_sweep_results("default")
    for c in expressible(sweep("default")):
        if isinstance(results[c.id], Failure):
            kinds = {d.kind for d in deviations_for(c, ORT)}
            assert "limitation" in kinds, f"{c.id}: {results[c.id]}"


@pytest.mark.parametrize("who", [ORT, OREF])
def test_exclusions_still_deviate(who):
    """Every deviation whose predicate matches default-sweep cases still shows a disagreement on at
    least one of them (an exclusion that no longer excludes anything real must go). 'tolerance'
    exclusions are exempt: whether they show depends on both sides' summation order."""
    results = ort_sweep_results("default") if who == ORT else None
    matched: dict[str, list[Case]] = {}
    for c in expressible(sweep("default")):
        for d in deviations_for(c, who):
            if d.kind == "tolerance":
                continue
            matched.setdefault(d.key, []).append(c)
    assert matched
    stale = []
    for key, cases in matched.items():
        got = (lambda c: results[c.id]) if who == ORT else onnx_reference_run
        if not any(onnx_mismatches(c, got(c)) for c in cases):
            stale.append(f"{key} ({len(cases)} cases)")
    assert not stale, stale


# ---- the deviations: each operator declares its own (Operator.deviations) --------------------


def test_deviation_keys_unique_and_described():
    owners: dict[str, list[str]] = {}
    for op in registry.OPERATORS.values():
        for d in op.deviations():
            owners.setdefault(d.key, []).append(op.key)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}
    assert len(DEV) == len(DEVIATIONS)
    for d in DEVIATIONS:
        assert d.who in (ORT, OREF) and d.kind in DEVIATION_KINDS
        assert len(d.summary) > 30


def test_deviation_rejects_an_unknown_kind_or_implementation():
    with pytest.raises(ValueError, match="kind"):
        Deviation("x", ORT, "quirk", "a deviation of no known kind", lambda c, x: True)
    with pytest.raises(ValueError, match="who"):
        Deviation("x", "some runtime", "bug", "a deviation of no known implementation", lambda c, x: True)


@pytest.mark.parametrize("op_key", OPS)
def test_each_operators_deviations_match_only_its_cases(op_key):
    own = registry.OPERATORS[op_key].deviations()
    assert own or op_key not in ("max_pooling2", "average_pooling1", "roi_pooling")
    hits: dict[str, int] = {}
    for profile in PROFILES:
        for c in sweep(profile):
            for d in own:
                if d.applies(c, inputs_of(c)):
                    assert c.op == op_key, f"{d.key} of {op_key} matches {c.id}"
                    hits[d.key] = hits.get(d.key, 0) + 1
    assert hits or not own
