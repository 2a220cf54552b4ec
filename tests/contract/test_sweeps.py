"""Case sweeps of every registered operator: sizes per profile, determinism, every case valid, and
what the default profile must cover of each data type and input family. (What it must cover of one
operator's own features is in that operator's test file, tests/ops/test_<op>.py.)"""
from __future__ import annotations

import math

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.inputs import FAMILIES
from onnx_dml_bench.ops.base import DescriptorError

from conftest import PROFILES, sweep

OPS = list(registry.OPERATORS)


# ---- sizes and determinism -------------------------------------------------------------------


def test_smoke_is_about_20_cases_per_operator():
    """A quick profile: about 20 cases per operator, none above 40."""
    n = len(sweep("smoke"))
    assert 16 * len(OPS) <= n <= 26 * len(OPS), n
    assert all(len(sweep("smoke", k)) <= 40 for k in OPS)


def test_default_has_at_least_3000_cases():
    assert len(sweep("default")) >= 3000


@pytest.mark.parametrize("op_key", OPS)
def test_every_operator_in_every_profile(op_key):
    assert 0 < len(sweep("smoke", op_key)) < len(sweep("default", op_key))


@pytest.mark.parametrize("op_key", OPS)
def test_full_profile_is_a_superset_in_size(op_key):
    op = registry.OPERATORS[op_key]
    assert len(op.sweep("full")) >= len(sweep("default", op_key))


@pytest.mark.parametrize("profile", ["smoke", "default"])
@pytest.mark.parametrize("op_key", OPS)
def test_deterministic(profile, op_key):
    op = registry.OPERATORS[op_key]
    a, b = op.sweep(profile), op.sweep(profile)
    assert [c.id for c in a] == [c.id for c in b]
    assert [c.seed for c in a] == [c.seed for c in b]


def test_inputs_deterministic():
    for c in sweep("smoke")[::7]:
        x1, x2 = c.inputs(), c.inputs()
        for k in x1:
            assert x1[k].tobytes() == x2[k].tobytes(), c.id


def test_unknown_profile():
    with pytest.raises(ValueError, match="profile"):
        registry.OPERATORS["max_pooling2"].sweep("huge")


def test_smoke_keeps_every_data_type_of_default():
    for key in OPS:
        assert {c.dtype for c in sweep("smoke", key)} == {c.dtype for c in sweep("default", key)}, key


# ---- every case of every sweep validates -----------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", list(registry.OPERATORS))
def test_every_sweep_case_validates(profile, op_key):
    op = registry.OPERATORS[op_key]
    cases = sweep(profile, op_key)
    assert cases
    bad = []
    for c in cases:
        try:
            op.validate(c.desc)
            op.check_variant(c)
        except DescriptorError as e:
            bad.append(f"{c.id}: {e}")
    assert not bad, "\n".join(bad[:20])


# ---- coverage of the default profile ---------------------------------------------------------


@pytest.mark.parametrize("op_key", OPS)
def test_every_family_per_data_type(op_key):
    op = registry.OPERATORS[op_key]
    by_type: dict[str, set] = {}
    for c in sweep("default", op_key):
        by_type.setdefault(c.dtype, set()).add(c.family)
    missing = {dt: sorted(set(op.families(dt)) - fams) for dt, fams in by_type.items() if set(op.families(dt)) - fams}
    assert not missing, missing
    extra = {dt: sorted(fams - set(op.accepted_families(dt))) for dt, fams in by_type.items()
             if fams - set(op.accepted_families(dt))}
    assert not extra, extra


def test_families_per_type():
    from onnx_dml_bench.inputs import families_for
    assert set(families_for("FLOAT32")) == set(FAMILIES)
    assert set(families_for("INT8")) == {"random", "ties", "constant", "negative", "extremes"}
    assert set(families_for("UINT8")) == {"random", "ties", "constant", "extremes"}


def test_default_sizes_stay_small():
    """Default cases stay small enough for a fast CI (largest input and output per case)."""
    for c in sweep("default"):
        n_in = math.prod(c.desc.InputSizes)
        assert n_in <= 4096, c.id
