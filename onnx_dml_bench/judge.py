"""Judging outputs produced anywhere: a hardware lab runs the bench's cases where the bench cannot
(DxDispatch or a native harness on Windows hardware, a browser's WebNN, another runtime) and hands
back what they gave; the bench judges them as ``run`` judges an EP's outputs, and writes the same
records.

The cases come from a case file, a fixtures folder written by ``onnx-dml-bench fixtures`` (its
``index.json`` and case folders; each case is judged on the inputs its fixture holds) or one
fixture (or bundle) folder. The outputs lie in the ONNX backend-test layout, one folder per case
id::

    OUTPUTS/<case id>/output_K.pb                  (or OUTPUTS/<case id>/test_data_set_0/output_K.pb)

``output_K.pb`` is a TensorProto of output K, in the order of the case's graph outputs (``onnx``
semantics: the ONNX graph the fixture holds) or of its DirectML operator's output tensors
(``descriptor`` semantics: what DirectML itself computes for the descriptor, e.g. DxDispatch's
outputs, judged as the direct lane judges them); a tensor's name, if set, must be the output's.
A case without its folder, with another set of files, or with a file that cannot be read gets the
verdict ERROR naming what is wrong; every other case is judged (``verdict.judge``), with ONNX
Runtime's CPU EP of this machine as the second side unless ``cpu`` is off. Where the case's nodes
ran is not known: the EP is the one the user names, recorded as asserted, never as proven
(:data:`ASSERTED`, the label :data:`PLACEMENT_LABEL`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import verdict as V
from .casefile import CaseFileError, case_from_dict
from .casefile import load as load_case_file
from .cases import Case
from .execute.batch import Item, base_record, prepare_case, solve
from .fixtures import FixtureError, load_fixture, read_tensor
from .fixtures.load import CASE_META, DATA_SET, INDEX_NAME
from .lanes.catalog import provider_name, runs_descriptors
from .lanes.base import VARIANT_LABEL, RunConfig, descriptor_case, onnx_side_variant, ort_package
from .outcome import Outcome
from .plan import resolve_lane
from .record import PLACEMENT_ASSERTED, PLACEMENT_LABEL, CaseRecord, Placement, Timings
from .safeload import UntrustedFileError, load_file, one_line
from .saved import output_names

SEMANTICS = ("onnx", "descriptor")
#: the placement proof of a judged record
ASSERTED = PLACEMENT_ASSERTED
#: cases whose CPU side runs in one session
CPU_BATCH = 64

__all__ = ["ASSERTED", "JudgeError", "PLACEMENT_LABEL", "SEMANTICS", "Source", "ep_name", "judge_outputs",
           "load_sources", "read_outputs"]


class JudgeError(ValueError):
    """A case source or an outputs folder that cannot be used: one line naming it."""


@dataclass
class Source:
    """One case to judge, and the inputs it was fed when its fixture holds them (else its own)."""
    case: Case
    inputs: dict | None = None
    where: str = ""


def ep_name(name: str) -> str:
    """The EP's name in the records: the provider name of one of the bench's keys (the lane catalog's),
    else as given."""
    raw = (name or "").strip()
    if not raw:
        raise JudgeError("--ep: name the EP (or device, runtime) that produced the outputs")
    return provider_name(raw) or raw


def default_semantics(ep: str) -> str:
    """``descriptor`` for the name of a lane that runs descriptors (DirectML itself, the direct
    lane's), ``onnx`` otherwise."""
    return "descriptor" if runs_descriptors(ep) else "onnx"


# ----------------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------------

def _fixture_source(folder: Path) -> Source:
    try:
        _model, inputs, _expected, meta = load_fixture(folder)
    except FixtureError as e:
        raise JudgeError(one_line(e)) from None
    if not meta.get("case"):
        raise JudgeError(f"{folder / CASE_META}: holds no case (not a fixture of onnx-dml-bench)")
    try:
        case = case_from_dict(meta["case"], str(folder / CASE_META))
    except CaseFileError as e:
        raise JudgeError(one_line(e)) from None
    return Source(case, inputs, str(folder))


def load_sources(path: str | Path) -> list[Source]:
    """The cases of a case file, of a fixtures folder (``index.json``) or of one fixture folder
    (``case.json``); :class:`JudgeError` names what cannot be used."""
    path = Path(path)
    if path.is_dir():
        if (path / INDEX_NAME).is_file():
            try:
                index = load_file(path / INDEX_NAME, what="fixture index")
                entries = [str(e["path"]) for e in index.get("cases", [])]
            except UntrustedFileError as e:
                raise JudgeError(str(e)) from None
            except (AttributeError, KeyError, TypeError) as e:
                raise JudgeError(one_line(f"{path / INDEX_NAME}: not a fixture index ({e})")) from None
            if not entries:
                raise JudgeError(f"{path / INDEX_NAME}: lists no exported case")
            out = []
            for p in entries:
                if Path(p).name != p or p in ("", ".", ".."):
                    raise JudgeError(f"{path / INDEX_NAME}: case path {p!r} is not a plain folder name")
                out.append(_fixture_source(path / p))
            return out
        if (path / CASE_META).is_file():
            return [_fixture_source(path)]
        raise JudgeError(f"--cases {path}: a folder that is neither a fixtures folder ({INDEX_NAME}) nor a fixture "
                         f"({CASE_META})")
    try:
        return [Source(c, None, str(path)) for c in load_case_file(path)]
    except CaseFileError as e:
        raise JudgeError(one_line(e)) from None


# ----------------------------------------------------------------------------------------------
# The outputs
# ----------------------------------------------------------------------------------------------

def read_outputs(outputs: Path, case_id: str, names: list[str]) -> dict[str, np.ndarray]:
    """The outputs given for a case (:class:`JudgeError` naming what is missing or malformed)."""
    folder = outputs / case_id
    if not folder.is_dir():
        raise JudgeError(f"no outputs for this case: {folder} is missing")
    ds = folder
    if not any(folder.glob("output_*.pb")) and (folder / DATA_SET).is_dir():
        ds = folder / DATA_SET
    found = sorted(p.name for p in ds.glob("output_*.pb"))
    want = [f"output_{k}.pb" for k in range(len(names))]
    if sorted(found) != sorted(want):
        raise JudgeError(f"{ds} holds {', '.join(found) or 'no output_K.pb file'}; the case has {len(names)} "
                         f"output(s), {', '.join(f'{w} ({n})' for w, n in zip(want, names))}")
    try:
        return {n: read_tensor(outputs, ds / w, n) for w, n in zip(want, names)}
    except FixtureError as e:
        raise JudgeError(one_line(e)) from None


def stray_folders(outputs: Path, ids: set[str]) -> list[str]:
    """Folders of ``outputs`` that name no case judged (reported, never ignored silently)."""
    try:
        return sorted(p.name for p in outputs.iterdir() if p.is_dir() and p.name not in ids)
    except OSError:
        return []


# ----------------------------------------------------------------------------------------------
# Judging
# ----------------------------------------------------------------------------------------------

@dataclass
class _Pending:
    rec: CaseRecord
    item: Item
    outputs: dict


@dataclass
class JudgeRun:
    """What :func:`judge_outputs` found besides the records."""
    stray: list[str] = field(default_factory=list)
    #: cases whose outputs were read and judged (0: nothing judged, whatever the verdicts say)
    judged: int = 0


def _asserted(rec: CaseRecord) -> None:
    rec.placement = Placement(fallback_disabled=False, nodes=None, proof=ASSERTED)
    rec.labels = sorted(set(rec.labels) | {PLACEMENT_LABEL})


def _with_inputs(item: Item, inputs: dict) -> str | None:
    """Feed ``item`` the fixture's ``inputs`` (the case's own names); a reason when they do not fit."""
    if set(inputs) != set(item.inputs):
        return f"the fixture's inputs {sorted(inputs)} are not the case's {sorted(item.inputs)}"
    for k, a in inputs.items():
        b = item.inputs[k]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"the fixture's input {k} is {a.dtype}{list(a.shape)}, the case's {b.dtype}{list(b.shape)}"
    item.inputs = dict(inputs)
    item.feeds = {item.frag.input_names[k]: v for k, v in inputs.items()}
    return None


def _descriptor_record(src: Source, ep: str, outputs: Path) -> tuple[CaseRecord, bool]:
    """A case judged as its descriptor (DirectML's own semantics), as the direct lane does; and
    whether its outputs were judged."""
    case = src.case
    rec = base_record(case, ep)
    admitted = case.operator.admit(case, size=False, expressible=False)
    if not admitted.ok:
        rec.verdict, rec.reason = admitted.verdict, admitted.reason
        return rec, False
    inputs = src.inputs if src.inputs is not None else admitted.inputs
    dcase = descriptor_case(case)
    _asserted(rec)
    try:
        got = read_outputs(outputs, case.id, output_names(dcase, "descriptor"))
    except JudgeError as e:
        rec.verdict, rec.reason = "ERROR", f"outputs: {e}"
        return rec, False
    j = V.judge(dcase, inputs, Outcome(True, "done", None, got), None, None, ep_name=ep, ep_is_cpu=False,
                semantics="dml")
    _fill(rec, j)
    if onnx_side_variant(case):
        rec.labels = sorted(set(rec.labels) | {VARIANT_LABEL})
    return rec, True


def _fill(rec: CaseRecord, j: V.Judgement) -> None:
    rec.timings = Timings(batch_size=1, reference_ms=j.reference_ms)
    rec.verdict, rec.attribution, rec.reason, rec.finding = j.verdict, j.attribution, j.reason, j.finding
    rec.labels = sorted(set(j.labels) | set(rec.labels))
    rec.open_points, rec.outputs, rec.cpu = j.open_points, j.outputs, j.cpu


def judge_outputs(sources: list[Source], outputs: str | Path, ep: str, *, semantics: str = "onnx",
                  cpu: bool = True, on_records=None, found: JudgeRun | None = None) -> list[CaseRecord]:
    """The records of ``sources`` judged on the outputs in the folder ``outputs``, produced by the
    EP ``ep`` (as the user names it). ``semantics``: what the outputs answer, the case's ONNX graph
    ("onnx") or its DirectML descriptor ("descriptor"). ``cpu``: ONNX Runtime's CPU EP of this
    machine as the second side (ONNX graphs only). ``on_records(list)`` is called as records are
    made; ``found`` gets the folders that name no case and the number of cases judged."""
    if semantics not in SEMANTICS:
        raise JudgeError(f"--semantics must be {' or '.join(SEMANTICS)}, got {semantics!r}")
    outputs = Path(outputs)
    if not outputs.is_dir():
        raise JudgeError(f"--outputs {outputs}: not a folder")
    uniq: dict[str, Source] = {}
    for s in sources:
        uniq.setdefault(s.case.id, s)
    found = found if found is not None else JudgeRun()
    found.stray = stray_folders(outputs, set(uniq))
    out: list[CaseRecord] = []

    def emit(recs):
        out.extend(recs)
        if on_records and recs:
            on_records(recs)

    if semantics == "descriptor":
        for s in uniq.values():
            rec, judged = _descriptor_record(s, ep, outputs)
            found.judged += judged
            emit([rec])
        return out
    ep_is_cpu = ep == provider_name("cpu")
    backend = None
    if cpu and not ep_is_cpu:
        backend = resolve_lane("cpu").make_backend(RunConfig())
        pkg, ver = ort_package()
        backend.cpu_build = (f"CPUExecutionProvider of {pkg} {ver} on the judging machine "
                             "(not the build that produced the outputs)")
    done: list[CaseRecord] = []
    pending: dict[int, list[_Pending]] = {}
    for i, s in enumerate(uniq.values()):
        rec, item = prepare_case(s.case, i, ep)
        if item is None:                   # refused by the admission check: that verdict, as `run` gives it
            done.append(rec)
            continue
        _asserted(rec)
        bad = _with_inputs(item, s.inputs) if s.inputs is not None else None
        if bad:
            rec.verdict, rec.reason = "ERROR", f"inputs: {bad}"
            done.append(rec)
            continue
        try:
            got = read_outputs(outputs, s.case.id, output_names(s.case, "onnx"))
        except JudgeError as e:
            rec.verdict, rec.reason = "ERROR", f"outputs: {e}"
            done.append(rec)
            continue
        pending.setdefault(s.case.opset, []).append(_Pending(rec, item, got))
    emit(done)
    for opset, group in pending.items():
        for k in range(0, len(group), CPU_BATCH):
            part = group[k:k + CPU_BATCH]
            cpu_out = solve(backend, [p.item for p in part], opset, "cpu") if backend is not None else {}
            recs = []
            for p in part:
                c = cpu_out.get(p.item.case.id)
                j = V.judge(p.item.case, p.item.inputs, Outcome(True, "done", None, p.outputs),
                            p.item.local(c) if c is not None else None, p.rec.placement, ep_name=ep,
                            ep_is_cpu=ep_is_cpu, cpu_build=backend.cpu_build if backend is not None else "")
                _fill(p.rec, j)
                recs.append(p.rec)
                found.judged += 1
            emit(recs)
    if backend is not None:
        backend.close()
    return out

