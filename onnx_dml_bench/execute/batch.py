"""One batch of cases on one backend, inside a worker process: its preparation, the batch solver,
the runs of each case judged and settled, and the descriptor path.

A batch becomes one ONNX model per opset (one node, or a few, per case, each with its own inputs
and outputs) and one session on the EP under test with CPU fallback disabled. A session the EP
refuses, or a run that fails, is split until the case at fault is alone, so one unsupported case
does not cost its group. The same model runs on the CPU EP of the same ONNX Runtime build for the
three-way comparison. Per-node EP assignment is read back from the session; ``verdict.judge``
turns what each side gave into the case's record.

The backend is known only by the shapes ``lanes.base`` declares: ONNX graphs
(``GraphBackend.run_many``) or DirectML descriptors (``DescriptorBackend``: ``run``,
``unsupported``, ``placement``; :func:`run_descriptor`).

A case whose EP side fails in a session shared with other cases is run again alone (its own
model and session) before its verdict is final, and its shared session again when it passes
alone: ``verdict.settle`` confirms the failure, or finds it BATCH_DEPENDENT, or FLAKY.
``RunConfig.repeat`` runs each session of the EP under test that many times (the same session):
outputs that differ between the runs are the finding NONDETERMINISTIC, verdicts that differ FLAKY.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx

from .. import compare as C
from .. import verdict as V
from ..cases import Case
from ..lanes.base import VARIANT_LABEL, Backend, descriptor_case, onnx_side_variant, runs_descriptors
from ..ops.base import Fragment, make_model
from ..outcome import Outcome
from ..record import CaseRecord, Timings, cap
from ..saved import save_outputs


#: test hook: {"<case id>": fault}. "abort" and "hang" end or stall the worker on the case's batch;
#: the others change what the EP under test answered for the case, on every lane (:func:`_faulted`):
#: "batch" its outputs are wrong in every run of a session it shares with other cases, "flaky"
#: wrong in the second run of every session, "once" wrong in the first session it is run in (in
#: this process), "drift" run k of a session moves the first element of each output k steps
#: (a ULP for floats) away from run 1's
FAULTS_ENV = "ONNX_DML_BENCH_FAULTS"

__all__ = ["DOING_BYTES", "FAULTS_ENV", "Item", "base_record", "batches", "case_bytes", "doing_into", "family_key",
           "graph_key", "known_refusals", "node_kinds", "note_doing", "prepare_case", "run_batch", "run_descriptor",
           "solve"]


# ----------------------------------------------------------------------------------------------
# Batches
# ----------------------------------------------------------------------------------------------

def case_bytes(case: Case) -> int:
    """About the most memory one case takes in a worker (``Operator.memory_bytes``)."""
    return case.operator.memory_bytes(case.desc)


def batches(cases: list[Case], size: int, max_bytes: int) -> list[list[Case]]:
    """``cases`` in batches (one model and session each) of at most ``size`` cases and at most
    ``max_bytes`` of their :func:`case_bytes` (a case larger than that is a batch of its own),
    cases likely to share a fate together (same opset, operator, data type and ONNX form), so that
    a refused session splits into few groups."""
    ordered = sorted(cases, key=lambda c: (c.opset, c.op, c.dtype, repr(c.variant), c.id))
    out: list[list[Case]] = []
    cur: list[Case] = []
    held = 0
    for c in ordered:
        b = case_bytes(c)
        if cur and (len(cur) >= size or held + b > max_bytes):
            out.append(cur)
            cur, held = [], 0
        cur.append(c)
        held += b
    if cur:
        out.append(cur)
    return out



# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------

def base_record(case: Case, ep_name: str, verdict: str = "", reason: str = "") -> CaseRecord:
    """The record of a case before (or without) a run: what defines it, and a verdict if known."""
    op = case.operator
    try:
        image = op.dml_image(case)
    except Exception:  # noqa: BLE001 - a case the operator refuses: its admission says why
        image = None
    return CaseRecord(
        case_id=case.id, op=case.op, dml_op=op.dml_name, dtype=case.dtype, opset=case.opset,
        family=case.family, seed=case.seed, descriptor=case.desc.to_dict(), onnx=op.onnx_options(case), ep=ep_name,
        verdict=verdict, reason=reason, case=case.to_dict() if case.values is not None else None, dml_image=image,
        source=case.source)


# ----------------------------------------------------------------------------------------------
# One batch: build, run (with bisection), judge
# ----------------------------------------------------------------------------------------------

@dataclass
class Item:
    case: Case
    prefix: str
    frag: Fragment
    inputs: dict
    feeds: dict
    outs: dict            # local output name -> graph output name

    def local(self, out: Outcome, assignment: bool = True) -> Outcome:
        """The batch's outcome seen from this case: its outputs and nodes by local names (without
        the session's node assignment where ``assignment`` is false: the CPU side's, which only
        its outputs and errors are read of)."""
        outputs = {k: out.outputs[g] for k, g in self.outs.items()} if out.ok else None
        placed = out.assignment if assignment else None
        assignment = None
        if placed is not None:
            assignment = {n[len(self.prefix):] if n.startswith(self.prefix) else n: e for n, e in placed.items()}
        runs = None
        if out.ok and out.runs:
            runs = [_unprefixed(r, self.prefix) if isinstance(r, str) else {k: r[g] for k, g in self.outs.items()}
                    for r in out.runs]
        return Outcome(out.ok, out.stage, _unprefixed(out.error, self.prefix), outputs, assignment,
                       out.session_ms, out.run_ms, runs)

    def node_names(self) -> list[str]:
        return [n.name[len(self.prefix):] for n in self.frag.nodes]


class _Shared:
    """One session shared by a group of cases, as each of them reads its placement: the group, the
    node names of all its cases (with their batch prefixes) and the session's recorded nodes that
    name none of them. Made once per session instead of once per case."""

    def __init__(self, group: list[Item], out: Outcome):
        self.group = group
        self.names = frozenset(n.name for it in group for n in it.frag.nodes)
        self.raw = out.assignment
        self.stray = [k for k in self.raw if k not in self.names] if self.raw is not None else []
        self.with_nodes = sum(1 for it in group if it.frag.nodes)
        self._eps: set[str] | None = None

    def eps(self) -> set[str]:
        if self._eps is None:
            self._eps = set(self.raw.values())
        return self._eps

    def placement(self, it: Item, ep_name: str, ep_is_cpu: bool) -> V.Placement:
        """``V.placement`` of ``it`` in this session, from its own nodes' entries: the same as
        ``V.placement(it.node_names(), it.local(out).assignment, ..., the other cases' nodes)``
        wherever dropping the case's prefix cannot make two recorded names one (then that is what
        this computes)."""
        own = it.node_names()
        if self.raw is None:
            return V.placed(own, None, set(), [], ep_name, ep_is_cpu)
        p, raw = it.prefix, self.raw
        own_set = set(own)
        local = [k[len(p):] if k.startswith(p) else k for k in self.stray]
        if (own_set & self.names or len(set(local)) != len(local)
                or any(k in own_set or k in self.names for k in local)):
            others = [n.name for other in self.group if other is not it for n in other.frag.nodes]
            return V.placement(own, it.local(Outcome(False, "done", assignment=raw)).assignment, ep_name,
                               ep_is_cpu, others)
        look = {n: raw[p + n] for n in own if p + n in raw}
        look.update((k, raw[r]) for k, r in zip(local, self.stray))
        return V.placed(own, look, self.eps(), local, ep_name, ep_is_cpu,
                        shared=self.with_nodes > (1 if it.frag.nodes else 0))


def _unprefixed(text: str | None, prefix: str) -> str | None:
    """Error text without the batch prefix of node and tensor names (``c2_X`` -> ``X``)."""
    if not text or not prefix:
        return text
    return _prefix_pattern(prefix).sub("", text)


@functools.lru_cache(maxsize=8192)
def _prefix_pattern(prefix: str) -> re.Pattern:
    """The pattern of a batch prefix at the start of a name, compiled once per prefix (``re``'s own
    cache holds 512 patterns: a batch of 1,024 cases compiled each again)."""
    return re.compile(rf"(?<![\w]){re.escape(prefix)}")


def _onnx_text(frag: Fragment, prefix: str) -> str:
    """The case's nodes as text, with the batch prefix taken off its names."""
    return _unprefixed("\n".join(onnx.helper.printable_node(n, prefix="") for n in frag.nodes), prefix)


#: stages of a failure that depend only on the graph, not on the data fed to it
_GRAPH_STAGES = ("load", "session")
#: a case's name prefix (``c12_``) in an error text: quoted, or at a word's start
_NAMED = re.compile(r"(?<![\w])(c\d+_)")
#: a failed group of at most this many distinct graphs (:func:`graph_key`) tries one case of each alone
SPLIT_GRAPHS = 16
#: a failed group of at most this many kinds of nodes (:func:`node_kinds`) is split one part per kind
SPLIT_KINDS = 8


def graph_key(it: Item, opset: int, side: str) -> str:
    """What a session sees of a case before any data: its nodes, inputs, outputs and initialisers
    (names without the batch prefix, shapes, types), the opset and the side. Cases of the same
    graph differ only in the data fed at run time."""
    h = hashlib.sha256(f"{opset}|{side}|".encode())
    for coll in (it.frag.nodes, it.frag.inputs, it.frag.outputs, it.frag.initializers):
        for proto in coll:
            h.update(_unprefixed(str(proto), it.prefix).encode())
            h.update(b"\0")
        h.update(b"\1")
    return h.hexdigest()


def family_key(it: Item, opset: int, side: str) -> str:
    """Coarser than :func:`graph_key`: the node types, the input element types and the number of
    outputs, with the opset and the side, without attribute values or shapes. Cases of one family
    tend to share a session's fate (a missing kernel, an opset an EP does not register); the runner
    uses that only to choose groups, never as a verdict."""
    nodes = ",".join(f"{n.domain}:{n.op_type}" for n in it.frag.nodes)
    types = ",".join(str(i.type.tensor_type.elem_type) for i in it.frag.inputs)
    return f"{opset}|{side}|{nodes}|{types}|{len(it.frag.outputs)}"


def node_kinds(it: Item) -> tuple[str, ...]:
    """Coarser than :func:`family_key`: the case's node types alone (``MaxPool``, or ``Reshape``,
    ``Transpose`` and ``DepthToSpace`` of one ONNX form)."""
    return tuple(sorted({f"{n.domain}:{n.op_type}" for n in it.frag.nodes}))


def _refusals(backend) -> dict[str, tuple[str, Outcome]]:
    """Graph key -> (case id, outcome) of the graphs a session of this backend refused alone."""
    return backend.__dict__.setdefault("_refused_graphs", {})


class _Fates:
    """Per family (:func:`family_key`), how many sessions of its cases this backend saw refused
    alone and accepted: the estimated chance that a session of one more of its cases is refused.
    Used to group cases (a likely refusal goes alone, a failed group splits into as many parts as
    it likely holds refusals); verdicts still come from each case's own session."""

    def __init__(self):
        self.refused: Counter = Counter()
        self.accepted: Counter = Counter()

    def seen(self, fam: str, accepted: bool) -> None:
        (self.accepted if accepted else self.refused)[fam] += 1

    def p(self, fam: str) -> float | None:
        """The estimated chance of a refusal; None before two sessions of the family were seen."""
        r, a = self.refused[fam], self.accepted[fam]
        return None if r + a < 2 else (r + 0.5) / (r + a + 1.0)

    def likely_refused(self, fam: str) -> bool:
        """At least two refusals seen alone, and few acceptances beside them (a family mostly
        accepted is cheaper in groups: each session alone costs its own start)."""
        p = self.p(fam)
        return self.refused[fam] >= 2 and p is not None and p >= 0.8


def _fates(backend) -> _Fates:
    return backend.__dict__.setdefault("_session_fates", _Fates())


def _known_refusal(first_case: str, out: Outcome) -> Outcome:
    note = (f"{out.error or ''}\n(not created again: a session of the identical graph, case {first_case}, "
            "was refused with this error; the data fed differs, the graph does not)")
    return Outcome(False, out.stage, note)


def _job(group: list[Item], opset: int, side: str, repeat: int = 1) -> tuple:
    """The backend's job of one session over ``group``'s cases (``GraphBackend.run_many``)."""
    model = make_model([it.frag for it in group], opset)
    feeds = {name: arr for it in group for name, arr in it.feeds.items()}
    outnames = [g for it in group for g in it.outs.values()]
    return (model.SerializeToString(), feeds, outnames, side) + ((repeat,) if repeat > 1 else ())


def _solve_sides(backend, items: list[Item], opset: int, sides: tuple[str, ...], repeat: int = 1,
                 groups: dict[str, list[Item]] | None = None) -> dict[str, dict[str, Outcome]]:
    """Run items on each side (:func:`_solver` per side), the sides in step: each round's groups of
    every side go to the backend in one ``run_many`` call (a call into a worker outside this process,
    e.g. the DirectML EP's under Wine, costs a round trip), and a side's rounds never wait on the
    other's outcomes. The first side (the EP's, in a batch) runs each session ``repeat`` times;
    ``groups`` (when given) gets, per case, the cases of that side's session its outcome came from."""
    solvers = {side: _solver(backend, items, opset, side, *((repeat, groups) if k == 0 else ()))
               for k, side in enumerate(sides)}
    results: dict[str, dict[str, Outcome]] = {}
    asks: dict[str, list] = {}
    whats: dict[str, str] = {}
    for side, gen in solvers.items():
        try:
            asks[side], whats[side] = next(gen)
        except StopIteration as done:
            results[side] = done.value
    while asks:
        order = list(asks)
        note_doing("running " + " and ".join(whats[side] for side in order))
        outcomes = backend.run_many([job for side in order for job in asks[side]])
        nxt, k = {}, 0
        for side in order:
            n = len(asks[side])
            try:
                nxt[side], whats[side] = solvers[side].send(outcomes[k:k + n])
            except StopIteration as done:
                results[side] = done.value
            k += n
        asks = nxt
    return results


def solve(backend, items: list[Item], opset: int, side: str, repeat: int = 1,
          groups: dict[str, list[Item]] | None = None) -> dict[str, Outcome]:
    """One side alone (:func:`_solve_sides`): the outcome per case id."""
    return _solve_sides(backend, items, opset, (side,), repeat, groups)[side]


def _solver(backend, items: list[Item], opset: int, side: str, repeat: int = 1,
            groups: dict[str, list[Item]] | None = None):
    """Run items on one side, ``repeat`` runs per session, splitting failing groups until each failure
    is one case's (``groups``, when given, gets per case the cases of the session its outcome came
    from): a generator that yields each round's jobs (and what they run, for the worker's last words)
    and is sent their outcomes, and returns the outcome per case id. A case alone whose session was refused (load or session stage: before any data) teaches the backend
    that its graph is refused; a later case of the identical graph gets that refusal without a
    session, and is kept out of the groups it would have failed. What the backend has seen of each
    case's family (:class:`_Fates`) chooses the groups: a case likely refused is tried alone first,
    and a failed group splits into as many parts as it likely holds refusals."""
    result: dict[str, Outcome] = {}
    refused = _refusals(backend)
    fates = _fates(backend)
    keys: dict[str, str] = {}
    fams: dict[str, str] = {}

    def known(it: Item) -> bool:
        if not refused:
            return False
        k = key(it)
        if k in refused:
            result[it.case.id] = _known_refusal(*refused[k])
            return True
        return False

    def key(it: Item) -> str:
        k = keys.get(it.case.id)
        if k is None:
            k = keys[it.case.id] = graph_key(it, opset, side)
        return k

    def fam(it: Item) -> str:
        f = fams.get(it.case.id)
        if f is None:
            f = fams[it.case.id] = family_key(it, opset, side)
        return f

    def isolate(group: list[Item]) -> list[list[Item]]:
        """The likely refused cases of a group alone, the others together."""
        if len(group) == 1:
            return [group]
        alone = [it for it in group if fates.likely_refused(fam(it))]
        if not alone:
            return [group]
        ids = {it.case.id for it in alone}
        rest = [it for it in group if it.case.id not in ids]
        return [[it] for it in alone] + ([rest] if rest else [])

    def named(group: list[Item], error: str | None) -> Item | None:
        """The one case of ``group`` whose node or tensor the error names (ONNX Runtime names the
        node it found no kernel for, or that failed at run time), or None."""
        found = {m.group(1) for m in _NAMED.finditer(error or "")}
        hits = [it for it in group if it.prefix in found]
        return hits[0] if len(hits) == 1 else None

    def split(group: list[Item], model: bytes, error: str | None = None) -> None:
        """A failed group, the first rule that applies:

        - the backend now knows which of its cases a session refuses (e.g. the DirectML EP's
          placement probe): those alone (refused without a session), the rest together;
        - on the EP's side (where a session costs most), the error names one of its cases (its
          node, or a tensor of it): that case alone, the other cases of its kind of nodes together
          (an EP refuses most often a whole kind: RoiAlign-22's DirectML kernel fails each case in
          turn, and each turn would build the kernels of every other kind again), the rest together;
        - some of its cases share a graph: one case per graph first (each alone where there are at
          most ``SPLIT_GRAPHS`` graphs: a session each, fewer than halving a group of mixed fates),
          the others waiting until those are solved (a refused graph is then known, and its other
          cases need no session);
        - it holds cases of a few kinds of nodes (:func:`node_kinds`: an EP refuses most often a
          whole kind, and one kind's failure says nothing of another's): one part per kind;
        - else as many parts as the group likely holds refusals (at least two: halves when nothing
          is known)."""
        known = known_refusals(backend, model) if side == "ep" and len(group) > 1 else set()
        alone = [it for it in group if it.prefix in known]
        culprit = named(group, error) if side == "ep" and not alone else None
        if culprit is not None:
            nxt.append([culprit])
            rest = [it for it in group if it is not culprit]
            kind = node_kinds(culprit)
            same = [it for it in rest if node_kinds(it) == kind]
            if same and len(same) < len(rest):
                nxt.extend(isolate(same))
                nxt.extend(isolate([it for it in rest if node_kinds(it) != kind]))
            else:
                nxt.extend(isolate(rest))
            return
        if alone and len(alone) < len(group):
            ids = {it.case.id for it in alone}
            nxt.extend([it] for it in alone)
            nxt.append([it for it in group if it.case.id not in ids])
            return
        firsts: dict[str, Item] = {}
        for it in group:
            firsts.setdefault(key(it), it)
        if 1 < len(firsts) < len(group):
            uniq = list(firsts.values())
            ids = {it.case.id for it in uniq}
            if len(uniq) <= SPLIT_GRAPHS:
                nxt.extend([it] for it in uniq)
            else:
                nxt.append(uniq)
            waiting.append([it for it in group if it.case.id not in ids])
        elif len(firsts) == 1:
            nxt.append(group[:1])
            waiting.append(group[1:])
        elif 1 < len(kinds := list(dict.fromkeys(map(node_kinds, group)))) <= SPLIT_KINDS:
            for k in kinds:
                nxt.extend(isolate([it for it in group if node_kinds(it) == k]))
        else:
            expected = sum(fates.p(fam(it)) or 0.0 for it in group)      # families not seen yet: halves
            parts = max(2, min(len(group), math.ceil(2 * expected)))
            size = len(group) / parts
            for i in range(parts):
                nxt.extend(isolate(group[round(i * size):round((i + 1) * size)]))

    pending, waiting = isolate(items), []
    while pending or waiting:
        if not pending:
            pending, waiting = [g for grp in waiting for g in isolate(grp)], []
        pending = [g for g in ([it for it in group if not known(it)] for group in pending) if g]
        if not pending:
            continue
        on = "the CPU EP (the CPU side)" if side == "cpu" else "the EP"
        jobs = [_job(group, opset, side, repeat) for group in pending]
        outcomes = yield jobs, (f"on {on} the session{'s' if len(pending) > 1 else ''} of case"
                                f"{'s' if sum(map(len, pending)) > 1 else ''} " + "; ".join(_ids(g) for g in pending))
        nxt = []
        for group, out, job in zip(pending, outcomes, jobs):
            graph_refused = not out.ok and out.stage in _GRAPH_STAGES
            if out.ok or len(group) == 1:
                for it in group:
                    result[it.case.id] = out
                    if groups is not None:
                        groups[it.case.id] = group
                    fates.seen(fam(it), accepted=not graph_refused)
                if graph_refused:
                    refused.setdefault(key(group[0]), (group[0].case.id, group[0].local(out)))
            else:
                split(group, job[0], out.error)
        pending = nxt
    return result


def _faults() -> dict[str, str]:
    spec = os.environ.get(FAULTS_ENV)
    return json.loads(spec) if spec else {}


def known_refusals(backend, model: bytes) -> set[str]:
    """The name prefixes of the cases of ``model`` (a group's) that ``backend`` knows a session
    refuses, when it can tell (``GraphBackend.known_refusals``); else none."""
    ask = getattr(backend, "known_refusals", None)
    return set(ask(model)) if ask is not None else set()


def _check_fault(case: Case) -> None:
    """The test hook: the worker dies or hangs where the case's own work begins."""
    spec = os.environ.get(FAULTS_ENV)
    if not spec:
        return
    f = json.loads(spec).get(case.id)
    if f == "abort":
        os.abort()
    if f == "hang":
        while True:
            time.sleep(3600)


#: in a worker process: where it says what it is doing (shared with the parent, which reads it
#: in a worker process: where it says what it is doing (shared with the parent, which reads it
#: when the worker dies or hangs, so that the records say which case it was running)
_DOING = None
#: the longest such text, in bytes
DOING_BYTES = 600


def doing_into(buffer) -> None:
    """Where this worker process says what it is doing from now on (:func:`note_doing`): the buffer
    the parent reads (``pool.Worker``)."""
    global _DOING
    _DOING = buffer


def note_doing(text: str) -> None:
    """What this worker process is doing now, into the parent's buffer (nothing outside a worker)."""
    if _DOING is None:
        return
    data = text.encode("utf-8", "replace")
    if len(data) >= DOING_BYTES:
        data = data[:DOING_BYTES - 4].decode("utf-8", "ignore").encode() + b"..."
    _DOING.value = data


def _ids(items) -> str:
    ids = [it.case.id for it in items]
    return ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")


#: cases of the fault "once" already answered wrongly in this process
_struck: set[str] = set()


def _wrong(outputs: dict, steps: int | None = None) -> dict:
    """``outputs`` with the first element of each changed: by ``steps`` representable steps (a
    ULP for floats), or, when None, to a value far from it."""
    out = {}
    for k, a in outputs.items():
        a = np.array(a, copy=True)
        flat = a.reshape(-1)
        if flat.size:
            x = flat[0]
            if a.dtype.kind == "f":
                if steps is None:
                    flat[0] = (x + (1 + abs(x))) if np.isfinite(x) else 0
                else:
                    for _ in range(steps):
                        flat[0] = np.nextafter(flat[0], a.dtype.type(np.inf))
            elif a.dtype.kind == "b":
                flat[0] = not x
            else:
                flat[0] = x ^ 1 if steps is None else x + a.dtype.type(steps)
        out[k] = a
    return out


def _faulted(case_id: str, out: Outcome, shared: bool) -> Outcome:
    """What the EP answered for a case, as the test hook ``FAULTS_ENV`` changes it (unchanged
    without one): a fake EP whose outputs depend on the session or the run, on any lane."""
    fault = _faults().get(case_id)
    if fault not in ("batch", "flaky", "once", "drift") or not out.ok:
        return out
    runs = out.all_runs()
    if fault == "batch" and shared:
        runs = [r if isinstance(r, str) else _wrong(r) for r in runs]
    elif fault == "flaky" and len(runs) > 1 and not isinstance(runs[1], str):
        runs[1] = _wrong(runs[1])
    elif fault == "once" and case_id not in _struck:
        _struck.add(case_id)
        runs = [r if isinstance(r, str) else _wrong(r) for r in runs]
    elif fault == "drift":
        runs = [r if isinstance(r, str) or k == 0 else _wrong(r, k) for k, r in enumerate(runs)]
    return dataclasses.replace(out, outputs=runs[0], runs=runs[1:] or None)


def prepare_case(case: Case, i: int, ep_name: str, max_elements: int | None = None) -> tuple[CaseRecord, Item | None]:
    """The case's record, and its item in the batch model unless the operator's admission check
    refuses the case (the record then holds its verdict and reason)."""
    op = case.operator
    rec = base_record(case, ep_name)
    note_doing(f"building case {case.id}")
    _check_fault(case)
    prefix = f"c{i}_"
    admitted = op.admit(case, build=lambda: op.build(case, prefix), max_elements=max_elements)
    if not admitted.ok:
        rec.verdict, rec.reason = admitted.verdict, admitted.reason
        return rec, None
    inputs, frag = admitted.inputs, admitted.built
    rec.onnx_node = _onnx_text(frag, prefix)
    feeds = {frag.input_names[k]: v for k, v in inputs.items()}
    return rec, Item(case, prefix, frag, inputs, feeds, dict(frag.output_names))


def run_batch(backend: Backend, cases: list[Case]) -> list[CaseRecord]:
    """Verdict records for a batch of cases, all on one backend. Its operators keep nothing of its
    cases after it (``Operator.forget``)."""
    try:
        return _run_batch(backend, cases)
    finally:
        for op in {id(c.operator): c.operator for c in cases}.values():
            op.forget()


def _run_batch(backend: Backend, cases: list[Case]) -> list[CaseRecord]:
    if runs_descriptors(backend):
        return [run_descriptor(backend, c) for c in cases]
    records: dict[str, CaseRecord] = {}
    items: dict[int, list[Item]] = {}
    for i, case in enumerate(cases):
        rec, item = prepare_case(case, i, backend.ep_name, backend.cfg.max_elements)
        records[case.id] = rec
        if item is not None:
            items.setdefault(case.opset, []).append(item)
    cfg = backend.cfg
    repeat, confirm = max(1, cfg.repeat), cfg.confirm
    for opset, group in items.items():
        groups: dict[str, list[Item]] = {}
        sides = ("ep", "cpu") if not backend.is_cpu and cfg.three_way else ("ep",)
        solved = _solve_sides(backend, group, opset, sides, repeat, groups)
        ep_out, cpu_out = solved["ep"], solved.get("cpu")
        cases_of: dict[str, _Runs] = {}
        sessions: dict[tuple[int, int], _Shared] = {}      # (outcome, group): one per session
        for it in group:
            mine = groups.get(it.case.id) or [it]
            shared = len(mine) > 1
            cpu = it.local(cpu_out[it.case.id], assignment=False) if cpu_out else None
            run = _Runs(it, cpu, len(mine), shared)
            out = ep_out[it.case.id]
            session = sessions.get((id(out), id(mine)))
            if session is None:
                session = sessions[id(out), id(mine)] = _Shared(mine, out)
            run.add_batch(backend, _faulted(it.case.id, out, shared), session=session)
            cases_of[it.case.id] = run
        suspects = [r for r in cases_of.values() if confirm and r.shared and V.needs_confirming(r.batch_judgement())]
        if suspects:
            _confirm(backend, suspects, opset, repeat, groups)
        for it in group:
            cases_of[it.case.id].finish(records[it.case.id], repeat, len(group), cfg.save_outputs)
    return [records[c.id] for c in cases]


class _Runs:
    """The runs of one case in a batch: its shared session's (``repeat`` runs, then the session
    again), and its runs alone; each run judged (``verdict.judge``), the whole settled by
    ``verdict.settle``."""

    def __init__(self, it: Item, cpu: Outcome | None, size: int, shared: bool):
        self.it, self.cpu, self.size, self.shared = it, cpu, size, shared
        self.batch: list[V.Judgement] = []
        self.batch_outputs: list = []
        self.alone: list[V.Judgement] | None = None
        self.alone_outputs: list = []
        self.where = self.alone_where = None
        self.ep: Outcome | None = None
        self.again = False

    def _judge(self, backend, out: Outcome, where) -> tuple[list[V.Judgement], list]:
        it = self.it
        note_doing(f"judging case {it.case.id}")
        return _judge_runs(out, lambda o: V.judge(it.case, it.inputs, o, self.cpu, where, ep_name=backend.ep_name,
                                                  ep_is_cpu=backend.is_cpu, cpu_build=backend.cpu_build))

    def add_batch(self, backend, out: Outcome, session: _Shared | None = None) -> None:
        """A run of the case's shared session; the first gives its placement (``session``: that
        session as its cases share it)."""
        if self.ep is None:
            self.where = session.placement(self.it, backend.ep_name, backend.is_cpu)
        out = self.it.local(out, assignment=False)
        if self.ep is None:
            self.ep = out
        js, outs = self._judge(backend, out, self.where)
        self.batch += js
        self.batch_outputs += outs

    def add_alone(self, backend, out: Outcome) -> None:
        out = self.it.local(out)
        self.alone_where = V.placement(self.it.node_names(), out.assignment, backend.ep_name, backend.is_cpu)
        self.alone, self.alone_outputs = self._judge(backend, out, self.alone_where)

    def batch_judgement(self) -> V.Judgement:
        return V.of_runs(self.batch)

    def finish(self, rec: CaseRecord, repeat: int, batch_size: int, save_to: str | None = None) -> None:
        j = V.settle(self.batch, repeat=repeat, batch_size=self.size, differ=_differ(self.batch_outputs),
                     alone=self.alone, alone_differ=_differ(self.alone_outputs))
        ep = self.ep
        rec.placement = self.alone_where if j.source == "alone" else self.where
        rec.timings = Timings(batch_size=batch_size, session_ms=round(ep.session_ms, 3), run_ms=round(ep.run_ms, 3),
                              reference_ms=j.reference_ms)
        rec.verdict, rec.attribution, rec.reason, rec.finding = j.verdict, j.attribution, j.reason, j.finding
        rec.labels, rec.open_points, rec.outputs, rec.cpu = j.labels, j.open_points, j.outputs, j.cpu
        rec.runs = j.runs
        if save_to:
            kept = self.alone_outputs if j.source == "alone" else self.batch_outputs
            save_outputs(save_to, self.it.case, kept[0] if kept else None)
        cap(rec)


def _judge_runs(out: Outcome, judge) -> tuple[list[V.Judgement], list]:
    """(a judgement per run of a session, the outputs of each run): ``judge(outcome)`` of each run
    (runs with the same outputs judged once; a run that raised judged as that error)."""
    if not out.ok:
        return [judge(out)], [None]
    js, seen = [], []
    for r in out.all_runs():
        if isinstance(r, str):
            js.append(judge(Outcome(False, "run", r, assignment=out.assignment)))
            continue
        same = next((j for o, j in seen if C.outputs_equal(o, r)), None)
        if same is None:
            same = judge(dataclasses.replace(out, outputs=r, runs=None))
            seen.append((r, same))
        js.append(same)
    return js, out.all_runs()


def _differ(outputs: list) -> dict[str, int]:
    """Output -> the most elements in which a run's outputs differ from the first run's (runs
    that gave outputs)."""
    done = [o for o in outputs if isinstance(o, dict)]
    out: dict[str, int] = {}
    for o in done[1:]:
        for k, n in C.outputs_differ(done[0], o).items():
            out[k] = max(n, out.get(k, 0))
    return out


def _confirm(backend, suspects: list[_Runs], opset: int, repeat: int, groups: dict[str, list[Item]]) -> None:
    """Cases whose EP side failed in a shared session: each run alone (its own model and session,
    ``repeat`` runs); those right alone and wrong in a single shared run, their shared sessions
    once more (a race that struck that run, or a dependence on the batch)."""
    outs = backend.run_many([_job([r.it], opset, "ep", repeat) for r in suspects])
    for r, out in zip(suspects, outs):
        r.add_alone(backend, _faulted(r.it.case.id, out, False))
    again = [r for r in suspects if len(r.batch) < 2 and r.alone and {j.verdict for j in r.alone} == {"PASS"}]
    sessions: dict[tuple[str, ...], list[_Runs]] = {}
    for r in again:
        sessions.setdefault(tuple(it.case.id for it in groups[r.it.case.id]), []).append(r)
    if not sessions:
        return
    firsts = [groups[rs[0].it.case.id] for rs in sessions.values()]
    outs = backend.run_many([_job(g, opset, "ep") for g in firsts])
    for rs, out in zip(sessions.values(), outs):
        for r in rs:
            r.add_batch(backend, _faulted(r.it.case.id, out, True))


# ----------------------------------------------------------------------------------------------
# Descriptor lanes (dml-direct): the descriptor itself, no ONNX graph
# ----------------------------------------------------------------------------------------------

def run_descriptor(backend, case: Case) -> CaseRecord:
    """One case on a backend that runs descriptors: admitted by the operator with the backend's
    own device asked whether it supports it (NOT_SUPPORTED: its answer), run, judged against the
    DirectML reference. ``expressible()`` does not apply: these lanes run what ONNX cannot
    express. An ONNX-side variant runs the descriptor it was derived from, on the case's inputs
    (lanes/dml_direct.py)."""
    rec = base_record(case, backend.ep_name)
    note_doing(f"running case {case.id}")
    _check_fault(case)
    admitted = case.operator.admit(case, size=False, expressible=False, unsupported=backend.unsupported)
    if not admitted.ok:
        rec.verdict, rec.reason = admitted.verdict, admitted.reason
        return rec
    dcase, inputs = descriptor_case(case), admitted.inputs
    repeat = max(1, backend.cfg.repeat)
    out = backend.run(dcase, inputs)
    if out.ok and repeat > 1:     # runs 2..N: the descriptor compiled again, on the same device and harness
        again = [backend.run(dcase, inputs) for _ in range(repeat - 1)]
        out = dataclasses.replace(out, runs=[o.outputs if o.ok else f"[{o.stage}] {o.error}" for o in again])
    out = _faulted(case.id, out, False)
    js, outputs = _judge_runs(out, lambda o: V.judge(dcase, inputs, o, None, None, ep_name=backend.ep_name,
                                                     ep_is_cpu=False, semantics="dml"))
    j = V.settle(js, repeat=repeat, differ=_differ(outputs))
    rec.placement = backend.placement()
    rec.timings = Timings(batch_size=1, session_ms=round(out.session_ms, 3), run_ms=round(out.run_ms, 3),
                          reference_ms=j.reference_ms)
    for name in ("verdict", "attribution", "reason", "labels", "open_points", "outputs", "finding", "runs"):
        if hasattr(j, name) and hasattr(rec, name):
            setattr(rec, name, getattr(j, name))
    if onnx_side_variant(case):
        rec.labels = sorted(set(rec.labels) | {VARIANT_LABEL})
    if backend.cfg.save_outputs:
        save_outputs(backend.cfg.save_outputs, dcase, outputs[0] if outputs else None, "descriptor", case.id)
    return cap(rec)
