"""A second real EP: OpenVINOExecutionProvider (package onnxruntime-openvino, which runs on this
CPU). Skipped where that package is not the installed ONNX Runtime flavour, unless
REQUIRE_OPENVINO=1 (set by CI in its OpenVINO environment), which turns the skip into a failure."""
from __future__ import annotations

import os
from collections import Counter

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.errors import ProviderError
from onnx_dml_bench.lanes.catalog import resolve


@pytest.fixture(scope="module")
def ov_records():
    try:
        spec = resolve("openvino")
    except ProviderError as e:
        if os.environ.get("REQUIRE_OPENVINO") == "1":
            pytest.fail(f"OpenVINO EP required but not available: {e}")
        pytest.skip(f"OpenVINO EP not available here: {e}")
    cases = [c for op in registry.OPERATORS.values() for c in op.sweep("smoke")]
    return run_cases(cases, spec, RunConfig(jobs=2, timeout_s=600))


def test_max_roi_pool_is_never_a_pass_on_openvino(ov_records):
    roi = [r for r in ov_records if r.op == "roi_pooling"]
    assert roi
    assert all(r.verdict in ("NOT_OFFLOADED", "EP_REJECTED") for r in roi), Counter(r.verdict for r in roi)
    assert any(r.verdict == "NOT_OFFLOADED" and "fallback" in r.reason for r in roi)


def test_openvino_passes_are_placed_on_openvino(ov_records):
    passes = [r for r in ov_records if r.verdict == "PASS"]
    assert len(passes) > 30
    for r in passes:
        assert r.ep == "OpenVINOExecutionProvider"
        assert r.placement.fallback_disabled is True
        assert set(r.placement.nodes.values()) == {"OpenVINOExecutionProvider"}


def test_three_way_comparison_ran(ov_records):
    with_cpu = [r for r in ov_records if r.cpu and r.cpu.verdict]
    assert len(with_cpu) > 30
    assert {r.attribution for r in ov_records if r.verdict == "FAIL"} <= {"EP_WRONG", "CPU_WRONG", "BOTH_WRONG", "REFERENCE_DISPUTED"}
