"""Data types (``dtypes.py``): the ULP distance between floats of one type, checked on random values
(hypothesis, derandomized)."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench.dtypes import ulp_distance

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
