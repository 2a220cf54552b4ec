"""What the known deviations of the pooling operators share: predicates over a case and its inputs
(``Operator.deviations`` of max_pooling2.py, average_pooling1.py and roi_pooling.py), and the
deviations MaxPool and AveragePool have in common, made once per operator (:func:`shared`) so that
each key names one operator.

Every predicate takes ``(case, inputs)``, ``inputs`` being the case's arrays (``case.inputs()``).
"""
from __future__ import annotations

import numpy as np

from . import _onnx_pool as O
from . import _pooling as P
from .base import ONNX_REFERENCE, ORT_CPU, Deviation, Operator


def stride_1_path(case, inputs=None) -> bool:
    """onnx.reference runs MaxPool through a separate generic path when every stride and every
    dilation is 1."""
    return all(s == 1 for s in case.desc.Strides) and all(d == 1 for d in case.desc.Dilations)


def x_has_nan(case, inputs) -> bool:
    x = inputs["X"]
    return x.dtype.kind == "f" and bool(np.isnan(x).any())


def answer_has_neg_inf(case, inputs) -> bool:
    """The case's answer (``Operator.expected``: what its ONNX graph must output) holds -inf."""
    y = case.operator.expected(case, inputs)["Y"]
    return y.dtype.kind == "f" and bool(np.isneginf(y).any())


def same_with_dilation(case, inputs=None) -> bool:
    return case.v.get("auto_pad", "NOTSET").startswith("SAME") and any(d > 1 for d in case.desc.Dilations)


def valid_with_dilation(case, inputs=None) -> bool:
    return case.v.get("auto_pad") == "VALID" and any(d > 1 for d in case.desc.Dilations)


def window_abs_sum_exceeds_type_max(case, inputs) -> bool:
    """Some window holds finite values whose magnitudes add up past the type's largest finite value
    (the input holds values near +-max): sums in the input's precision can overflow, and any
    summation order other than the reference's can lose the small terms. An input infinity is not
    counted: it gives the same infinity in every order."""
    x = inputs["X"]
    xf = x.astype(np.float64)
    wins = P.windows(case.desc)
    total = P.window_mean(np.abs(np.where(np.isfinite(xf), xf, 0.0)), wins, [np.ones(w.out) for w in wins])   # divided by 1
    return bool((total > np.finfo(x.dtype).max).any())


def sum_may_overflow_in(dtype: str):
    """Predicate: a ``dtype`` case whose window sums can pass the type's largest finite value."""
    return lambda case, inputs: case.dtype == dtype and window_abs_sum_exceeds_type_max(case, inputs)


def valid_ceil_grows(case, inputs=None) -> bool:
    """auto_pad VALID with ceil_mode=1 where the explicit-pad ceil formula would give one more
    window than the VALID formula on some axis ((In - window) not a multiple of the stride)."""
    if case.v.get("auto_pad") != "VALID" or not case.v.get("ceil_mode"):
        return False
    d = case.desc
    return any((d.InputSizes[i + 2] - eff) % d.Strides[i] for i, eff in enumerate(P.effective_window(d)))


def same_negative_pad(case, inputs=None) -> bool:
    """auto_pad SAME where the ONNX pad formula gives a negative total on some axis."""
    if not case.v.get("auto_pad", "NOTSET").startswith("SAME"):
        return False
    _, a, _ = O.case_node(case)
    return "same-negative-pad" in O.axes(a, case.desc.InputSizes[2:])[1]


def pad_not_below_kernel(case, inputs=None) -> bool:
    """The graph's explicit pads reach the kernel on some axis (a begin or end pad >= the kernel)."""
    pads = P.graph_pads(case)
    k = case.desc.WindowSize
    return pads is not None and any(pads[i] >= k[i] or pads[i + len(k)] >= k[i] for i in range(len(k)))


def shared(op: Operator, tag: str, ort_clamps_from: int | None, oref_negative_pad: str,
           ort_fails_negative_pad=None, ort_negative_pad_text: str = "") -> list[Deviation]:
    """The deviations MaxPool and AveragePool share, for ``op`` (its ONNX op ``op.onnx_op``), keyed
    ``ort-<tag>-...`` / ``oref-<tag>-...``. ``ort_clamps_from``: the opset from which ONNX Runtime
    clamps a negative SAME pad total to 0 (None: never); ``ort_fails_negative_pad``: a predicate
    over a case, the kernels of ONNX Runtime that fail the run on one below that opset (default:
    all of them), and ``ort_negative_pad_text`` what ONNX Runtime does; ``oref_negative_pad``: what
    onnx.reference does with one."""
    name = op.onnx_op
    fails = ort_fails_negative_pad or (lambda c: True)
    return [
        op.deviation(f"ort-{tag}-same-pads-ignore-dilation", ORT_CPU, "bug", same_with_dilation,
                     f"{name} auto_pad SAME_UPPER/SAME_LOWER with dilations > 1: the SAME pads are computed from "
                     "the undilated kernel, so the output is smaller than ceil(In/Stride); on an input smaller than "
                     "the dilated window the size goes negative and the run is refused", refuses=True,
                     refusal=r"output dimension is negative|dimension.*negative"),
        op.deviation(f"ort-{tag}-valid-ceil-mode", ORT_CPU, "bug", valid_ceil_grows,
                     f"{name} auto_pad VALID with ceil_mode=1: the output size is the explicit-pad ceil formula "
                     "(one more window where (In - window) is not a multiple of the stride); the ONNX text gives "
                     "ceil((In - window + 1) / stride), which is the floor size: ceil_mode changes nothing under VALID"),
        op.deviation(f"ort-{tag}-same-negative-pad", ORT_CPU, "limitation",
                     lambda c, x: (ort_clamps_from is None or c.opset < ort_clamps_from) and fails(c)
                     and same_negative_pad(c),
                     f"{name} auto_pad SAME with a stride larger than the dilated window: the ONNX pad formula is "
                     f"negative (the text does not clamp it, and pads must be >= 0: open point same-negative-pad); "
                     f"{ort_negative_pad_text}", refusal=r"padding values must be non-negative"),
        op.deviation(f"ort-{tag}-pad-not-below-kernel", ORT_CPU, "limitation", pad_not_below_kernel,
                     f"{name} with a pad as large as the kernel on some axis: ONNX Runtime refuses the session "
                     "('Pad should be smaller than kernel'); the ONNX text puts no such limit on pads",
                     refusal=r"Pad should be smaller than kernel"),
        op.deviation(f"oref-{tag}-same-negative-pad", ONNX_REFERENCE, "bug", same_negative_pad,
                     f"{name} auto_pad SAME with a stride larger than the window (negative pad total): "
                     + oref_negative_pad),
    ]
