"""The pooling family (``ops/_pool_family.py``): a member is what it declares. A seventh operator,
DML_LP_POOLING1 / ONNX LpPool (p = 1 or 2), declared here in this file alone — its descriptor, its
struct, its hooks (ONNX op, global op, the reduction), its NumPy reference and its sweep over the
family's geometry table — builds its graphs through the family's modules and runs end to end on
the CPU EP through the normal runner, registered for the test only. And the family refuses an
ONNX op no member declares."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import onnx
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import case_from_dict
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _pool_family as FAM
from onnx_dml_bench.ops import _pool_deviations as PD
from onnx_dml_bench.ops import _pool_family as PF
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops._struct import DirectmlH, Input, Output, Uint
from onnx_dml_bench.ops._sweep import check_profile, params, rotate, table
from onnx_dml_bench.ops.base import Descriptor, DescriptorError, OutputSpec, schema_allows, schema_has_attr

ort = pytest.importorskip("onnxruntime")


@dataclass(frozen=True)
class LpPooling1Desc(Descriptor):
    InputSizes: tuple[int, ...]
    DataType: str
    DimensionCount: int
    Strides: tuple[int, ...]
    WindowSize: tuple[int, ...]
    StartPadding: tuple[int, ...]
    EndPadding: tuple[int, ...]
    Dilations: tuple[int, ...]
    P: int = 2
    FeatureLevel: str = "6.2"


class LpPooling1(FAM.PoolingOperator):
    """DML_LP_POOLING1: per window (sum of |x|^P)^(1/P), padding as zeros."""
    key = "lp_pooling1"
    dml_name = "DML_LP_POOLING1_OPERATOR_DESC"
    dml_type = "DML_OPERATOR_LP_POOLING1"
    directml_h = DirectmlH("""
        const DML_TENSOR_DESC* InputTensor;
        const DML_TENSOR_DESC* OutputTensor;
        UINT DimensionCount;
        const UINT* Strides;
        const UINT* WindowSize;
        const UINT* StartPadding;
        const UINT* EndPadding;
        const UINT* Dilations;
        UINT P;""", {"DML_OPERATOR_TYPE": {"DML_OPERATOR_LP_POOLING1": 165}})
    short = "lp1"
    order = 25
    onnx_ops = ("LpPool",)
    onnx_op = "LpPool"
    global_op = "GlobalLpPool"
    forms = ("pool", "global", "pad")
    empty_window = "no element to take the norm of"
    exactness = "within 4 ULP"
    Desc = LpPooling1Desc
    types_by_level = {"6.2": ("FLOAT32", "FLOAT16")}
    default_opset = 18
    opsets = (18, 22)
    variant_keys = {"ceil_mode": (0, 1), "auto_pad": P.AUTO_PAD, "pads": None, "form": forms}

    # -- the family's hooks
    def onnx_reduce(self, x, a, ax, want_indices=False):
        return {"Y": lp_windows(x, ax, a.attr("p", 2))}

    def node_attrs(self, case):
        return {"p": case.desc.P}

    def global_attrs(self, case):
        return {"p": case.desc.P}

    # -- struct and ONNX
    def validate(self, desc):
        P.validate(desc, self.types_by_level)
        if desc.P < 1:
            raise DescriptorError("P", f"must be >= 1, got {desc.P}")
        if not P.window_has_real_element(desc):
            raise DescriptorError("StartPadding", "a window lies entirely in padding")

    def layout(self, desc):
        return [Input("InputTensor", "X", desc.InputSizes, desc.DataType),
                Output("OutputTensor", "Y", self.output_shape(desc), desc.DataType),
                *P.window_fields(desc), Uint("P", desc.P)]

    def expressible(self, case):
        d, o = case.desc, case.opset
        why = FAM.F.expressible(case) or schema_allows("LpPool", o, d.DataType)
        if why:
            return why
        if any(x != 1 for x in d.Dilations) and not schema_has_attr("LpPool", o, "dilations"):
            return f"LpPool has no dilations before opset 18 (opset {o})"
        return None

    # -- reference and comparison
    def reference(self, case, inputs):
        return {"Y": lp_windows(inputs["X"], P.windows(case.desc), case.desc.P)}

    def compare_specs(self, case):
        return {"Y": OutputSpec("ulp", ulp=4)}

    def families(self, dml_type):
        return ("random", "small")

    def deviations(self):
        """What ONNX Runtime's CPU EP and onnx.reference do with every member's ONNX text
        (``_pool_deviations.shared``): the SAME pads from the undilated kernel among them."""
        return PD.shared(self, "lppool", None, "LpPool takes its windows from negative pads")

    # -- sweep: the family's geometry table, p = 1 and 2, float32 (ONNX Runtime's CPU EP has float only)
    def sweep(self, profile):
        check_profile(profile)
        cases = []
        for gi, (d0, variant) in enumerate(self.geometries(profile)):
            for p in (1, 2):
                d = d0.replace(DataType="FLOAT32", P=p)
                if P.window_has_real_element(d):
                    cases.append(self.make_case(d, variant, rotate(self.families("FLOAT32"), gi + p, 1)[0]))
        return cases

    def label(self, desc, variant):
        return PF.label(desc, variant, (f"p{desc.P}",))


def lp_windows(x: np.ndarray, wins, p: int) -> np.ndarray:
    """(sum of |x|^p)^(1/p) of every window, pads as zeros: the window walk's sums of |x|^p in
    float64, the root, rounded once to x's type."""
    powered = np.abs(x.astype(np.float64)) ** p
    sums = P.window_mean(powered, wins, [np.ones(w.out) for w in wins], np.float64)
    return (sums ** (1.0 / p)).astype(x.dtype)


LP = LpPooling1()


@pytest.fixture
def registered(monkeypatch):
    """The seventh operator in the registry for the test only."""
    monkeypatch.setitem(registry.OPERATORS, LP.key, LP)
    monkeypatch.setitem(registry.ALIASES, LP.short, LP.key)
    monkeypatch.setitem(registry.ALIASES, LP.dml_name, LP.key)
    return LP


def test_its_graphs_are_built_by_the_family(registered):
    cases = LP.sweep("default")
    rows = FAM.rows_of(LP.key, "default")
    assert rows and all(r.of == FAM.EVERY for r in rows)
    assert {c.desc.P for c in cases} == {1, 2} and all(c.id.startswith("lp1-") for c in cases)
    for c in cases:
        LP.validate(c.desc)
        LP.check_variant(c)
        assert LP.expressible(c) is None
        model = LP.to_onnx(c)
        onnx.checker.check_model(model, full_check=True)
        node, = model.graph.node
        assert node.op_type == "LpPool" and {a.name: a.i for a in node.attribute}["p"] == c.desc.P
    whole = cases[0].desc.replace(WindowSize=cases[0].desc.InputSizes[2:], Strides=(1, 1))
    glob = LP.make_case(whole, {"form": "global"})
    assert [n.op_type for n in LP.to_onnx(glob).graph.node] == ["GlobalLpPool"]
    pad = LP.make_case(cases[0].desc.replace(StartPadding=(1, 1), EndPadding=(1, 1)), {"form": "pad"})
    pad_node, lp_node = LP.to_onnx(pad).graph.node
    assert (pad_node.op_type, lp_node.op_type) == ("Pad", "LpPool")
    assert registry.get("lp1") is LP
    written = {"op": "lp_pooling1", "descriptor": cases[0].desc.to_dict(), "onnx": dict(cases[0].v),
               "opset": cases[0].opset, "inputs": {"family": cases[0].family, "seed": cases[0].seed}}
    assert case_from_dict(written).id == cases[0].id


def test_it_runs_end_to_end_on_the_cpu_ep(registered):
    cases = LP.sweep("default")
    cases += [LP.make_case(cases[0].desc.replace(WindowSize=cases[0].desc.InputSizes[2:], Strides=(1, 1)),
                           {"form": "global"})]
    recs = run_cases(cases, resolve("cpu"), RunConfig(jobs=1, batch_size=64))
    assert len(recs) == len(cases) and {r.case_id for r in recs} == {c.id for c in cases}
    assert {r.op for r in recs} == {"lp_pooling1"}
    # every answer is right, but where ONNX Runtime computes SAME pads from the undilated kernel, as
    # it does for every member (a deviation the family declares for each): those are known
    known = "known-deviation:ort-lppool-same-pads-ignore-dilation"
    wrong = {r.case_id: r for r in recs if r.verdict != "PASS"}
    assert sum(r.verdict == "PASS" for r in recs) >= len(cases) - 2 > 30
    assert wrong and all(r.verdict == "FAIL" and known in r.labels for r in wrong.values()), \
        [(r.case_id, r.verdict, r.reason, r.labels) for r in wrong.values()]
    by_id = {c.id: c for c in cases}
    assert all(by_id[i].v.get("auto_pad", "").startswith("SAME") and max(by_id[i].desc.Dilations) > 1 for i in wrong)


def test_it_keeps_the_descriptor_contract_of_every_operator(registered):
    """The registry-driven descriptor tests (tests/contract/test_descriptors.py), on it: all but the
    page's data types (its sweep is float32 only: ONNX Runtime's CPU EP has no float16 LpPool)."""
    import test_descriptors as T
    tests = [f for name, f in vars(T).items() if name.startswith("test_")
             and name != "test_every_data_type_of_the_page_is_swept_or_declared_not_expressible"]
    assert len(tests) == 10
    for test in tests:
        if "spelling" in test.__code__.co_varnames[:test.__code__.co_argcount]:
            test(LP.key, "f16")
        else:
            test(LP.key)


def test_its_reference_is_the_norm_of_each_window():
    d = LpPooling1Desc(InputSizes=(1, 1, 2, 3), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1),
                       WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), P=2)
    x = np.array([[[[3, 4, 0], [0, 0, 12]]]], np.float32)      # windows {3, 4, 0, 0} and {4, 0, 0, 12}
    assert LP.reference(LP.make_case(d), {"X": x})["Y"].ravel().tolist() == [5.0, float(np.float32(np.sqrt(160)))]
    assert LP.reference(LP.make_case(d.replace(P=1)), {"X": -x})["Y"].ravel().tolist() == [7.0, 16.0]


def test_an_op_no_member_declares_is_refused():
    with pytest.raises(ValueError, match="'LpPool3' is not the ONNX op of a pooling operator"):
        O.member("LpPool3")
    a = O.Attrs("BogusPool", 18, kernel=(2, 2))
    for call in (lambda: O.axes(a, (4, 4)), lambda: O.check(a, (1, 1, 4, 4)), lambda: O.run(np.zeros((1, 1, 4, 4)), a)):
        with pytest.raises(ValueError, match="'BogusPool' is not the ONNX op of a pooling operator"):
            call()
    with pytest.raises(ValueError, match="already the pooling operator 'max_pooling2'"):
        type("Impostor", (FAM.PoolingOperator,), {"onnx_op": "MaxPool", "key": "impostor"})()


def test_each_member_reads_its_forms_from_its_declaration():
    mp, ap = registry.get("max_pooling2"), registry.get("average_pooling1")
    assert (mp.global_op, ap.global_op, LP.global_op) == ("GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool")
    assert "reduce_mean" in ap.forms and "reduce_mean" not in mp.forms
    case = mp.make_case(mp.sweep("smoke")[0].desc, {})
    bad = dataclasses.replace(case, variant=(("form", "reduce_mean"),))
    with pytest.raises(DescriptorError, match="reduce_mean is not a form of max_pooling2"):
        FAM.F.check(bad)
    assert mp.pad_value("FLOAT32") == -np.inf and mp.pad_value("INT8") == -128 and ap.pad_value("FLOAT16") == 0


def test_the_params_builder():
    t = table("a b", (1, "x"), (2, "y"))
    assert [(r.a, r["b"]) for r in t] == [(1, "x"), (2, "y")]
    grid = params().combine("a", (1, 2)).combine("b", "xy").expand("c", lambda r: range(r.a))
    assert [(r.a, r.b, r.c) for r in grid] == [(1, "x", 0), (1, "y", 0), (2, "x", 0), (2, "x", 1), (2, "y", 0),
                                               (2, "y", 1)]
    assert [r.a for r in grid.filter(lambda r: r.c)] == [2, 2] and len(t + t) == 4
    with pytest.raises(ValueError, match="already a parameter"):
        grid.combine("a", (3,))
    with pytest.raises(ValueError, match="a row of 1 values"):
        table("a b", (1,))


@pytest.mark.parametrize("key", ["max_pooling2", "average_pooling1"])
def test_a_judgement_computes_the_onnx_answer_once(key, monkeypatch):
    """The ONNX answer of a pooling graph is asked for twice by one judgement (the answer judged
    against, and the ONNX-vs-DML difference of the open points): it is computed once for the same
    input array, kept read-only (a reader writing into it fails instead of changing the other's),
    and made again for another input array or another case; a batch done leaves nothing."""
    from onnx_dml_bench.outcome import Outcome
    from onnx_dml_bench.verdict import judge
    op = registry.get(key)
    cases = [c for c in op.sweep("default") if c.family == "random" and c.opset >= 19 and c.v.get("form") is None][:4]
    assert cases
    runs = []
    real = O.run

    def counted(x, a, **kw):
        runs.append(x)
        return real(x, a, **kw)
    monkeypatch.setattr(O, "run", counted)
    for case in cases:
        x = case.inputs()
        runs.clear()
        want = real(x["X"], O.case_node(case)[1], want_indices=bool(op.indices(case.desc)))
        j = judge(case, x, Outcome(True, "done", None, {k: v.copy() for k, v in want.items()}), None, None,
                  ep_name="TestEP", ep_is_cpu=False, semantics="onnx")
        assert j.verdict == "PASS", (case.id, j.reason)
        assert len(runs) == 1, case.id
        y = op.expected(case, x)
        assert len(runs) == 1 and all(np.array_equal(y[k], want[k]) for k in want)
        with pytest.raises(ValueError, match="read-only"):
            y["Y"][...] = 0
        op.expected(case, {"X": x["X"].copy()})
        assert len(runs) == 2                                   # another input array: its own answer
        op.forget()
        assert not [k for k in vars(op) if k.endswith("_memo")]
