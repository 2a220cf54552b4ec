"""EP outputs kept for judging again later (``run --save-outputs DIR``), in the layout
``judge --outputs`` reads, the ONNX backend-test layout::

    DIR/<case id>/output_K.pb        a TensorProto named as output K

Output K is the K-th output of the case's ONNX graph (``onnx`` semantics), or of its DirectML
operator's output tensors on a lane that runs descriptors (``descriptor`` semantics). What is kept
is the answer the record's verdict was given on: the first run of the session that settled it
(the case's shared session, or its run alone where that settled the verdict). A case whose EP
gave no outputs (an error, a refusal, a crash) keeps nothing.

A later judge of other bounds, or of another revision of the bench, judges the same answers with
``onnx-dml-bench judge --cases CASES --outputs DIR --ep EP`` without the device that gave them."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from onnx import numpy_helper

from .cases import Case

__all__ = ["output_names", "save_outputs"]


def output_names(case: Case, semantics: str) -> list[str]:
    """The case's outputs in the order of ``output_K.pb``: its ONNX graph's outputs, or its
    DirectML operator's output tensors."""
    op = case.operator
    if semantics == "descriptor":
        return [f.tensor for f in op.layout(case.desc) if f.kind == "tensor" and f.role == "output" and f.present]
    return [o.name for o in op.to_onnx(case).graph.output]


def save_outputs(folder: str | os.PathLike, case: Case, outputs, semantics: str = "onnx",
                 case_id: str | None = None) -> bool:
    """Write ``outputs`` (output name -> array) of ``case`` under ``folder``/<case id>/ (``case_id``:
    the id of the case it was derived from, for a descriptor run of an ONNX-side variant); whether
    anything was written (nothing for an answer that is not a set of outputs). Each file is
    written whole or not at all (a temporary file renamed), so a run cut off leaves no torn file."""
    if not isinstance(outputs, dict) or not outputs:
        return False
    names = output_names(case, semantics)
    if any(n not in outputs for n in names):
        return False
    dest = Path(folder) / (case_id or case.id)
    dest.mkdir(parents=True, exist_ok=True)
    for k, n in enumerate(names):
        path = dest / f"output_{k}.pb"
        tmp = dest / f".output_{k}.pb.{os.getpid()}"
        tmp.write_bytes(numpy_helper.from_array(np.asarray(outputs[n]), n).SerializeToString())
        os.replace(tmp, path)
    return True
