"""Data types (``dtypes.py``): the ULP distance between floats of one type, checked on random values
(hypothesis, derandomized); the feature levels."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench.dtypes import FEATURE_LEVELS, fl_at_least, ulp_distance

PROPS = settings(deadline=None, max_examples=60, derandomize=True, database=None)


@PROPS
@given(st.sampled_from([(np.float32, 32), (np.float16, 16), (np.float64, 64)]), st.data())
def test_ulp_distance_symmetric_and_zero_iff_equal(kind, draw_data):
    dt, width = kind
    floats = st.floats(allow_nan=False, width=width)
    a = np.array(draw_data.draw(st.lists(floats, min_size=1, max_size=8)), dtype=dt)
    b = np.array(draw_data.draw(st.lists(floats, min_size=len(a), max_size=len(a))), dtype=dt)
    d_ab, d_ba = ulp_distance(a, b), ulp_distance(b, a)
    assert d_ab.dtype == np.uint64
    assert np.array_equal(d_ab, d_ba)
    assert np.array_equal(d_ab == 0, a == b)               # numeric equality: -0.0 == +0.0
    bitwise = a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")
    nonzero = (a != 0) | (b != 0)
    assert np.array_equal((d_ab == 0)[nonzero], bitwise[nonzero])   # zero iff bitwise equal, zeros aside
    assert (ulp_distance(a, a) == 0).all()


@PROPS
@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_ulp_distance_of_neighbours_is_one(v):
    a = np.array([v], np.float32)
    with np.errstate(over="ignore"):
        up = np.nextafter(a, np.float32(np.inf))
    assume(np.isfinite(up).all())
    assert ulp_distance(a, up)[0] == 1 == ulp_distance(up, a)[0]
    # across zero: -tiny to +tiny is 2 ULP (-0.0 and +0.0 count as one point)
    t = np.array([np.finfo(np.float32).smallest_subnormal], np.float32)
    assert ulp_distance(-t, t)[0] == 2


def test_signed_zeros_are_zero_ulp_apart_but_not_bitwise_equal():
    """Documented in ordered_bits: -0.0 and +0.0 both map to 0. The 'exact' comparison (bitwise)
    still tells them apart."""
    from onnx_dml_bench import compare as C
    from onnx_dml_bench.ops.base import OutputSpec
    z = np.array([0.0], np.float32)
    assert ulp_distance(-z, z)[0] == 0
    assert not C.compare_output("Y", OutputSpec("exact"), -z, z).match
    assert C.compare_output("Y", OutputSpec("ulp", ulp=0), -z, z).match


def test_feature_levels_are_every_level_of_directml_h():
    """FEATURE_LEVELS names every DML_FEATURE_LEVEL the harness's header declares (directml.h's), in
    order, so that an operator introduced at 4.0 (ROI_ALIGN1) or 3.1 can say so."""
    abi = (Path(__file__).resolve().parents[1] / "onnx_dml_bench" / "dml" / "direct" / "dml_abi.h").read_text()
    declared = [(int(a), int(b), int(v, 16)) for a, b, v in re.findall(r"DML_FEATURE_LEVEL_(\d)_(\d) = (0x[0-9a-fA-F]+)", abi)]
    assert [f"{a}.{b}" for a, b, _ in declared] == list(FEATURE_LEVELS)
    assert [v for _, _, v in declared] == sorted(v for _, _, v in declared)
    assert fl_at_least("4.0", "3.1") and not fl_at_least("4.0", "4.1")
