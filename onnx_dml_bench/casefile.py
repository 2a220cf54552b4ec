"""Case files: JSON or YAML lists of cases a person can write by hand.

    cases:
      - op: max_pooling2            # or DML_MAX_POOLING2_OPERATOR_DESC
        opset: 12                    # optional: the operator's default
        descriptor: {InputSizes: [1,1,2,2], DataType: FLOAT32, DimensionCount: 2, Strides: [1,1],
                     WindowSize: [2,2], StartPadding: [0,0], EndPadding: [0,0], Dilations: [1,1],
                     OutputIndicesDataType: UINT32}
        onnx: {ceil_mode: 0}         # optional ONNX-side options
        inputs: {values: {X: [1, 1, 1, 1]}}     # or {family: ties, seed: 7}

Every error names the file, the case (index and id if given) and the field, before anything runs,
on one line. Case files are read within the bounds of :mod:`safeload` (size, nesting depth, YAML
aliases counted as what they expand to): a crafted file is refused, never expanded.
"""
from __future__ import annotations

import json
from pathlib import Path

from .cases import Case, make_variant
from .outdir import write_text
from .ops.base import DescriptorError
from . import registry
from .safeload import UntrustedFileError, brief, load_file, one_line


class CaseFileError(ValueError):
    pass


#: the most explicit input values a case may hold (all its inputs together). A result record keeps
#: its case's explicit values, so that the case can be run again from the record; a record must stay
#: a record (far under the results reader's 32 MiB line), never a tensor: a 256 x 256 input at most
#: (about 1.7 MB of JSON in the worst case).
MAX_EXPLICIT_VALUES = 1 << 16
#: the most text a case's ``source`` may hold (kept in each record too)
MAX_SOURCE_BYTES = 64 << 10


def _load_text(path: Path):
    try:
        return load_file(path, what="case file", pipe_ok=True)     # `run --cases <(...)`: read once
    except UntrustedFileError as e:
        raise CaseFileError(str(e)) from None


def case_from_dict(d: dict, where: str = "case", max_elements: int | None = None) -> Case:
    """The case of one case-file entry ``d``; CaseFileError naming ``where`` and the field. A
    tensor over ``max_elements`` elements (default: the bench's limit,
    ``ops.base.MAX_TENSOR_ELEMENTS``) is refused, naming the tensor."""
    def err(field: str, msg: str):
        return CaseFileError(one_line(f"{where}: {field}: {msg}"))

    if not isinstance(d, dict):
        raise err("case", f"must be a mapping, got {type(d).__name__}")
    known = {"id", "op", "opset", "descriptor", "onnx", "inputs", "note", "source"}
    extra = sorted(set(d) - known)
    if extra:
        raise err(extra[0], f"unknown key (known: {', '.join(sorted(known))})")
    if "op" not in d:
        raise err("op", f"is required (one of {', '.join(registry.names())})")
    try:
        op = registry.get(str(d["op"]))
    except KeyError as e:
        raise err("op", str(e.args[0])) from None
    if "descriptor" not in d:
        raise err("descriptor", "is required")
    onnx_opts = d.get("onnx") or {}
    if not isinstance(onnx_opts, dict):
        raise err("onnx", "must be a mapping of ONNX-side options")
    raw = d["descriptor"]
    if isinstance(raw, dict):
        try:
            raw = op.fill_descriptor(raw, onnx_opts)     # fields the ONNX attributes decide, where left out
        except DescriptorError as e:
            raise err(e.field, e.rule) from None
    try:
        desc = op.Desc.from_dict(raw)
    except DescriptorError as e:
        raise err(f"descriptor.{e.field}", e.rule) from None
    opset = d.get("opset", op.default_opset)
    if not isinstance(opset, int) or isinstance(opset, bool) or opset < 1:
        raise err("opset", f"must be a positive integer, got {brief(opset)}")
    inputs = d.get("inputs") or {"family": "random", "seed": 0}
    if not isinstance(inputs, dict):
        raise err("inputs", "must be {family, seed} or {values: {NAME: [...]}}")
    values = None
    family, seed = inputs.get("family", "random"), inputs.get("seed", 0)
    if "values" in inputs:
        vals = inputs["values"]
        if not isinstance(vals, dict):
            raise err("inputs.values", "must map input names to flat lists of numbers")
        shapes = op.input_shapes(desc)
        missing = sorted(set(shapes) - set(vals))
        if missing:
            raise err(f"inputs.values.{missing[0]}", f"is required (inputs: {', '.join(shapes)})")
        items = []
        total = 0
        for name, flat in vals.items():
            if name not in shapes:
                raise err(f"inputs.values.{name}", f"is not an input of {op.key} (inputs: {', '.join(shapes)})")
            if not isinstance(flat, list):
                raise err(f"inputs.values.{name}", "must be a flat list of numbers")
            total += len(flat)
            if total > MAX_EXPLICIT_VALUES:
                raise err(f"inputs.values.{name}", f"explicit values are kept in each result record: at most "
                                                   f"{MAX_EXPLICIT_VALUES:,} numbers per case; give a larger "
                                                   f"tensor as inputs: {{family, seed}}")
            n = 1
            for s in shapes[name]:
                n *= s
            if len(flat) != n:
                raise err(f"inputs.values.{name}", f"has {len(flat)} values, shape {list(shapes[name])} needs {n}")
            for i, x in enumerate(flat):
                ok = (isinstance(x, (int, float)) and not isinstance(x, bool)) or (isinstance(x, str) and x.lower() in ("nan", "inf", "-inf", "-0.0", "+inf"))
                if not ok:
                    raise err(f"inputs.values.{name}[{i}]", f"must be a number (or 'nan', 'inf', '-inf', '-0.0'), got {brief(x)}")
            items.append((name, tuple(_number(x) for x in flat)))
        values = tuple(sorted(items))
        family, seed = "explicit", 0
    else:
        if family not in op.accepted_families(desc.DataType):
            raise err("inputs.family", f"{brief(family)} does not apply to {desc.DataType} for {op.key} "
                                       f"(families: {', '.join(op.accepted_families(desc.DataType))})")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise err("inputs.seed", f"must be an integer, got {brief(seed)}")
    source = d.get("source")
    if source is not None and not isinstance(source, dict):
        raise err("source", "must be a mapping (where the case comes from)")
    if source is not None and len(json.dumps(source, default=str)) > MAX_SOURCE_BYTES:
        raise err("source", f"more than {MAX_SOURCE_BYTES >> 10} KiB of text: where a case comes from is a few "
                            f"names (it is kept in each result record)")
    case = Case(op, desc, opset, make_variant(**onnx_opts), family, seed, values, source)
    try:
        op.validate(desc)
        op.check_size(desc, max_elements)
    except DescriptorError as e:
        raise err(f"descriptor.{e.field}", e.rule) from None
    try:
        op.check_variant(case)
    except DescriptorError as e:
        raise err(e.field, e.rule) from None
    return op.canonical(case)


def _number(x):
    """Explicit values in one canonical form, so a case rebuilt from its own dump keeps its id."""
    if isinstance(x, str):
        return float(x.replace("+", ""))
    return x


def load(path: str | Path, max_elements: int | None = None) -> list[Case]:
    """The cases of a case file (``case_from_dict`` of each entry, with ``max_elements``)."""
    return [case for case, _ in load_noted(path, max_elements)]


def load_noted(path: str | Path, max_elements: int | None = None) -> list[tuple[Case, str]]:
    """The cases of a case file, each with its ``note`` (else its ``id``, else ""): a name for a
    person, e.g. the layer of a network that a case stands for. ``max_elements``: as
    ``case_from_dict``."""
    path = Path(path)
    if path.is_dir():
        raise CaseFileError(f"{path}: is a folder, not a case file")
    if not path.exists():
        raise CaseFileError(f"{path}: no such file")
    data = _load_text(path)
    if isinstance(data, dict) and "cases" in data:
        data = data["cases"]
    if not isinstance(data, list):
        raise CaseFileError(f"{path}: must hold a list of cases (or {{cases: [...]}})")
    if not data:
        raise CaseFileError(f"{path}: no cases (the list of cases is empty)")
    out = []
    for i, d in enumerate(data):
        label = f"{path}: case {i}" + (f" ({one_line(d.get('id'), 80)})" if isinstance(d, dict) and d.get("id") else "")
        try:
            out.append((case_from_dict(d, label, max_elements), str(d.get("note") or d.get("id") or "")))
        except CaseFileError as e:
            raise CaseFileError(one_line(e)) from None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError) as e:
            # a value of a type no check above expected: still one line naming file and case
            raise CaseFileError(one_line(f"{label}: invalid case: {type(e).__name__}: {e}")) from None
    return out


def dump(cases: list[Case], path: str | Path) -> None:
    path = Path(path)
    doc = {"schema": "onnx-dml-bench/cases/1", "cases": [c.to_dict() for c in cases]}
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml
        write_text(path, yaml.safe_dump(doc, sort_keys=False))
    else:
        write_text(path, json.dumps(doc, indent=1) + "\n")


def record_case_dict(rec) -> dict:
    """The case of a result record (record.CaseRecord) as a case-file entry."""
    if rec.case:
        return dict(rec.case)
    d = {"id": rec.case_id, "op": rec.op, "opset": rec.opset, "descriptor": rec.descriptor}
    if rec.onnx:
        d["onnx"] = rec.onnx
    d["inputs"] = {"family": rec.family, "seed": rec.seed}
    if rec.source:
        d["source"] = rec.source
    return d


def case_from_record(rec, max_elements: int | None = None) -> Case:
    """Rebuild the case of a result record (record.CaseRecord), within ``max_elements``."""
    return case_from_dict(record_case_dict(rec), f"result {rec.case_id}", max_elements)
