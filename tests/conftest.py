"""Shared helpers of the test suite: cached sweeps, ONNX Runtime CPU runs that merge many cases
into one model and one session, onnx.reference runs, comparison against the NumPy reference with
the bench's own comparison rules, the operators' declared deviations, and the installed
DirectML-under-Wine stack (skipping the test without it)."""
from __future__ import annotations

import functools
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_dml_bench import compare as C
from onnx_dml_bench import registry, verdict
from onnx_dml_bench.cases import Case
from onnx_dml_bench.dml import select
from onnx_dml_bench.dml.node import client
from onnx_dml_bench.dml.wine import stackinfo
from onnx_dml_bench.ops.base import Deviation, make_model

# test modules import helpers from their own folder and from others (test_struct_layout's operator
# declared in a test, test_bundle's shim): every test folder importable, whichever files are collected
sys.path[:0] = [str(d) for d in sorted(Path(__file__).parent.iterdir())
                if d.is_dir() and not d.name.startswith((".", "_")) and str(d) not in sys.path]

pytest_plugins = ("_hard_stop",)        # a hanging test ends its process (tests/_hard_stop.py)

try:
    import onnxruntime as ort
    ort.set_default_logger_severity(3)       # keep the opset-1 "only guarantees" warnings quiet
except ImportError:  # pragma: no cover - the test extra installs it
    ort = None

PROFILES = ("smoke", "default")

# Facts of ONNX Runtime releases that tests depend on, keyed by the installed version.
ORT_VERSION = tuple(int(p) for p in ort.__version__.split(".")[:2]) if ort is not None else (0, 0)
# 1.31 loads IR <= 13 / opset <= 25 and refuses newer models at load; 1.32 loads IR 14 / opset 28
# (SpaceToDepth-28 with mode=CRD) and expands a node without a CPU kernel (SpaceToDepth-28 in
# float16 and the 16/32/64-bit integer types) into its ONNX function body.
ORT_LOADS_OPSET_28 = ORT_VERSION >= (1, 32)
ORT_MAX_OPSET = 28 if ORT_LOADS_OPSET_28 else 25

# Numbers that every case-id and sweep test relies on.
FLT_MAX = float(np.finfo(np.float32).max)


# ----------------------------------------------------------------------------------------------
# Sweeps
# ----------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def sweep(profile: str, op_key: str | None = None) -> tuple[Case, ...]:
    """Every case of a profile (of one operator, or of all of them), computed once per process."""
    if op_key is not None:
        return tuple(registry.OPERATORS[op_key].sweep(profile))
    return tuple(c for key in registry.OPERATORS for c in sweep(profile, key))


def expressible(cases) -> list[Case]:
    return [c for c in cases if c.operator.expressible(c) is None]


@functools.lru_cache(maxsize=None)
def inputs_of(case: Case) -> dict[str, np.ndarray]:
    return case.inputs()


@functools.lru_cache(maxsize=None)
def reference_of(case: Case) -> dict[str, np.ndarray]:
    return case.operator.reference(case, inputs_of(case))


# ----------------------------------------------------------------------------------------------
# ONNX Runtime CPU
# ----------------------------------------------------------------------------------------------

def session_options():
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return so


def ort_session(model: onnx.ModelProto):
    return ort.InferenceSession(model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])


def ort_run_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort_session(model)
    return sess.run(None, feeds)


@dataclass
class Failure:
    """ONNX Runtime refused or failed the case alone (after splitting its group)."""
    error: str

    def __str__(self) -> str:
        return self.error


def ort_cpu_run(cases) -> dict[str, dict[str, np.ndarray] | Failure]:
    """Run many cases on ONNX Runtime's CPU EP: one merged model and one session per opset, as the
    bench's runner does; a group that fails is split in halves until each failure is one case's.
    Returns case id -> {local output name: array} or a Failure."""
    by_opset: dict[int, list[Case]] = {}
    for c in cases:
        by_opset.setdefault(c.opset, []).append(c)
    result: dict[str, dict | Failure] = {}
    for opset, group in by_opset.items():
        pending = [group]
        while pending:
            g = pending.pop()
            frags, feeds = [], {}
            for i, c in enumerate(g):
                f = c.operator.build(c, f"c{i}_")
                frags.append(f)
                for k, v in inputs_of(c).items():
                    feeds[f.input_names[k]] = v
            try:
                sess = ort_session(make_model(frags, opset))
                names = [n for f in frags for n in f.output_names.values()]
                vals = dict(zip(names, sess.run(names, feeds)))
            except Exception as e:  # noqa: BLE001 - the runtime's words are the record
                if len(g) == 1:
                    result[g[0].id] = Failure(str(e))
                else:
                    pending += [g[: len(g) // 2], g[len(g) // 2:]]
                continue
            for c, f in zip(g, frags):
                result[c.id] = {k: vals[v] for k, v in f.output_names.items()}
    return result


@functools.lru_cache(maxsize=None)
def ort_sweep_results(profile: str) -> dict:
    return ort_cpu_run(expressible(sweep(profile)))


# ----------------------------------------------------------------------------------------------
# onnx.reference
# ----------------------------------------------------------------------------------------------

def onnx_reference_run(case: Case) -> dict[str, np.ndarray] | Failure:
    from onnx.reference import ReferenceEvaluator
    op = case.operator
    names = list(op.outputs(case))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outs = ReferenceEvaluator(op.to_onnx(case)).run(names, inputs_of(case))
    except Exception as e:  # noqa: BLE001
        return Failure(f"{type(e).__name__}: {e}")
    return dict(zip(names, outs))


# ----------------------------------------------------------------------------------------------
# Comparison with the reference
# ----------------------------------------------------------------------------------------------

def mismatches(case: Case, got: dict[str, np.ndarray] | Failure) -> list[str]:
    """Why ``got`` (an implementation's outputs) does not match the reference under the bench's
    comparison specs; [] when it matches."""
    if isinstance(got, Failure):
        return [f"{case.id}: no result: {got.error[:300]}"]
    stats = verdict.compare_side(case, inputs_of(case), reference_of(case), got)
    return [f"{case.id}: {name}: {res.mismatches}/{res.total} differ {res.labels} {res.note} first={res.first[:3]}"
            for name, res in stats.items() if not res.match]


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaN equals NaN), dtype and shape included."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(C._same_float(a, b).all())
    return bool(np.array_equal(a, b))


# ----------------------------------------------------------------------------------------------
# The deviations: each operator declares its own (``Operator.deviations``)
# ----------------------------------------------------------------------------------------------


DEVIATIONS = [d for op in registry.OPERATORS.values() for d in op.deviations()]
DEV = {d.key: d for d in DEVIATIONS}


def applies(key: str, case: Case) -> bool:
    return DEV[key].applies(case, inputs_of(case))


def deviations_for(case: Case, who: str) -> list[Deviation]:
    return [d for d in DEVIATIONS if d.who == who and d.applies(case, inputs_of(case))]


def expected_of(case: Case) -> dict:
    """The ONNX answer of the case's graph (``Operator.expected``): what ONNX Runtime and
    onnx.reference implement. Where the graph is the direct image of the descriptor it is the
    DirectML reference too (tests/ops/test_onnx_pool.py checks that on the sweeps)."""
    return case.operator.expected(case, inputs_of(case))


def onnx_mismatches(case: Case, got) -> list[str]:
    """``mismatches`` against the ONNX answer of the case's graph."""
    if isinstance(got, Failure):
        return [f"{case.id}: no result: {got.error[:300]}"]
    stats = verdict.compare_side(case, inputs_of(case), expected_of(case), got)
    return [f"{case.id}: {name}: {res.mismatches}/{res.total} differ {res.labels} {res.note} first={res.first[:3]}"
            for name, res in stats.items() if not res.match]


# ----------------------------------------------------------------------------------------------
# The DirectML-under-Wine stack
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dml_stack():
    """The installed DirectML stack (skips the test without it, naming the command that installs
    it); the Node.js client started on it is shut down after the module."""
    info = select.find_stack()
    if info is None:
        pytest.skip("DirectML stack not installed in "
                    f"{stackinfo.default_cache_dir()}; install it with "
                    "`onnx-dml-bench setup dml`")
    yield info
    client.shutdown()


# ----------------------------------------------------------------------------------------------
# xdist groups under pytest 9
# ----------------------------------------------------------------------------------------------

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Keep ``--dist loadgroup`` working with pytest 9: pytest-xdist (3.8) tags grouped items by
    writing ``item._nodeid = "<id>@<group>"``, but pytest 9 reads the id from ``item._id`` (a
    NodeId), so the tag is lost and the "wine" group would run on two workers at once (the Wine
    tests then kill each other's wineserver). Carry the tag over to the id xdist reports."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:      # pytest < 9: item._nodeid is the id itself
        return
    for item in items:
        tagged = item.__dict__.get("_nodeid")
        if isinstance(tagged, str) and "@" in tagged and "@" not in item.nodeid:
            item._id = NodeId.parse(tagged)

