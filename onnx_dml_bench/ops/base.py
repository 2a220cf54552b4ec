"""What every DirectML operator module provides, and the pieces they share.

An operator module defines a frozen descriptor dataclass (fields named after directml.h) and an
:class:`Operator` subclass instance ``OP``, which declares its DirectML struct with
``Operator.layout`` (``ops/_struct.py``). Nothing here knows about execution providers.
"""
from __future__ import annotations

import dataclasses
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable

import numpy as np
import onnx
from onnx import helper

from ..cases import Case, make_variant, seed_for
from ..dtypes import DML_TO_NUMPY, DML_TO_ONNX, is_float
from ..inputs import EXTRA_FLOAT, families_for, fill
from ..record import Verdict
from . import _limits, _networks
# the descriptors and the checks their rules share, re-exported: the operators' contract is read here
from ._descriptor import (MAX_TENSOR_ELEMENTS, UINT_MAX, Descriptor, DescriptorError, check_bench_size,  # noqa: F401
                          check_input_sizes, check_type_at_level, check_uint)
from ._struct import DirectmlH, Field
from ._sweep import SIZED_PROFILES

#: the activation ``onnx-dml-bench perf`` times its default layers at (:meth:`Operator.perf_cases`): a
#: ResNet stem's, 1x64x224x224
PERF_SIZES = (1, 64, 224, 224)
#: the comparison's bytes per output element in the memory estimate (``Operator.memory_bytes``):
#: its masks (the agreement, the wrong elements) and slack; measured at most 11 on the sized
#: profiles' largest exact cases, with answers right and wrong (``benchmarks/memory_estimates.py``)
JUDGE_BYTES = 16


# --------------------------------------------------------------------------------------------
# Cases' ONNX side
# --------------------------------------------------------------------------------------------

@dataclass
class Fragment:
    """The nodes of one case inside a (possibly shared) graph: names carry the case's prefix."""
    inputs: list[onnx.ValueInfoProto]
    outputs: list[onnx.ValueInfoProto]
    nodes: list[onnx.NodeProto]
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    input_names: dict[str, str] = field(default_factory=dict)    # local name -> graph name
    output_names: dict[str, str] = field(default_factory=dict)   # local name -> graph name


def ir_version_for(opset: int) -> int:
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)], ignore_unknown=True)


def make_model(fragments: list[Fragment], opset: int, name: str = "onnx_dml_bench") -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes=[n for f in fragments for n in f.nodes],
        name=name,
        inputs=[i for f in fragments for i in f.inputs],
        outputs=[o for f in fragments for o in f.outputs],
        initializer=[t for f in fragments for t in f.initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onnx-dml-bench")
    model.ir_version = ir_version_for(opset)
    return model


def schema_allows(op_type: str, opset: int, dml_type: str, param: str = "T") -> str | None:
    """None if ``op_type`` at ``opset`` accepts ``dml_type`` for type parameter ``param``, else why not."""
    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return f"ONNX has no {op_type} at opset {opset}"
    onnx_name = helper.tensor_dtype_to_np_dtype(DML_TO_ONNX[dml_type]).name
    tname = {"float32": "float", "float64": "double"}.get(onnx_name, onnx_name)
    for tc in schema.type_constraints:
        if tc.type_param_str == param and f"tensor({tname})" not in tc.allowed_type_strs:
            return f"{op_type}-{schema.since_version} (opset {opset}) does not accept {tname}"
    return None


def schema_has_attr(op_type: str, opset: int, attr: str) -> bool:
    try:
        return attr in onnx.defs.get_schema(op_type, opset).attributes
    except onnx.defs.SchemaError:
        return False


def tensor_info(name: str, dml_type: str | int, shape) -> onnx.ValueInfoProto:
    elem = dml_type if isinstance(dml_type, int) else DML_TO_ONNX[dml_type]
    return helper.make_tensor_value_info(name, elem, list(shape))


# --------------------------------------------------------------------------------------------
# Comparison specification (what compare.py needs to know about each output)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OutputSpec:
    """How one output is compared. kind: 'exact' (bit for bit, NaN equals NaN), 'ulp' (float,
    within ``ulp`` units in the last place, measured on bit patterns), 'bound' (float, within the
    per-element error bound the operator derives from how the result is computed:
    ``Operator.error_bound``) or 'indices' (MaxPool indices: exact DML rule, plus a tie-aware
    validity check against ``values_of``)."""
    kind: str
    ulp: int = 0
    values_of: str | None = None


@dataclass(frozen=True)
class NotExpressible:
    """A DirectML capability that no ONNX graph can request."""
    op: str
    capability: str
    reason: str
    data_type: str | None = None
    feature_level: str | None = None


# --------------------------------------------------------------------------------------------
# Admission: is a case valid and runnable?
# --------------------------------------------------------------------------------------------

@dataclass
class Admission:
    """What :meth:`Operator.admit` says of a case. Admitted: ``verdict`` is None, ``inputs`` holds
    the case's input arrays (when the data steps ran) and ``built`` what the caller's ``build``
    step made. Refused: the ``verdict`` and ``reason`` the case's record gets, the ``step`` that
    refused it (``descriptor``, ``size``, ``expressible``, ``supported``, ``inputs``, ``data``)
    and that step's own message (``detail``: the reason without the runner's words around it)."""
    verdict: str | None = None
    reason: str = ""
    step: str = ""
    detail: str = ""
    inputs: dict[str, np.ndarray] | None = None
    built: Any = None

    @property
    def ok(self) -> bool:
        return self.verdict is None


def _refused(verdict: Verdict, step: str, reason: str, detail: str) -> Admission:
    return Admission(verdict.value, reason, step, detail)


# --------------------------------------------------------------------------------------------
# Operator
# --------------------------------------------------------------------------------------------

#: :attr:`Operator.exactness` of operators whose outputs are compared bit for bit
EXACT = "bit for bit"

class Operator:
    """One DirectML operator: a subclass declares the class attributes and fills the methods, facet
    by facet (the facets below, each naming what it requires; everything else has a default):
    the DirectML struct, the ONNX graph, the reference and the comparison, open points and known
    deviations, the sweep and the sized profiles, the judge's power. Every hook another module
    asks of an operator is declared here; none reads an operator module's globals."""

    # -- the DirectML struct -----------------------------------------------------------------------
    # required: key, dml_name, dml_type, directml_h, short, Desc, types_by_level, validate, output_shape, layout
    key: ClassVar[str]                   # registry name, e.g. "max_pooling2"
    dml_name: ClassVar[str]              # e.g. "DML_MAX_POOLING2_OPERATOR_DESC"
    dml_type: ClassVar[str]              # its DML_OPERATOR_TYPE, e.g. "DML_OPERATOR_MAX_POOLING2"
    #: what directml.h says of it: its struct's members as the header declares them, and the numbers
    #: of its DML_OPERATOR_TYPE and of the enum constants its struct uses (ops/_struct.py)
    directml_h: ClassVar[DirectmlH]
    short: ClassVar[str]                 # prefix of case ids, e.g. "mp2"
    Desc: ClassVar[type]
    #: the data types of its tensors per DirectML feature level (cumulative tables of its page: level
    #: -> types from that level on); ``validate`` holds descriptors to it, the direct lane adds the
    #: (level, type) pairs no ONNX graph reaches
    types_by_level: ClassVar[dict[str, tuple[str, ...]]]
    #: the same for its index tensor's data type, where it has one (MaxPool's indices, RoiAlign's batch
    #: indices); empty: none
    index_types_by_level: ClassVar[dict[str, tuple[str, ...]]] = {}
    order: ClassVar[int] = 100           # position in listings (registry order)

    def validate(self, desc) -> None:
        raise NotImplementedError

    def output_shape(self, desc) -> tuple[int, ...]:
        raise NotImplementedError

    def layout(self, desc) -> list[Field]:
        """The operator's DirectML struct (``dml_name``) filled from ``desc``: its members in
        directml.h order, built with the constructors of ``ops/_struct.py`` (Input, Output, Uint,
        Uints, Float, Bool, Size2D, Enum, ...). The bundle's C++ and DxDispatch model, the direct
        harness's request and the report's struct text are all written from it."""
        raise NotImplementedError(f"operator {self.key!r} declares no DirectML struct (Operator.layout)")

    @property
    def dml_type_number(self) -> int:
        """``dml_type`` as directml.h numbers it (the operator's ``directml_h``)."""
        return self.directml_h.number("DML_OPERATOR_TYPE", self.dml_type)

    def input_shapes(self, desc) -> dict[str, tuple[int, ...]]:
        return {"X": tuple(desc.InputSizes)}

    def input_types(self, desc) -> dict[str, str]:
        """Each input array's data type, as the case holds it and its ONNX graph takes it (a DML type
        name; 'INT64' for ONNX's integer inputs, e.g. RoiAlign's batch_indices). The default: the
        descriptor's DataType for every input. A descriptor lane converts an integer input to its
        tensor's DML type where every value fits (``dml/direct/runner.py``)."""
        return {name: desc.DataType for name in self.input_shapes(desc)}

    def check_size(self, desc, limit: int | None = None) -> None:
        """Every input and the output of a valid descriptor within ``limit`` elements (default
        :data:`MAX_TENSOR_ELEMENTS`, the bench's limit; ``validate`` keeps to DirectML's rules and
        allocates nothing)."""
        for name, shape in self.input_shapes(desc).items():
            check_bench_size("InputTensor.Sizes" if name == "X" else f"{name}.Sizes", f"input {name}", shape, limit)
        check_bench_size("OutputTensor.Sizes", "OutputTensor", self.output_shape(desc), limit)

    def will_compare(self, case, inputs: dict[str, np.ndarray]) -> None:
        """``verdict.judge`` is about to compare an answer with this case's reference, and so to ask
        for its bound next: an operator whose bound repeats the reference's work may do both in one
        pass when the reference is asked for (kept in a ``*_memo`` of this case). The default: nothing."""

    def forget(self) -> None:
        """Let go of what the operator keeps of the last inputs it was asked about (its ``*_memo``
        attributes: window statistics, ONNX points and the like, each of one case): a worker calls
        it when a batch is done, so that it holds none of a finished batch's arrays."""
        for k in [k for k in vars(self) if k.endswith("_memo")]:
            delattr(self, k)

    def memory_bytes(self, desc) -> int:
        """About the most memory one case of ``desc`` takes in a worker, from its shapes alone: its
        inputs (the arrays, and a session's copy), the outputs of the EP under test, of the CPU EP
        and of the reference, and ``JUDGE_BYTES`` per output element for the comparison (its
        per-element masks; the rest of it is done a slice at a time). An estimate to batch and
        schedule cases by, and to refuse before anything is allocated a case the machine cannot
        hold, meant to be above what the case takes whether its answers pass or fail
        (``benchmarks/memory_estimates.py`` measures both); not a measurement. An operator whose
        reference or bound works on a wider copy of the input, or has more outputs, adds them."""
        item = np.dtype(DML_TO_NUMPY[desc.DataType]).itemsize
        n_in = sum(math.prod(s) for s in self.input_shapes(desc).values())
        n_out = math.prod(self.output_shape(desc))
        return 2 * n_in * item + n_out * (3 * item + JUDGE_BYTES)

    def retype(self, desc, level: str, dtype: str):
        """``desc`` at feature level ``level`` in data type ``dtype``, its other typed fields brought
        to what the level allows, or None where no such descriptor is valid (the direct lane's
        descriptor-only cases). The default: only DataType and FeatureLevel change."""
        d = desc.replace(DataType=dtype, FeatureLevel=level)
        try:
            self.validate(d)
        except DescriptorError:
            return None
        return d

    # -- ONNX: the graph a case builds -------------------------------------------------------------
    # required: onnx_ops, default_opset, opsets, expressible, build
    onnx_ops: ClassVar[tuple[str, ...]]  # ONNX op types a case's graph may use
    opsets: ClassVar[tuple[int, ...]]    # the schema versions that matter for this operator
    #: ONNX-side options and their allowed values (None: the operator checks the value itself)
    variant_keys: ClassVar[dict[str, tuple | None]] = {}
    output_names: ClassVar[tuple[str, ...]] = ("Y",)

    default_opset: ClassVar[int]

    def expressible(self, case) -> str | None:
        """None if the case can be built as an ONNX graph at ``case.opset``, else the reason."""
        raise NotImplementedError

    def build(self, case, prefix: str) -> Fragment:
        raise NotImplementedError

    def to_onnx(self, case) -> onnx.ModelProto:
        return make_model([self.build(case, "")], case.opset, name=case.id)

    def outputs(self, case) -> dict[str, tuple[tuple[int, ...], str]]:
        """Local output name -> (shape, DML data type or 'INT64' for ONNX indices)."""
        return {"Y": (self.output_shape(case.desc), case.desc.DataType)}

    def check_variant(self, case) -> None:
        """Reject unknown ONNX-side options or values (raises DescriptorError naming the option)."""
        for k, v in case.variant:
            if k not in self.variant_keys:
                raise DescriptorError(f"onnx.{k}", f"is not an ONNX-side option of {self.key} "
                                                  f"(options: {', '.join(self.variant_keys) or 'none'})")
            allowed = self.variant_keys[k]
            if allowed is not None and v not in allowed:
                raise DescriptorError(f"onnx.{k}", f"must be one of {list(allowed)}, got {v!r}")

    def normalize(self, case) -> Case:
        """The case with the descriptor fields that its ONNX-side options, or its other fields,
        decide brought in line with them (auto_pad SAME: the pads ONNX computes from the input;
        VALID: none; RoiAlign: the sizes its region count decides). For cases a
        tool makes or changes rather than a person writes: the fuzzer's samples, the shrinker's
        candidates; a case ``normalize`` cannot mend is returned as it is and ``check_variant``
        refuses it.

        ``case``: a case of this operator. Returns a case (``case`` itself when nothing changes).
        The default: ``case`` (the operator has no such options)."""
        return case

    def onnx_options(self, case) -> dict:
        """The case's ONNX-side options as its graph carries them (records and case files write
        these): ``case.v``, and what the operator derives for the graph where that says more (a
        pooling graph's pads). Read back, they give the same case. The default: ``case.v``."""
        return case.v

    def dml_image(self, case) -> str | None:
        """None: the case's graph is the direct image of its descriptor (it asks for what the
        descriptor asks DirectML), or the operator does not tell; else why not (the descriptor
        is then the nearest one, which a descriptor lane runs). The default: None."""
        return None

    def fill_descriptor(self, desc: dict, onnx_opts: dict) -> dict:
        """A case file's descriptor (a mapping) with the fields its ONNX-side options decide filled
        in where they are left out (a pooling graph's pads give the paddings). The default:
        ``desc`` as given."""
        return desc

    def canonical(self, case) -> Case:
        """The one form of a case that can be written in two ways (e.g. ONNX pads that the
        descriptor gives anyway): equal cases get equal ids. The default: ``case``."""
        return case

    def at_opset(self, case, opset: int) -> Case:
        """``case`` at another opset (``--opset all``): the same ONNX-side options, the descriptor
        they map to at that opset, in its one form. The default: only the opset changes."""
        return dataclasses.replace(case, opset=opset)

    def not_expressible(self) -> list[NotExpressible]:
        return []

    # -- the reference and the comparison ----------------------------------------------------------
    # required: reference
    #: whether the operator computes (compares, adds, multiplies) its float values, or only moves them:
    #: Direct3D's and WGSL's flush of float32 denormals applies to arithmetic, never to loads, stores and
    #: moves, so a data-movement operator's flushed answer is wrong on every lane
    arithmetic: ClassVar[bool] = True
    #: how a PASS agrees with the reference on its outputs, in the report's PASS legend: "bit for bit",
    #: or the bound its outputs are compared within
    exactness: ClassVar[str] = EXACT
    #: how a fixture states this operator's per-element error bound (comparison kind 'bound'); None:
    #: the bound of a window's average (AveragePool's)
    bound_text: ClassVar[str | None] = None

    def reference(self, case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def make_inputs(self, case) -> dict[str, np.ndarray]:
        """Seeded inputs of the case's family; the default fills the one input X."""
        d = case.desc
        return {"X": fill(d.InputSizes, d.DataType, case.family, case.seed, "X")}

    def input_problem(self, case, inputs: dict[str, np.ndarray]) -> str | None:
        """Why ``inputs`` break a precondition the operator's page puts on tensor *data* (not on
        the descriptor: ``validate`` checks that), or None. A case file's explicit values and the
        shrinker's candidates are checked with it: outputs of invalid data prove nothing."""
        return None

    def expected(self, case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """What the case's ONNX graph must output per the ONNX specification of its opset. The
        default: the DirectML reference, for operators whose every graph is the direct image of
        its descriptor (nothing ONNX-only in the graph)."""
        return self.reference(case, inputs)

    def compare_specs(self, case) -> dict[str, OutputSpec]:
        return {"Y": OutputSpec("exact")}

    def error_bound(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, Any]:
        """For outputs compared with kind 'bound': the largest admissible |got - ref| per element of
        a correct implementation, whichever reading of an open point it takes (what a fixture
        states); an array, or a pair (below, above) for ``got - ref`` in [-below, above]."""
        return {}

    def reference_bound(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, Any]:
        """The bound of the reading the reference itself takes (``verdict.judge`` compares every
        side with it first; the other readings come with their own bounds in ``alternatives``).
        The default: :meth:`error_bound`."""
        return self.error_bound(case, inputs, ref)

    def reference_bound_for(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray],
                            got: dict[str, np.ndarray]) -> dict[str, Any]:
        """:meth:`reference_bound` as the comparison of the answer ``got`` reads it: a bound that
        gives ``compare.compare_output`` the same statistics for ``got`` (an operator whose bound
        is costly at every position computes it where it can change one:
        ``compare.refined_bound``). The default: the whole bound."""
        return self.reference_bound(case, inputs, ref)

    def tie_valid(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray],
                  got: np.ndarray) -> np.ndarray | None:
        """For an 'indices' output: per position, does the index ``got`` point at an element equal
        to the reference's answer inside that position's window? A True where the index differs
        is a tie resolved in another order ('tie-order'), not a wrong index. None: the operator
        has no ties to tell apart."""
        return None

    # -- open points, rules and known deviations ---------------------------------------------------
    #: open points (and rules) this operator's cases can touch: key -> what is open and what is allowed
    open_point_texts: ClassVar[dict[str, str]] = {}
    #: which documents leave each open point open (or state the rule), a subset of :data:`DOCUMENTS`;
    #: a key not listed: the DirectML pages and the ONNX text (both say nothing)
    open_point_documents: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: the outputs each open point or rule concerns; a key not listed: every output
    open_point_outputs: ClassVar[dict[str, tuple[str, ...]]] = {}

    def open_points(self, case, inputs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """Which open points of the documentation this case's data touches: points where the
        documents allow more than one answer (``alternatives`` gives the others)."""
        return ()

    def onnx_open_points(self, case, inputs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """Open points of the ONNX text alone: what the case's ONNX graph leaves open where the
        DirectML page decides it (RoiAlign's mode="max" on the weighted corners or on the bilinear
        samples). ``verdict.judge`` adds them to :meth:`open_points` only where it judges the
        graph (semantics "onnx"): a lane that runs the descriptor itself is held to the page. The
        default: none."""
        return ()

    def precision_points(self, case, inputs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """Open points about how precisely an answer is computed (the width of a sum), whose every
        reading lies inside :meth:`error_bound` around the reference: the readings differ in how
        near they come, not in what they answer, so a fixture needs no policy for them. Judged like
        the others (``alternatives`` gives the other readings, each with its own bound)."""
        return ()

    def rules(self, case, inputs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """The rules the case's graph touches: points where a document's text is terse or
        contradicts itself, and the bench holds every implementation to one reading (the one the
        implementations and the document's own tests agree on). One allowed answer: no
        alternatives; the record labels them ``rule:<key>``."""
        return ()

    def point_documents(self, key: str) -> tuple[str, ...]:
        """The documents that leave open point ``key`` open (or state rule ``key``)."""
        return self.open_point_documents.get(key, DOCUMENTS)

    def point_concerns(self, key: str, stats) -> bool:
        """Does open point (or rule) ``key`` concern the failure of one output (``stats``: its
        ``record.OutputStats``)? The default: the output is one ``key`` concerns; and an output of
        another shape (or type, or none) only where ``key`` is a point whose readings differ in
        shape (``SHAPE_POINTS``): a wrong shape is outside what a point of values leaves open."""
        if {"shape", "dtype", "missing"} & set(stats.labels) and not (
                key in SHAPE_POINTS or key.startswith("onnx-vs-dml:")):
            return False
        outs = self.point_outputs(key)
        return outs is None or stats.output in outs

    def point_outputs(self, key: str) -> tuple[str, ...] | None:
        """The outputs open point (or rule) ``key`` concerns; None: every output. A key
        ``<point>:<output>`` (``onnx-vs-dml:Y``) concerns that output."""
        if key not in self.open_point_outputs and ":" in key:
            return (key.split(":", 1)[1],)
        return self.open_point_outputs.get(key)

    def alternatives(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray],
                     points: list[str]) -> Iterable["Alternative"]:
        """The other answers the documents allow where the case touches open points ``points``
        (the reference is one allowed answer; these are the rest). A side that matches one of
        them agrees with the documents; the record names which one it took. A list, or an iterable
        that computes each one as it is reached (a judge stops at the first that matches)."""
        return []

    def diagnose(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], got: dict[str, np.ndarray],
                 points: list[str]) -> dict[str, list[str]]:
        """Per output, labels that name a known wrong way of computing it (``compare.LABEL_TEXT``),
        for an answer outside every allowed one: e.g. ``stalled-accumulator``. Labels only: a
        verdict never changes."""
        return {}

    def deviations(self) -> list["Deviation"]:
        """Known deviations of ONNX Runtime's CPU EP and of onnx.reference from the ONNX
        specification on this operator's cases. tests/contract/test_reference_vs_ort.py skips
        exactly the cases they match, the operator's test file (tests/ops/) shows each one on an
        explicit configuration; ``verdict.judge`` labels a failing CPU EP side with those of ONNX
        Runtime that match (``known-deviation:<key>``)."""
        return []

    def deviation(self, key: str, who: str, kind: str, when: Callable[[Case, dict], bool],
                  summary: str, refuses: bool = False, refusal: str = "") -> "Deviation":
        """A deviation of this operator: its predicate is ``when`` on this operator's cases and
        False on every other case. ``refusal``: for a deviation that refuses (a 'limitation', or a
        'bug' with ``refuses``), a regular expression the refusal's text must match for the
        deviation to explain it."""
        op_key = self.key
        return Deviation(key, who, kind, summary, lambda case, inputs: case.op == op_key and bool(when(case, inputs)),
                         refuses, refusal)

    # -- the sweep ---------------------------------------------------------------------------------
    # required: sweep

    def sweep(self, profile: str) -> list:
        raise NotImplementedError

    def families(self, dml_type: str) -> tuple[str, ...]:
        """The input families a sweep rotates through for ``dml_type``."""
        return families_for(dml_type)

    def accepted_families(self, dml_type: str) -> tuple[str, ...]:
        """Every family a case of ``dml_type`` may name (the rotation's and the extra ones)."""
        return self.families(dml_type) + (EXTRA_FLOAT if is_float(dml_type) else ())

    def make_case(self, desc, variant: dict | None = None, family: str = "random", opset: int | None = None,
                  seed_offset: int = 0):
        """A sweep case: seeded from what defines it, so its id is the same on every machine."""
        var = make_variant(**(variant or {}))
        c = self.canonical(Case(self, desc, opset or self.default_opset, var, family, 0))
        return dataclasses.replace(c, seed=case_seed(self.key, c.desc, c.variant, family) + seed_offset)

    def label(self, desc, variant: dict) -> str:
        """A short human-readable summary of a descriptor for case ids and tables."""
        return ""

    def describe(self, case) -> str:
        """A compact one-line geometry of a case for logs and shrink summaries, e.g.
        ``2x3x9x9 k3 s1 d2 p1111 OutputIndicesDataType=UINT32 ceil_mode=1``.

        ``case``: a case of this operator. The default: the input sizes and the ONNX-side options
        that are set (:func:`describe_case`); an operator puts its own descriptor fields between
        them."""
        return describe_case(case)

    def curated(self) -> list["Curated"]:
        """The cases of this operator committed as fixtures in models/ (see fixtures/curated.py)."""
        return []

    def shrink_candidates(self, case) -> list[Case]:
        """Smaller forms of ``case`` the reducer tries beside its generic steps (``triage/shrink.py``),
        each holding the same number of input elements in other shapes (its data is reshaped), e.g.
        a pooling axis of size 1 dropped. The default: none."""
        return []

    # -- the sized profiles (networks, limits) -----------------------------------------------------

    def sized_sweep(self, profile: str, max_elements: int | None = None) -> list:
        """The cases of a sized profile, every tensor within ``max_elements`` elements (default
        :data:`MAX_TENSOR_ELEMENTS`): ``networks`` (the census's layers this operator expresses,
        ``_networks``, from :meth:`from_export`) or ``limits`` (:meth:`limits`, ``_limits``)."""
        limit = MAX_TENSOR_ELEMENTS if max_elements is None else int(max_elements)
        if profile == "networks":
            return _networks.cases(self, limit)
        if profile == "limits":
            return _limits.keep(self, self.limits(), limit)
        raise ValueError(f"unknown sized profile {profile!r}; expected one of {', '.join(SIZED_PROFILES)}")

    def from_export(self, export) -> list[tuple[Any, dict]]:
        """Profile ``networks``: the descriptors (float32, at the census's batch) and ONNX-side
        options whose graph is what an exporter wrote for a census layer (``export``, a
        ``_census.Export``: its ``nodes``, ``inputs`` and ``opset``), where those nodes are one of
        this operator's ONNX forms; [] where they are not. The default: []."""
        return []

    def network_family(self, dml_type: str) -> str:
        """The input family of this operator's ``networks`` cases of ``dml_type``."""
        return "random"

    def batched(self, desc, factor: int):
        """``desc`` at ``factor`` times its batch (a ``networks`` case's serving batch)."""
        return desc.replace(InputSizes=(desc.InputSizes[0] * factor, *desc.InputSizes[1:]))

    def limits(self) -> list:
        """Profile ``limits``: this operator's cases at the boundaries where GPU implementations
        split or overflow work (``_limits``: counts around 2^16, more than 65,535 thread groups,
        windows of 2^8 to 2^20 elements, indices past 2^24 / 2^31 / 2^32, float16 long sums), each
        made with ``_limits.case`` (its source names the boundary), whatever their size:
        :meth:`sized_sweep` keeps those within the run's limit. The default: none."""
        return []

    def perf_cases(self) -> list[tuple[str, Case]]:
        """``onnx-dml-bench perf``'s default profile: (name, case) of the layers of this operator it
        times when no profile is named, at a ResNet-stem size (1x64x224x224 float32). The names are
        the keys that ``perf-compare`` matches across perf files: keep them. The default: none."""
        return []

    # -- the judge's power (onnx-dml-bench mutants) ------------------------------------------------

    def witnesses(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> list["Alternative"]:
        """Concrete answers of evaluations the reference's reading allows (summation orders,
        blockings, a reciprocal multiplied in): never used to judge, only by ``mutants`` to prove a
        passing mutant an allowed answer, element by element (each element the reference's or one
        of these answers' bits)."""
        return []

    def witnesses_for(self, case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray],
                      got: dict[str, np.ndarray]) -> list["Alternative"]:
        """:meth:`witnesses` for explaining the answer ``got``: an operator may evaluate only the
        elements where ``got`` differs from the reference and a witness could give it (elsewhere
        its witnesses may hold the reference's bits, which are allowed anyway). The default: every
        witness."""
        return self.witnesses(case, inputs, ref)

    def mutants(self) -> tuple:
        """The bug classes of this operator's GPU kernels, and its legitimate ways of computing the
        answer, that ``onnx-dml-bench mutants`` measures the judge with: ``ops._mutants.MutantClass``
        values, each with its source (an issue, a specification, a post-mortem), beside the generic
        classes every operator gets (``ops._mutants.GENERIC``). The default: none."""
        return ()

    # -- admission: the one check that a case is valid and runnable (not overridden) ---------------

    def admit(self, case, *, size: bool = True, expressible: bool = True,
              unsupported: Callable[[Case], str | None] | None = None, data: bool = True,
              build: Callable[[], Any] | None = None, max_elements: int | None = None) -> Admission:
        """Is ``case`` valid and runnable? The one admission check: its steps in order, the first
        that refuses decides (the reasons are those the case's record gets):

        1. ``validate`` and ``check_variant``: a DescriptorError gives ERROR "invalid descriptor: ...";
        2. ``size`` (default on): ``check_size``, the bench's own limit (``max_elements``, default
           :data:`MAX_TENSOR_ELEMENTS`): ERROR "not run: ...";
        3. ``expressible`` (default on): can an ONNX graph at the case's opset request it? If not,
           NOT_EXPRESSIBLE with the operator's reason (a lane that runs descriptors turns it off);
        4. ``unsupported``: a lane's own question, ``unsupported(case)`` -> why its device cannot
           run the case, or None: NOT_SUPPORTED with that answer;
        5. ``data`` (default on): :meth:`admit_data` with ``build``.

        Exceptions other than DescriptorError (an operator's bug) are not caught. Returns an
        :class:`Admission`."""
        try:
            self.validate(case.desc)
            self.check_variant(case)
        except DescriptorError as e:
            return _refused(Verdict.ERROR, "descriptor", f"invalid descriptor: {e}", str(e))
        if size:
            try:
                self.check_size(case.desc, max_elements)
            except DescriptorError as e:
                return _refused(Verdict.ERROR, "size", f"not run: {e}", str(e))
        if expressible:
            why = self.expressible(case)
            if why:
                return _refused(Verdict.NOT_EXPRESSIBLE, "expressible", why, why)
        if unsupported is not None:
            why = unsupported(case)
            if why:
                return _refused(Verdict.NOT_SUPPORTED, "supported", why, why)
        return self.admit_data(case, build) if data else Admission()

    def admit_data(self, case, build: Callable[[], Any] | None = None) -> Admission:
        """The data steps of :meth:`admit`, alone for a case whose descriptor is known to be
        admitted (the shrinker's candidates that change only values):

        - ``inputs``: the case's input arrays, then ``build()`` when given (what a runner makes of
          the case, e.g. its graph fragment; kept in ``Admission.built``); any exception gives
          ERROR "could not build the case: ..." ("the case's inputs" without ``build``);
        - ``data``: :meth:`input_problem` on those inputs: ERROR "invalid input data: ..."."""
        try:
            inputs = case.inputs()
            built = build() if build is not None else None
        except Exception as e:  # noqa: BLE001 - any failure to make the case is its record's reason
            what = "the case" if build is not None else "the case's inputs"
            return _refused(Verdict.ERROR, "inputs", f"could not build {what}: {e}", str(e))
        problem = self.input_problem(case, inputs)
        if problem:
            return _refused(Verdict.ERROR, "data", f"invalid input data: {problem}", problem)
        return Admission(inputs=inputs, built=built)

    # -- identity ----------------------------------------------------------------------------------

    def __reduce__(self):
        """Pickled by name: a worker process gets the module-level singleton, not a copy."""
        for name, value in vars(sys.modules[type(self).__module__]).items():
            if value is self:
                return name
        raise TypeError(f"operator {self.key!r} is not bound to a name in {type(self).__module__}")

    def __repr__(self) -> str:
        return f"<operator {self.key}>"


def compact(values) -> str:
    """A tuple of sizes as short text: ``3`` when all are equal, else ``3x2``; a scalar as it is."""
    if not isinstance(values, tuple):
        return str(values)
    return str(values[0]) if len(set(values)) == 1 else "x".join(map(str, values))


def describe_case(case, parts=()) -> str:
    """:meth:`Operator.describe`'s text: the input sizes, ``parts`` (the operator's fields), and
    the ONNX-side options that are set (neither 0 nor NOTSET)."""
    options = [f"{k}={v}" for k, v in case.variant if v not in (0, "NOTSET")]
    return " ".join(["x".join(map(str, case.desc.InputSizes)), *parts, *options])


def case_seed(op: str, desc, variant, family: str) -> int:
    """A sweep case's seed: from what defines it, so its id is the same on every machine."""
    return seed_for(op, desc.to_dict(), list(variant), family) & 0x7FFFFFFF


@dataclass(frozen=True)
class Alternative:
    """An allowed answer of an open point: its name (e.g. 'nan-ignored'), the outputs it gives,
    whether -0.0 and +0.0 count as equal under it, per output the non-finite values also allowed
    at each position (``compare.compare_output``'s ``nonfinite_ok``), the reading's own error
    bounds, and per output the positions where any value at all is allowed (a window the reading
    keeps that holds no input element)."""
    name: str
    outputs: dict
    zero_sign_free: bool = False
    nonfinite_ok: dict = field(default_factory=dict)
    #: per output compared with kind 'bound': this reading's own bound (absent: the operator's
    #: ``reference_bound`` on these outputs)
    bounds: dict = field(default_factory=dict)
    free: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Curated:
    """A case committed in models/, what it is for, and, for a documentation example, the
    page's literal output (the reference must reproduce it before anything is written)."""
    case: Case
    note: str
    literal: tuple | None = None


#: the open points and rules whose readings differ in an output's shape (the rest differ in values
#: only): ONNX's kept ceil_mode windows, AveragePool-11's floor formulas, VALID/SAME with ceil_mode
SHAPE_POINTS = frozenset({"ceil-last-window", "avgpool11-auto-pad-floor", "auto-pad-ceil-mode"})

#: the documents that bind an EP, as open points and rules name them
DML_PAGES = "the DirectML pages"
ONNX_TEXT = "the ONNX text"
DOCUMENTS = (DML_PAGES, ONNX_TEXT)

#: who departs, in a :class:`Deviation`
ORT_CPU = "onnxruntime CPU EP"
ONNX_REFERENCE = "onnx.reference"
DEVIATION_WHO = (ORT_CPU, ONNX_REFERENCE)
#: ``bug``: the implementation departs from the specification and from every answer the bench
#: allows; ``open point``: the documents say nothing (NaN, the sign of a zero maximum) and the
#: implementation takes another reading than the reference, one the bench allows; ``tolerance``:
#: the implementation's answer is far (many ULP) from the exact answer rounded once but inside the
#: bench's error bound; ``limitation``: the implementation cannot run the configuration at all.
#: Only a ``bug`` explains a wrong answer and only a ``limitation`` (or a bug declared ``refuses``)
#: a refusal: the others are answers the bench accepts, declared for the reader and for the test
#: suite's agreement checks, which compare with the reference alone.
DEVIATION_KINDS = ("bug", "open point", "tolerance", "limitation")


@dataclass(frozen=True)
class Deviation:
    """A known place where an implementation that is not ground truth (``who``: :data:`ORT_CPU` or
    :data:`ONNX_REFERENCE`) departs from the ONNX specification. ``applies(case, inputs)`` says
    whether a case (``inputs``: its arrays, ``case.inputs()``) is one where it shows; it needs
    nothing but the case, its inputs and the operator. Build them with
    :meth:`Operator.deviation`, whose predicates see only that operator's cases."""
    key: str
    who: str
    kind: str
    summary: str
    applies: Callable[[Case, dict], bool] = field(compare=False, repr=False)
    #: a 'bug' that can make the runtime refuse the case outright (a negative output size) rather
    #: than answer wrongly: it then names that refusal too (a 'limitation' always does)
    refuses: bool = False
    #: a regular expression the text of a refusal must match for this deviation to explain it (the
    #: deviation labels only what it describes: another refusal of the same case is not it)
    refusal: str = ""

    def explains_refusal(self, text: str) -> bool:
        """Does this deviation explain a refused session or run whose error text is ``text``?"""
        if not (self.kind == "limitation" or self.refuses):
            return False
        return not self.refusal or re.search(self.refusal, text or "", re.IGNORECASE | re.DOTALL) is not None

    def __post_init__(self):
        if self.who not in DEVIATION_WHO:
            raise ValueError(f"deviation {self.key!r}: who must be one of {DEVIATION_WHO}, got {self.who!r}")
        if self.kind not in DEVIATION_KINDS:
            raise ValueError(f"deviation {self.key!r}: kind must be one of {DEVIATION_KINDS}, got {self.kind!r}")


def signed_zeros(x: np.ndarray) -> bool:
    """Does float ``x`` hold both -0.0 and +0.0? (open point 'signed-zero' of the operators that
    take a maximum: the pages do not say which zero is the larger)"""
    if x.dtype.kind != "f":
        return False
    zeros = x[x == 0]
    return bool(zeros.size and np.signbit(zeros).any() and (~np.signbit(zeros)).any())
