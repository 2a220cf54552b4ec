"""The one verdict path: from a case, what each side gave and where its nodes ran, to the verdict,
attribution, statistics and labels of the case.

Every caller goes through :func:`judge`: the runner (execute.py), the performance lens (perf.py),
the repro script of the report and the fixture verifier (fixtures/verify.py). The pieces:

- :func:`failure` — a side that gave no outputs (model refused at load, session refused, a run
  that failed after the session was created, worker crash or hang, the bench's own machinery)
  becomes NOT_OFFLOADED / EP_REJECTED / EP_ERROR / CRASH / TIMEOUT / ERROR; a node that no EP of
  the session has a kernel for is a refusal ("no kernel on any EP"), never a node left to the CPU
  EP;
- :func:`placement` — the per-node assignment read back from ONNX Runtime, with the rule for
  nodes the EP renamed in its own rewrite; a node not on the EP under test is NOT_OFFLOADED;
- :func:`compare_side` — every output of one side against the reference (compare.py), with the
  operator's tie rule for indices;
- :func:`compare.attribute` — who disagrees with the reference;
- :func:`known_deviations` — where the CPU EP (as the second side, or under test) fails, the
  known deviations of ONNX Runtime's CPU EP its operator declares that match the case and what
  happened (a refusal's text), as labels ``known-deviation:<key>`` (evaluated on failures only;
  they never change a verdict). They label the CPU side (``CpuSide.labels``); the record too only
  where its verdict, attribution or finding rests on the CPU EP's answer;
- :func:`of_runs` and :func:`settle` — one verdict from several runs of a case: identical runs of
  one session (``--repeat``: FLAKY when their verdicts differ, the finding NONDETERMINISTIC when
  their outputs do), and a case that failed in a session shared with other cases run again alone
  (confirmed; or, when it passes alone and fails again shared, the finding BATCH_DEPENDENT).
"""
from __future__ import annotations

import dataclasses
import re
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from . import compare as C
from .ops.base import DEVIATION_KINDS, ORT_CPU
from .outcome import Outcome
from .record import FINDINGS, CpuSide, OutputStats, Placement, Runs, Verdict

FALLBACK_TEXT = "fallback to cpu ep has been explicitly disabled"
#: ONNX Runtime's words for a node that no EP of the session has a kernel for: the CPU EP's own
#: ("Failed to find kernel for MaxRoiPool(22)", "Could not find an implementation for ...") and a
#: node that no EP claimed ("Provider type for MaxRoiPool node with name 'X' is not set")
NO_KERNEL_PATTERNS = (
    re.compile(r"Failed to find kernel for (\w+\(\d+\))"),
    re.compile(r"Could not find an implementation for (\w+\(\d+\))"),
    re.compile(r"Provider type for (\w+) node with name '[^']*' is not set"),
)
#: how the reason of a refusal for a node without a kernel begins, and its label
NO_KERNEL = "no kernel on any EP"
NO_KERNEL_LABEL = "no-kernel"
NO_KERNEL_LABEL_TEXT = ("No EP of the session has a kernel for a node of the case: the EP under test left it to the "
                        "CPU EP, which has none either (or the EP itself says so). A refusal (EP_REJECTED), never a "
                        "node left to the CPU EP (NOT_OFFLOADED).")
#: key prefix, in an assignment, of a node the session created without a name (ONNX Runtime >= 1.32
#: expands a node that has no kernel into its ONNX function body, whose nodes have empty names)
UNNAMED = "<unnamed #"


def assignment_of(session) -> dict[str, str] | None:
    """Node name -> EP as ONNX Runtime recorded it (None when the build cannot tell); nodes
    without a name get a key of their own (``<unnamed #3 Reshape>``)."""
    try:
        out: dict[str, str] = {}
        for sg in session.get_provider_graph_assignment_info():
            for n in sg.get_nodes():
                out[n.name or f"{UNNAMED}{len(out)} {n.op_type}>"] = sg.ep_name
        return out
    except Exception:  # noqa: BLE001 - older builds: fallback-disabled sessions remain the proof
        return None


#: the start of an EP_ERROR's reason, before the EP's own words
RUN_FAILED = "the EP accepted the case (its session was created) and failed at run time: "


def no_kernel(text: str | None) -> str | None:
    """The node (``MaxRoiPool(22)``) an ONNX Runtime error says has no kernel, or None."""
    for pat in NO_KERNEL_PATTERNS:
        m = pat.search(text or "")
        if m:
            return m.group(1)
    return None


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def failure(out: Outcome, cpu: Outcome | None = None) -> tuple[str, str]:
    """(verdict, reason) of a side that gave no outputs. ``cpu``: the CPU EP's outcome on the same
    case, when it ran beside the EP under test: the evidence that tells a node left to the CPU EP
    (NOT_OFFLOADED) from a node no EP has a kernel for. ONNX Runtime refuses both with the same
    words ("assigned to the default CPU EP, but fallback ... disabled": it assigns every unclaimed
    node to the CPU EP); where the CPU EP's own session says it has no kernel for the node either,
    nobody can run it: EP_REJECTED "no kernel on any EP". A run that failed after the session was
    created (stage ``run``) is EP_ERROR, with the EP's status text; the worker dying or hanging is
    CRASH or TIMEOUT; any other stage (the bench's own machinery: a harness that could not read a
    request, an output that could not be written) is ERROR."""
    text = out.error or ""
    if out.stage == "crash":
        return "CRASH", text
    if out.stage == "timeout":
        return "TIMEOUT", text
    if out.stage in ("load", "session"):
        theirs = no_kernel(cpu.error) if cpu is not None and not cpu.ok and cpu.stage in ("load", "session") else None
        if FALLBACK_TEXT in text.lower():
            if theirs:
                return "EP_REJECTED", (f"{NO_KERNEL}: the EP under test left {theirs} to the CPU EP, which has no "
                                       f"kernel for it either (CPU EP: {_first_line(cpu.error)}): " + text)
            return "NOT_OFFLOADED", "a node would run on the CPU EP (session refused with CPU fallback disabled): " + text
        mine = no_kernel(text)
        if mine:
            return "EP_REJECTED", f"{NO_KERNEL}: {mine}: " + text
        return "EP_REJECTED", text
    if out.stage == "run":
        return "EP_ERROR", RUN_FAILED + text
    return "ERROR", text


def placement(node_names: list[str], assignment: dict[str, str] | None, ep_name: str, ep_is_cpu: bool,
              other_nodes: tuple[str, ...] | list[str] = ()) -> Placement:
    """Where the case's nodes ran. ``assignment``: node name -> EP as ONNX Runtime recorded it
    (None when the build cannot tell); ``other_nodes``: the names of the other cases' nodes in the
    same session.

    A node can be absent from the assignment because the session replaced it: an EP's own rewrite
    (e.g. WebGPU's NHWC layout renames it) or ONNX Runtime's expansion of a node without a kernel
    into its ONNX function body (>= 1.32; the body's nodes have no names). Such a node is placed
    on the EP under test iff everything the session holds ran there: every recorded node on that
    EP (in a session with CPU fallback disabled, or the CPU EP's own session, nothing can be
    elsewhere). What it became is recorded: the session's nodes that no graph node names."""
    if assignment is None:
        return placed(node_names, None, set(), [], ep_name, ep_is_cpu)
    known = set(node_names) | set(other_nodes)
    unmatched = [k for k in assignment if k not in known]
    return placed(node_names, assignment, set(assignment.values()), unmatched, ep_name, ep_is_cpu,
                  shared=bool(other_nodes))


def placed(node_names: list[str], assignment: Mapping[str, str] | None, eps: set[str], unmatched: list[str],
           ep_name: str, ep_is_cpu: bool, shared: bool = False) -> Placement:
    """:func:`placement` from what it reads of the session: ``assignment`` (at least the case's
    nodes and the ``unmatched`` names), ``eps`` (every EP the session's nodes went to),
    ``unmatched`` (the session's nodes that no node of the session's cases names, in the
    assignment's order) and whether other cases' nodes shared the session. A runner that shares
    one session among many cases reads those once."""
    proof = "session created with CPU fallback disabled" if not ep_is_cpu else "CPU EP under test"
    if assignment is None:
        return Placement(fallback_disabled=not ep_is_cpu, nodes=None, proof=proof)
    all_on_ep = eps <= {ep_name}
    how = "expanded into its ONNX function body" if any(k.startswith(UNNAMED) for k in unmatched) \
        else "rewritten by the EP"
    missing = f"{ep_name} ({how})" if all_on_ep else "unassigned"
    nodes = {n: assignment.get(n, missing) for n in node_names}
    became = None
    if any(n not in assignment for n in node_names):
        became = [f"{k.removeprefix(UNNAMED).rstrip('>') if k.startswith(UNNAMED) else k} on {assignment[k]}"
                  for k in unmatched]
    return Placement(fallback_disabled=not ep_is_cpu, nodes=nodes, became=became,
                     proof=proof + "; per-node EP assignment read from the session"
                     + ("; 'became' lists the session's unnamed or renamed nodes of the whole batch" if became and shared else ""))


# A side without outputs that a deviation can explain is one whose session or run refused the
# case (Verdict.REFUSED; a crash or a hang is not explained by one). A 'limitation' explains only
# refusals; a 'bug' declared with ``refuses`` explains one too (ONNX Runtime's SAME pads from the
# undilated window give a tiny input a negative output size: "Calculated output dimension is
# negative"), and only a refusal whose text matches what the deviation describes (``Deviation.refusal``)

#: the kinds of deviation that explain wrong outputs: a 'bug' (a 'limitation' explains a refusal only;
#: an 'open point' or a 'tolerance' is an answer the bench allows, never a failure)
WRONG_ANSWER_KINDS = tuple(k for k in DEVIATION_KINDS if k == "bug")


def known_deviations(case, inputs: dict, kinds: tuple[str, ...] = (), refusal: str | None = None) -> list[str]:
    """``known-deviation:<key>`` for each known deviation of ONNX Runtime's CPU EP that the case's
    operator declares (``Operator.deviations``) and that matches the case: of these ``kinds`` (wrong
    answers), or, with ``refusal`` (the text of a refused session or run), those that explain that
    refusal (the limitations and the bugs declared ``refuses`` whose ``Deviation.refusal`` matches
    the text). A predicate that raises counts as no match: it never breaks a verdict."""
    labels = []
    try:
        devs = [d for d in case.operator.deviations() if d.who == ORT_CPU and
                (d.kind in kinds or (refusal is not None and d.explains_refusal(refusal)))]
    except Exception:  # noqa: BLE001 - labels only
        return []
    for d in devs:
        try:
            if d.applies(case, inputs):
                labels.append(f"known-deviation:{d.key}")
        except Exception:  # noqa: BLE001 - a predicate's failure is no match
            continue
    return labels


def off_ep(where: Placement | None, ep_name: str) -> dict[str, str]:
    """The nodes that did not run on the EP under test."""
    if where is None or where.nodes is None:
        return {}
    return {n: e for n, e in where.nodes.items() if not e.startswith(ep_name)}


@dataclass
class Judgement:
    verdict: str
    attribution: str | None = None
    reason: str = ""
    labels: list[str] = field(default_factory=list)
    open_points: list[str] = field(default_factory=list)
    outputs: dict[str, OutputStats] = field(default_factory=dict)
    cpu: CpuSide | None = None
    reference_ms: float | None = None
    finding: str | None = None
    runs: Runs | None = None
    #: where the verdict's statistics come from: the shared session ("batch") or the runs alone
    source: str = "batch"


def _finding(ep_ok: bool, cpu_ok: bool | None, same: bool) -> str | None:
    """The EP-vs-CPU finding of a case the EP passed: every difference is one."""
    if not ep_ok or cpu_ok is None:
        return None
    if cpu_ok is False:
        return "CPU_WRONG"
    return None if same else "EP_CPU_DIFFER"


def _finding_text(finding: str, cpu: CpuSide | None, ep_alt: str | None, cpu_alt: str | None) -> str:
    if finding == "CPU_WRONG":
        return f"finding CPU_WRONG: the CPU EP differs from every allowed answer ({cpu.reason})"
    took = ""
    if ep_alt or cpu_alt:
        took = f" (EP: {ep_alt or 'the reference'}; CPU EP: {cpu_alt or 'the reference'})"
    return f"finding EP_CPU_DIFFER: the EP and the CPU EP differ bit for bit, each within what is allowed{took}"


def compare_side(case, inputs: dict, ref: dict, got: dict | None,
                 others: dict[str, dict] | None = None, *, zero_sign_free: bool = False,
                 nonfinite_ok: dict | None = None, bounds: dict | None = None,
                 free: dict | None = None) -> dict[str, OutputStats]:
    """Every output of one side against the reference ``ref``. ``others``: side name -> that
    side's outputs, shown beside each first mismatch of the same output. ``bounds``: per output
    compared with kind 'bound', the bound of the reading ``ref`` stands for (default: the
    operator's ``reference_bound``). ``free``: per output, the positions where any answer is
    allowed (a reading that keeps windows holding no input element)."""
    op = case.operator
    if not bounds and not _reads_bounds(op, case, ref, got):
        bounds = {}
    elif not bounds:
        bounds = _bounds(op, case, inputs, ref, free, got)
    res = {}
    for name, spec in op.compare_specs(case).items():
        mine = None if got is None else got.get(name)
        tie = None
        if spec.kind == "indices" and mine is not None:
            try:
                tie = op.tie_valid(case, inputs, ref, mine)
            except Exception:  # noqa: BLE001 - a malformed index array is a plain mismatch
                tie = None
        beside = {k: v.get(name) for k, v in (others or {}).items() if v is not None}
        res[name] = C.compare_output(name, spec, mine, ref[name], others=beside or None, tie_valid=tie,
                                     bound=bounds.get(name), zero_sign_free=zero_sign_free,
                                     nonfinite_ok=(nonfinite_ok or {}).get(name), free=(free or {}).get(name))
    return res


def _reads_bounds(op, case, ref: dict, got: dict | None) -> bool:
    """Will the comparison read a bound? Not where every output compared within one is the
    reference's bit for bit (NaN where it has NaN): such an answer agrees whatever the bound, with
    its ratio 0 (``compare.compare_output``), so its bound (window statistics, a second pass of the
    operator) need not be made."""
    for name, spec in op.compare_specs(case).items():
        if spec.kind != "bound":
            continue
        g, r = None if got is None else got.get(name), ref.get(name)
        if g is None or r is None:
            return True
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape or g.dtype != r.dtype or g.dtype.kind != "f" or not C.same_floats(g, r):
            return True
    return False


def _bounds(op, case, inputs: dict, ref: dict, free: dict | None, got: dict | None = None) -> dict:
    """The operator's ``reference_bound`` of ``ref``, as the comparison of ``got`` reads it
    (``reference_bound_for``); for an answer grown beyond the case's outputs (a reading that keeps
    windows, their positions ``free``), the bounds of the case's own box, grown with zeros."""
    if not free:
        return op.reference_bound(case, inputs, ref) if got is None else op.reference_bound_for(case, inputs, ref, got)
    boxes = {}
    for k, mask in free.items():
        fixed = np.argwhere(~np.asarray(mask, dtype=bool))
        boxes[k] = tuple(slice(0, int(fixed[:, i].max()) + 1 if len(fixed) else 0) for i in range(np.ndim(mask)))
    inner = op.reference_bound(case, inputs, {k: (np.asarray(v)[boxes[k]] if k in boxes else v) for k, v in ref.items()})
    return {k: (_grow_bound(b, np.shape(ref[k]), boxes[k]) if k in boxes else b) for k, b in inner.items()}


def _grow_bound(b, shape, box):
    """A bound (an array, or a pair (below, above) of arrays) of the box ``box`` of an output of
    ``shape``, zero outside it."""
    if isinstance(b, tuple):
        return tuple(_grow_bound(x, shape, box) for x in b)
    if np.ndim(b) == 0:
        return b
    grown = np.zeros(shape, dtype=np.float64)
    grown[box] = b
    return grown


#: the lanes whose floating-point rules let float32 arithmetic flush denormals (subnormals) to a zero
#: of the same sign, on its inputs and its outputs, and the rule that says so
DENORM_FLUSH_RULES = {
    "DmlExecutionProvider": "Direct3D 11's floating-point rules (32-bit float: denorms may be flushed to "
                            "sign-preserved zero on input and output of any arithmetic operation; shader model 6.2 "
                            "keeps that for float32, -denorm any|ftz|preserve, while float16 and float64 must "
                            "preserve them)",
    "WebGpuExecutionProvider": "WGSL's floating-point evaluation rules (an implementation may flush f32 subnormal "
                               "inputs and results of an operation to zero)",
}
DENORM_FLUSH_RULES["DirectML"] = DENORM_FLUSH_RULES["DmlExecutionProvider"]
#: the allowed answer a lane of :data:`DENORM_FLUSH_RULES` may take, as ``ep-took:<name>``
DENORM_FLUSH = "denorm-flush"
#: float32's smallest normal: the most a flushed denormal moves a value
_F32_TINY = float(np.finfo(np.float32).tiny)


def flush_allowed(ep_name: str) -> str | None:
    """The rule that lets the lane ``ep_name`` flush float32 denormals, None where none does."""
    return DENORM_FLUSH_RULES.get(ep_name)


def _flushed(a):
    """``a`` with its float32 subnormals replaced by a zero of their sign (other types as they are)."""
    a = np.asarray(a)
    if a.dtype != np.float32:
        return a
    with np.errstate(invalid="ignore"):
        sub = (a != 0) & (np.abs(a) < _F32_TINY)
    return np.where(sub, np.copysign(np.float32(0), a), a).astype(np.float32) if sub.any() else a


def _has_subnormal(arrays) -> bool:
    return any(np.asarray(a).dtype == np.float32 and bool(((np.asarray(a) != 0) & (np.abs(np.asarray(a)) < _F32_TINY)).any())
               for a in arrays)


def _flush_alternatives(case, inputs: dict, ref: dict, answer) -> list[tuple[dict, dict, bool]]:
    """(inputs, outputs, zero_sign_free) of each answer of float32 arithmetic that flushes
    denormals: on its outputs; on its inputs (``answer``: the operator's answer of the flushed
    inputs), either zero where the zeros it makes tie in both signs (the operator's open point
    signed-zero on the flushed inputs); both. Nothing where no float32 input or
    answer is subnormal."""
    if not _has_subnormal([*inputs.values(), *ref.values()]):
        return []
    out = [(inputs, {k: _flushed(v) for k, v in ref.items()}, False)]
    fin = {k: _flushed(v) for k, v in inputs.items()}
    if answer is not None and any(fin[k] is not inputs[k] for k in inputs):
        try:
            r2 = answer(fin)
        except Exception:  # noqa: BLE001 - no such answer: the reference's stands
            r2 = None
        if r2 is not None:
            try:        # zeros the flush makes of both signs tie: the operator's open point signed-zero
                ties = "signed-zero" in case.operator.open_points(case, fin)
            except Exception:  # noqa: BLE001
                ties = False
            out += [(fin, r2, ties), (fin, {k: _flushed(v) for k, v in r2.items()}, ties)]
    return out


def _flush_bounds(op, case, inputs: dict, ref: dict) -> dict:
    """The bounds of ``ref`` (outputs of kind 'bound') with the flushes of intermediate results
    added: each moves a value by less than float32's smallest normal, a few of them per output
    element (a sample's four corners, a sum's partials divided by its count)."""
    out = {}
    for k, b in op.reference_bound(case, inputs, ref).items():
        if np.asarray(ref[k]).dtype != np.float32:
            out[k] = b
        elif isinstance(b, tuple):
            out[k] = tuple(np.asarray(x, dtype=np.float64) + 8 * _F32_TINY for x in b)
        else:
            out[k] = np.asarray(b, dtype=np.float64) + 8 * _F32_TINY
    return out


def judge_side(case, inputs: dict, ref: dict, got: dict | None, points: list[str],
               others: dict[str, dict] | None = None, *, flush=None) -> tuple[bool, dict[str, OutputStats], str | None]:
    """(agrees, statistics, alternative) of one side: against the reference, and, where the case
    touches an open point, against each behaviour the documents allow there
    (``Operator.alternatives``). The statistics are those of the reference unless an
    alternative matched; ``alternative`` names it. Where no answer matches and the output's shape
    is only that of another reading (kept ceil_mode windows), the statistics are those of the
    first such reading: what differs in values, not that the shape does. ``flush``: on a lane whose
    rules let float32 arithmetic flush denormals (:func:`flush_allowed`), the operator's answer of
    given inputs (to answer flushed ones): the flushed answers are allowed too, ``denorm-flush``."""
    stats = compare_side(case, inputs, ref, got, others)
    if all(c.match for c in stats.values()) or got is None or not (points or flush is not None):
        return all(c.match for c in stats.values()), stats, None
    shaped = None
    for alt in (case.operator.alternatives(case, inputs, ref, points) if points else ()):
        alt_stats = compare_side(case, inputs, alt.outputs, got, others, zero_sign_free=alt.zero_sign_free,
                                 nonfinite_ok=alt.nonfinite_ok, bounds=alt.bounds or None, free=alt.free or None)
        if all(c.match for c in alt_stats.values()):
            for c in alt_stats.values():
                c.alternative = alt.name
            return True, alt_stats, alt.name
        if shaped is None and not any("shape" in c.labels for c in alt_stats.values()):
            shaped = alt_stats
    alt = None              # the last reading's bounds let go of before the flushed answers and the diagnosis
    if flush is not None:
        for f_inputs, f_ref, sign_free in _flush_alternatives(case, inputs, ref, flush):
            f_stats = compare_side(case, f_inputs, f_ref, got, others, zero_sign_free=sign_free,
                                   bounds=_flush_bounds(case.operator, case, f_inputs, f_ref))
            if all(c.match for c in f_stats.values()):
                for c in f_stats.values():
                    c.alternative = DENORM_FLUSH
                return True, f_stats, DENORM_FLUSH
    if shaped is not None and any("shape" in c.labels for c in stats.values()):
        return False, shaped, None
    _diagnose(case, inputs, ref, got, points, stats)
    return False, stats, None


def _diagnose(case, inputs: dict, ref: dict, got: dict, points: list[str], stats: dict[str, OutputStats]) -> None:
    """The operator's labels of a known wrong way of computing a failing output (``Operator.diagnose``);
    a diagnosis that raises adds none."""
    try:
        found = case.operator.diagnose(case, inputs, ref, got, points)
    except Exception:  # noqa: BLE001 - labels only
        return
    for name, labels in found.items():
        c = stats.get(name)
        if c is not None and not c.match:
            c.labels = [*c.labels, *(lab for lab in labels if lab not in c.labels)]


def ratio_text(x: float) -> str:
    """A multiple of the error bound as a reason writes it: 3 significant digits, whole from 100 up
    (682.79 -> "683", 12345.6 -> "12346", 0.01234 -> "0.0123"), never in exponent form."""
    if not np.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return str(int(round(x)))
    return np.format_float_positional(x, precision=3, unique=True, fractional=False, trim="-")


def why(stats: dict[str, OutputStats]) -> str:
    """One line on what differs."""
    parts = []
    for c in stats.values():
        if c.match:
            continue
        s = f"{c.output}: {c.mismatches}/{c.total} differ"
        if c.nan_mismatches:
            s += f" ({c.nan_mismatches} NaN against a number)"
        if c.max_ulp is not None and c.kind != "indices" and c.mismatches > c.nan_mismatches:
            s += f", max {c.max_ulp} ULP"
            if c.max_abs is not None:
                s += f", max abs {c.max_abs:.6g}"
        if c.bound_ratio is not None and np.isinf(c.bound_ratio):
            s += ", where the error bound is 0 (every allowed evaluation gives the reference's value)"
        elif c.bound_ratio is not None:
            s += f", {ratio_text(c.bound_ratio)}x the error bound"
        if c.labels:
            s += f" [{', '.join(c.labels)}]"
        if c.note:
            s += f" ({c.note})"
        parts.append(s)
    return "; ".join(parts)


def judge(case, inputs: dict[str, np.ndarray], ep: Outcome, cpu: Outcome | None, where: Placement | None, *,
          ep_name: str, ep_is_cpu: bool, cpu_build: str = "", ref: dict[str, np.ndarray] | None = None,
          semantics: str = "onnx") -> Judgement:
    """The verdict of ``case`` from the EP's outcome, the CPU EP's (None: no CPU side) and the
    placement. Outcomes carry outputs by the case's local output names. ``ref``: expected outputs
    when the caller has them (fixtures); else computed here: ``semantics`` "onnx" judges what the
    case's ONNX graph asks for (``Operator.expected``: the ONNX specification of its opset, which
    is also the DirectML semantics where the graph is the direct image of the descriptor);
    "dml" judges the descriptor itself (``Operator.reference``), for lanes that run descriptors; the
    open points of the ONNX text alone (``Operator.onnx_open_points``) apply to "onnx" only."""
    cpu_side = None
    if cpu is not None:
        cpu_side = CpuSide(build=cpu_build)
        if not cpu.ok:
            cpu_side.verdict, cpu_side.reason = failure(cpu)
            if cpu_side.verdict in Verdict.REFUSED:
                cpu_side.labels = known_deviations(case, inputs, refusal=cpu.error or "")
    if not ep.ok:
        v, reason = failure(ep, cpu)
        labels = [NO_KERNEL_LABEL] if v == "EP_REJECTED" and reason.startswith(NO_KERNEL) else []
        if ep_is_cpu and v in Verdict.REFUSED:
            labels += known_deviations(case, inputs, refusal=ep.error or "")
        return Judgement(v, reason=reason, cpu=cpu_side, labels=sorted(labels))
    off = off_ep(where, ep_name)
    if off:
        return Judgement("NOT_OFFLOADED", reason=f"nodes not on {ep_name}: {off}", cpu=cpu_side)
    op = case.operator
    t0 = time.perf_counter()
    if ref is None:
        try:
            op.will_compare(case, inputs)
            ref = op.expected(case, inputs) if semantics == "onnx" else op.reference(case, inputs)
        except Exception as e:  # noqa: BLE001
            return Judgement("ERROR", reason=f"reference failed: {e}\n{traceback.format_exc(limit=3)}", cpu=cpu_side)
    ref_ms = round((time.perf_counter() - t0) * 1e3, 3)
    pts = list(op.precision_points(case, inputs)) + list(op.open_points(case, inputs)) + \
        (list(op.onnx_open_points(case, inputs)) if semantics == "onnx" else [])
    rules = list(op.rules(case, inputs))
    got_cpu = cpu.outputs if cpu is not None and cpu.ok else None
    answer = None
    if flush_allowed(ep_name) and op.arithmetic:
        def answer(ins):
            return op.expected(case, ins) if semantics == "onnx" else op.reference(case, ins)
    ep_ok, ep_cmp, ep_alt = judge_side(case, inputs, ref, ep.outputs, pts,
                                       {"cpu": got_cpu} if got_cpu is not None else None, flush=answer)
    cpu_ok = cpu_alt = None
    if got_cpu is not None:
        cpu_ok, cpu_cmp, cpu_alt = judge_side(case, inputs, ref, got_cpu, pts)
        cpu_side.verdict = "PASS" if cpu_ok else "FAIL"
        cpu_side.outputs = cpu_cmp
        cpu_side.reason = "" if cpu_ok else why(cpu_cmp)
        if not cpu_ok:
            cpu_side.labels = known_deviations(case, inputs, WRONG_ANSWER_KINDS)
    same = C.outputs_equal(ep.outputs, got_cpu)
    # the open points and rules that concern an output the EP got wrong
    failing = [c for c in ep_cmp.values() if not c.match]
    concern = [p for p in pts + rules if any(op.point_concerns(p, c) for c in failing)]
    verdict, attribution = C.attribute(ep_ok, cpu_ok, same, tuple(concern), ep_is_cpu)
    j = Judgement(verdict, attribution, outputs=ep_cmp, cpu=cpu_side, open_points=pts, reference_ms=ref_ms,
                  labels=sorted({lab for c in ep_cmp.values() for lab in c.labels}))
    j.finding = _finding(ep_ok, cpu_ok, same)
    if j.finding:
        j.labels.append(f"finding:{j.finding}")
    for side, alt in (("ep", ep_alt), ("cpu", cpu_alt)):
        if alt:
            j.labels.append(f"{side}-took:{alt}")
    if ep_is_cpu and verdict == "FAIL":
        j.labels += known_deviations(case, inputs, WRONG_ANSWER_KINDS)
    elif cpu_ok is False:
        # the CPU EP's wrong answer is part of this record's attribution or finding
        j.labels += cpu_side.labels
    j.labels = sorted(set(j.labels) | {f"open-point:{p}" for p in pts} | {f"rule:{r}" for r in rules})
    if verdict != "PASS":
        j.reason = why(ep_cmp)
        j.reason += point_text(op, [p for p in pts if p in concern], [r for r in rules if r in concern])
    elif j.finding:
        j.reason = _finding_text(j.finding, cpu_side, ep_alt, cpu_alt)
    return j


def _documents(docs: tuple[str, ...]) -> str:
    return " and ".join(docs)


def point_text(op, points: list[str], rules: list[str]) -> str:
    """What a FAIL reason says of the rules and open points that concern its failing outputs: the
    rules first (one allowed answer: the rule decides the FAIL), each with the document whose rule
    it is, then the open points ("also", after a rule), each with the documents that leave it
    open; each with the operator's text of it."""
    out = ""
    if rules:
        out += " | outside the rule(s) every EP is held to: " + " ".join(
            f"{r} (a rule of {_documents(op.point_documents(r))}): {op.open_point_texts.get(r, r)}" for r in rules)
    if points:
        out += (" | also touches" if rules else " | touches") + " open point(s), outside every allowed behaviour: " + " ".join(
            f"{p} (left open by {_documents(op.point_documents(p))}): {op.open_point_texts.get(p, p)}" for p in points)
    return out


# ----------------------------------------------------------------------------------------------
# Several runs of one case: repeats of a session, and the re-run alone
# ----------------------------------------------------------------------------------------------

def add_finding(j: Judgement, name: str, text: str = "") -> None:
    """Give ``j`` the finding ``name`` beside those it has: its label ``finding:<name>``, and its
    ``finding`` the first of them in the order of ``record.FINDINGS``; ``text`` goes into the
    reason (in front of a PASS's, after a failure's)."""
    if f"finding:{name}" not in j.labels:
        j.labels = sorted(set(j.labels) | {f"finding:{name}"})
    have = [f for f in FINDINGS if f == name or f == j.finding]
    j.finding = have[0]
    if text:
        if j.verdict == "PASS":
            j.reason = text + (f"; {j.reason}" if j.reason else "")
        else:
            j.reason = (j.reason + " | " if j.reason else "") + text


def _differ_text(differ: dict[str, int]) -> str:
    return ", ".join(f"{k}: {n} element{'s' if n != 1 else ''}" for k, n in differ.items())


def of_runs(runs: list[Judgement], differ: dict[str, int] | None = None) -> Judgement:
    """One judgement of identical runs of one session (or of one case alone): the first run's when
    every run got the same verdict, else FLAKY with the statistics and attribution of the first
    run that did not pass; ``differ`` (output -> elements that differ between runs): the finding
    NONDETERMINISTIC."""
    verdicts = [r.verdict for r in runs]
    first = runs[0]
    if len(set(verdicts)) == 1:
        j = dataclasses.replace(first, labels=list(first.labels))
    else:
        k, bad = next((k, r) for k, r in enumerate(runs) if r.verdict != "PASS")
        j = dataclasses.replace(bad, verdict="FLAKY", labels=list(bad.labels),
                                reason=f"verdicts of {len(runs)} identical runs: {', '.join(verdicts)}; "
                                       f"run {k + 1}: {bad.reason}")
    if differ:
        add_finding(j, "NONDETERMINISTIC",
                    f"finding NONDETERMINISTIC: {len(runs)} identical runs gave outputs that differ bit for bit "
                    f"({_differ_text(differ)})" + (", each within what is allowed" if j.verdict == "PASS" else ""))
    return j


def needs_confirming(j: Judgement) -> bool:
    """Whether a case's judgement in a shared session is to be confirmed alone: its EP side gave
    outputs outside every allowed answer in some run."""
    return j.verdict in ("FAIL", "FLAKY")


def settle(batch: list[Judgement], *, repeat: int = 1, batch_size: int = 1, differ: dict[str, int] | None = None,
           alone: list[Judgement] | None = None, alone_differ: dict[str, int] | None = None) -> Judgement:
    """The verdict of a case from its runs: ``batch``, the judgement of each run of the session it
    shared with ``batch_size - 1`` other cases (``repeat`` runs, then any run of that session's
    model again); ``alone``, those of its runs alone (its own model and session), None when it was
    not re-run alone. ``differ``/``alone_differ``: output -> elements that differ between the
    runs of each.

    - not re-run alone: :func:`of_runs` of the batch runs;
    - wrong in every shared run (at least two) and right in every run alone: PASS (the case's own
      graph is answered right) with the finding BATCH_DEPENDENT, the shared runs' reason kept;
    - verdicts that differ between identical runs (of the shared session, or alone): FLAKY;
    - the same failure alone: the alone runs' judgement (confirmed alone);
    - alone without outputs to compare (refused, error): the shared runs' judgement, with what
      the runs alone gave in ``runs``.
    A judgement of several runs gets ``runs`` (:class:`record.Runs`); a single run none."""
    bv = [r.verdict for r in batch]
    av = [r.verdict for r in alone] if alone is not None else None
    runs = Runs(repeat=repeat, batch_size=batch_size, batch=bv, alone=av, differ=dict(differ or {}))
    if alone_differ:
        for k, n in alone_differ.items():
            runs.differ[k] = max(n, runs.differ.get(k, 0))
    shared = of_runs(batch, differ)
    if alone is None:
        shared.runs = runs if len(batch) > 1 else None
        return shared
    own = of_runs(alone, alone_differ)
    if set(bv) == {"FAIL"} and set(av) == {"PASS"} and len(bv) >= 2:
        j = dataclasses.replace(own, labels=list(own.labels), source="alone")
        runs.batch_reason = shared.reason
        add_finding(j, "BATCH_DEPENDENT",
                    f"finding BATCH_DEPENDENT: wrong in every run of a session shared with {batch_size - 1} other "
                    f"case{'s' if batch_size != 2 else ''} ({', '.join(bv)}: {shared.reason}), right in every run "
                    f"alone ({', '.join(av)})")
    elif len(set(bv)) > 1:                   # identical runs of the shared session disagree
        j = shared
        j.reason += f" | alone: {', '.join(av)}"
    elif len(set(av)) > 1:                   # identical runs alone disagree
        j = dataclasses.replace(own, source="alone")
        j.reason = f"shared session: {', '.join(bv)}; alone: {j.reason}"
    elif not set(av) & set(Verdict.COMPARED):
        j = shared
        j.reason += f" | alone (its own model and session) it gave no outputs to compare: {', '.join(av)}: {own.reason}"
    elif set(av) == {"PASS"}:
        # wrong shared, right alone, and the shared session did not run again: a race and a
        # dependence on the batch cannot be told apart
        j = shared
        j.verdict = "FLAKY"
        j.reason += f" | alone: {', '.join(av)} (the shared session was not run again)"
    else:                                    # the same failure alone
        j = dataclasses.replace(own, source="alone")
        runs.note = "confirmed alone"
    if runs.differ and "finding:NONDETERMINISTIC" not in j.labels:
        add_finding(j, "NONDETERMINISTIC", f"finding NONDETERMINISTIC: identical runs gave outputs that differ "
                                           f"bit for bit ({_differ_text(runs.differ)})")
    j.runs = runs
    return j
