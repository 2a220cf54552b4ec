"""RoiAlign's bug classes for the judge's power (``onnx-dml-bench mutants``): the reference under a
modified reading or other batch indices, each with its source."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...dtypes import DML_TO_NUMPY
from .. import _mutants as M
from ..base import UINT_MAX
from .reference import reading

SRC_HALF_PIXEL = ("RoiAlign's half-pixel offset: ONNX RoiAlign-16 added coordinate_transformation_mode because "
                  "opset 10's implementations shifted every sample by half a pixel (output_half_pixel vs half_pixel); "
                  "torchvision's roi_align aligned=False/True")
SRC_GRID = ("RoiAlign's sampling grid: samples at (i + 0.5) * bin / n from the bin's start (the DirectML page, "
            "Mask R-CNN's RoIAlign); a grid one step off, or one sample more per bin, reads other points")
SRC_RA_BATCH = "BatchIndicesTensor read with an offset (the next batch)"


def _reading(name: str, change):
    def make(s):
        d = s.case.desc
        rd = reading(d)
        ch = change(rd)
        if ch is None:
            return
        y = s.op.compute(s.case, s.inputs, replace(rd, **ch)).y.astype(DML_TO_NUMPY[d.DataType])
        yield name, {"Y": y}
    return make


def _more_samples(rd):
    if rd.adaptive:
        return {"min_samples": 2}
    if rd.min_samples == rd.max_samples and rd.max_samples < UINT_MAX:
        return {"min_samples": rd.min_samples + 1, "max_samples": rd.max_samples + 1}
    return None


def _next_batch(s):
    n = s.case.desc.InputSizes[0]
    if n < 2:
        return
    b = np.asarray(s.inputs["batch_indices"])
    moved = {**s.inputs, "batch_indices": ((b.astype(np.int64) + 1) % n).astype(b.dtype)}
    yield "", {"Y": s.op.compute(s.case, moved).y.astype(DML_TO_NUMPY[s.case.desc.DataType])}


MUTANTS = (
    M.MutantClass("half-pixel-shift", SRC_HALF_PIXEL,
                  _reading("offset", lambda rd: {"input_offset": rd.input_offset - 0.5 if rd.input_offset else 0.5}),
                  text="the input pixel offset half a pixel off"),
    M.MutantClass("sampling-grid-shift", SRC_GRID, _reading("one-step", lambda rd: {"output_offset": rd.output_offset - 1.0}),
                  text="every sample one step later along both axes"),
    M.MutantClass("samples-per-bin+1", SRC_GRID, _reading("count", _more_samples),
                  text="one sample more per bin and axis (at least two where adaptive)"),
    M.MutantClass("roi-next-batch", SRC_RA_BATCH, _next_batch, text="every region read in the next batch"),
    M.D3D_FLUSH,
    M.alternatives_class(),
)
