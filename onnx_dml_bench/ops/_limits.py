"""Profile ``limits``: geometry at the boundaries where GPU implementations split or overflow work.
Each operator lists its cases (``Operator.limits``) with the boundary each probes; the ones whose
tensors exceed the run's limit (``--max-elements``, default ``ops.base.MAX_TENSOR_ELEMENTS``) are
not generated, so a bigger machine runs more of them by raising the option, never by editing code.

The boundaries (``BOUNDARIES`` names them; a case's ``source`` says which it probes):

- ``count``: batch, channel (and RoI) counts of 2^16 - 1, 2^16 and 2^16 + 1. D3D12 and Vulkan allow
  65,535 thread groups per dispatch dimension; cuDNN's pooling refuses a batch of 65,536
  (the CUDA EP: CUDNN_STATUS_NOT_SUPPORTED at [65536, 1, 1, 512], window 1x2, stride 1x2, which is
  a case here as it is);
- ``groups``: outputs of 65,535 x T + 1 elements for thread groups of T = 64, 256 and 1024 threads:
  more groups than one dispatch dimension holds when a kernel gives each thread one output;
- ``window``: windows of 2^8 to 2^20 elements (global pooling of 16x16 to 1024x1024, long strips):
  long reductions, which kernels split across threads and passes;
- ``index-2^24``: MaxPool indices above 2^24, the last integer float32 holds exactly (index
  arithmetic done in float breaks there); ``index-2^31`` and ``index-2^32``: indices past the signed
  and unsigned 32-bit ranges, where the machine allows tensors that large;
- ``f16-long-sum``: float16 averages over 2^8 to 2^20 elements of non-negative values whose sum
  stays within float16 (family ``small``): a sum kept in float16 stalls once its ULP outgrows the
  terms; summed wider and rounded once, the answer is within 1 ULP.
"""
from __future__ import annotations

import dataclasses
import math

PROFILE = "limits"
#: counts around 2^16 (batch, channels, RoIs)
COUNTS = (65535, 65536, 65537)
#: thread-group sizes whose 65,535-group limit the ``groups`` cases cross
THREADS = (64, 256, 1024)
#: the most thread groups one dispatch dimension holds (D3D12, Vulkan's minimum)
GROUPS = 65535
#: log2 of the window sizes of the ``window`` and ``f16-long-sum`` cases (square windows)
WINDOW_LOG2 = (8, 10, 12, 14, 16, 18, 20)

BOUNDARIES = {
    "count": "a batch, channel or RoI count of 2^16 - 1, 2^16 or 2^16 + 1 (65,535 thread groups per dispatch "
             "dimension; cuDNN pooling refuses a batch of 65,536)",
    "groups": "an output of 65,535 x T + 1 elements: more thread groups of T threads than one dispatch dimension holds",
    "window": "a window of 2^8 to 2^20 elements: a long reduction",
    "index-2^24": "MaxPool indices above 2^24, the last integer float32 holds exactly",
    "index-2^31": "MaxPool indices above 2^31 - 1, past the signed 32-bit range",
    "index-2^32": "MaxPool indices above 2^32 - 1, past the unsigned 32-bit range (UINT64 indices)",
    "f16-long-sum": "a float16 average of 2^8 to 2^20 non-negative elements whose sum stays within float16",
}


def case(op, desc, variant: dict, family: str, boundary: str, what: str, opset: int | None = None):
    """A ``limits`` case of ``op``, with the boundary it probes in its source."""
    c = op.make_case(desc, variant, family, opset)
    return dataclasses.replace(c, source={"profile": PROFILE, "boundary": boundary, "probes": what,
                                          "why": BOUNDARIES[boundary]})


def keep(op, cases: list, max_elements: int) -> list:
    """The cases whose descriptor is valid and whose tensors fit ``max_elements``: the others are
    not generated (a bigger limit on a bigger machine brings them in)."""
    out = []
    for c in cases:
        try:
            op.validate(c.desc)
            op.check_size(c.desc, max_elements)
            op.check_variant(c)
        except ValueError:         # ops.base.DescriptorError: invalid, or a tensor over the limit
            continue
        out.append(c)
    return out


def groups_elements(threads: int) -> int:
    """Output elements just past ``GROUPS`` thread groups of ``threads`` threads."""
    return GROUPS * threads + 1


def near_square(n: int) -> tuple[int, int]:
    """(h, w) with h * w >= n, h <= w, both close to sqrt(n)."""
    h = math.isqrt(n)
    return h, -(-n // h)


def square_side(log2: int) -> int:
    return 1 << (log2 // 2)
