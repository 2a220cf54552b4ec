"""perf on the sized profiles: ``--profile networks`` times the census layers, each named by its
layer (kind, the exporters' ONNX nodes, the models using it); an unknown profile is a clear error."""
from __future__ import annotations

import pytest

from onnx_dml_bench import perf
from onnx_dml_bench.errors import PlanError
from onnx_dml_bench.plan import select_noted


def test_networks_cases_are_named_by_their_census_layer():
    cases = perf.lens_cases(select_noted("networks", ["space_to_depth1"]), distinct=True)
    assert cases
    for pc in cases:
        src = pc.case.source
        assert pc.name.startswith(f"{src['kinds'][0]} ") and f"{len(src['models'])} models" in pc.name


def test_limits_is_a_profile_of_the_lens():
    assert perf.lens_cases(select_noted("limits", ["depth_to_space1"]), distinct=True)


def test_an_unknown_profile_is_named():
    with pytest.raises(PlanError, match="nosuch"):
        select_noted("nosuch")
