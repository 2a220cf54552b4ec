"""The pooling reference's window walk (``_pooling.window_mean`` in float64, ``_pooling.window_max``)
as compiled loops (numba; the loops are ``_pool_kernels``'s): each window's elements in scan order
(row-major over the window), work arrays of a chunk of rows, and a fixed cost per call of a few
microseconds where the NumPy walk makes tens of NumPy calls.

The same bits as the NumPy walk, by the same arithmetic:

- ``mean_rows`` and ``mean_lanes``: a window's elements, each made float64 as it is read (exactly), padding as +0.0,
  added one after the other from the first element (``total = e0``, then ``total = total + e``, as
  ``np.add(total, e, out=total)``), then divided by the window's divisor (the float64 product the
  NumPy code makes) in float64, and rounded once to the data's type by NumPy's cast. numba keeps
  IEEE arithmetic (no ``fastmath``): ``total + 0.0`` is not folded away, so -0.0 + 0.0 stays +0.0.
- ``block_sums``: a window that is one block of the input (every global pool): each channel's
  elements added in scan order the same way, eight channels at once (eight independent chains of
  additions, each the scan of its own channel), the same value as ``_block.means`` gives.
- ``max_rows`` and ``max_lanes``: the first NaN of a window, else its first maximum in scan order (a later element
  is taken where it is greater, or a NaN after numbers), padding never; the index is that element's
  flat offset (row-major or column-major spatial offsets). A window with no input element (which
  the descriptors' validation refuses) gives the type's lowest value, as the NumPy walk does, at
  its channel's first offset (the walk's index there depends on how it folds leading axes).

``tests/ops/test_pool_fused.py`` checks each against the NumPy walk, bit for bit, on random
geometries (padding, dilations, strides, 1 to 3 spatial axes), NaN, infinities, signed zeros and
subnormals. Where numba does not import, or for what these loops do not cover (more than three
spatial axes, an accumulator narrower than float64, a channel of more than ``ROW_ELEMENTS``
elements), the NumPy walk runs.

Two ways through the windows, the same operations in the same order for each window (``walk``):
a window element over a whole row of windows at once ("rows"); a window element over every row
(channel) at once, from a channels-last copy of a chunk of rows ("lanes": many channels of small
maps, the census's late layers). Additions where a NaN can arise go through ``add`` (the NaN
NumPy's np.add gives on long arrays): "rows" for a row holding a non-finite element, "lanes" for a
sum that came out NaN, made again; the loops over finite data carry no test per addition.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..jit import njit
from . import _block
from . import _pool_kernels

#: channels (rows) of at most so many elements, in and out, take the loops; larger ones the NumPy
#: walk, whose tiles split a channel too
ROW_ELEMENTS = 1 << 17
#: at most so many window-element visits in a call (outputs x window elements) take the loops: the
#: small layers, where the NumPy walk's fixed cost (tens of NumPy calls) is most of a call. Far past
#: it the walk's passes over contiguous runs (SIMD) are as fast or faster than these scalar loops
#: (``networks`` on the CPU EP, the reference's time per case against the walk's: 0.5-0.7x for
#: global windows up to 2^21 visits, 5x for those of 2^24; about 1x, 0.8-1.25x, for the others
#: from 2^18 visits)
VISITS_UP_TO = 1 << 22
#: the same for the "rows" loop, whose strided reads lose to the walk's sooner (a census MaxPool
#: 3x3/2 of 64 channels of 112x112, 1.8M visits: 1.6 ms against the walk's 1.3 ms)
ROWS_UP_TO = 1 << 20

_KERNELS = None


class Kernels(NamedTuple):
    block_sums: object     # one block per row (global pools)
    mean_rows: object      # a window element over a row of windows at once
    max_rows: object
    mean_lanes: object     # a window element over every row at once, channels last
    max_lanes: object


def _compile():
    """The loops (``_pool_kernels``, compiled on first use and kept on disk by numba beside it);
    None where numba does not import or cannot compile here."""
    global _KERNELS
    if _KERNELS is not None:
        return _KERNELS or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
        K = _pool_kernels
        for name in K.COMPILED:
            setattr(K, name, njit(K.PLAIN[name], inline="always" if name in K.INLINED else "never"))
        g = np.zeros((1, 1, 1, 1), np.float32)       # compiled (or loaded from numba's cache) here, once
        K.block_sums(np.zeros((1, 1), np.float32), np.empty(1))
        K.max_rows(g, geometry([]), np.zeros(3, np.int64), 0, np.float32(-np.inf), True, g.copy(),
                   np.empty((1, 1, 1, 1), np.int64))
        K.mean_rows(g, geometry([]), np.ones((1, 1, 1)), np.empty((1, 1, 1, 1)))
        K.mean_lanes(g, g.reshape(1, 1), geometry([]), np.ones((1, 1, 1)), np.empty((1, 1, 1, 1)), np.empty(1))
        K.max_lanes(g.reshape(1, 1), geometry([]), np.zeros(3, np.int64), 0, np.float32(-np.inf), True, g.copy(),
                    np.empty((1, 1, 1, 1), np.int64), np.empty(1, np.float32), np.empty(1, np.int64))
    except Exception:  # noqa: BLE001 - no numba, or one that cannot compile or cache here: NumPy's code
        _KERNELS = False
        return None
    _KERNELS = Kernels(K.block_sums, K.mean_rows, K.max_rows, K.mean_lanes, K.max_lanes)
    return _KERNELS


def usable(wins, spatial, rows: int) -> "Kernels | None":
    """The loops for windows ``wins`` over ``rows`` channels of ``spatial`` elements, or None: at
    most three spatial axes; a channel of at most ROW_ELEMENTS elements, in and out (a chunk of
    whole rows keeps the work arrays small); at most VISITS_UP_TO window-element visits (ROWS_UP_TO
    for the "rows" loop)."""
    if len(wins) > 3 or math.prod(spatial) > ROW_ELEMENTS or math.prod(w.out for w in wins) > ROW_ELEMENTS:
        return None
    visits = rows * math.prod(w.out * w.k for w in wins)
    if visits > VISITS_UP_TO or (visits > ROWS_UP_TO and walk(wins, rows) == "rows"):
        return None
    return _compile()


def writable(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a C-contiguous, writable array of ``dtype`` (a copy where it is not one): the loops
    are compiled for that kind of array, and a read-only one would be a second compilation."""
    if a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, dtype, order="C")


#: at least so many rows (batch x channels), and fewer windows than LANES_BELOW along the last
#: axis: each window element over every row at once, channels last
LANES_FROM = 16
LANES_BELOW = 32


def walk(wins, rows: int) -> str:
    """Which loop walks ``rows`` rows over ``wins``: "lanes" (many rows, few windows along the last
    axis) or "rows" (a row of windows at a time)."""
    last = wins[-1].out if wins else 1
    return "lanes" if rows >= LANES_FROM and last < LANES_BELOW else "rows"


def geometry(wins) -> np.ndarray:
    """(3, 6) int64: per axis (depth, height, width; a missing one of size 1, window 1) n, k, s, d,
    begin, out."""
    rows = [(1, 1, 1, 1, 0, 1)] * (3 - len(wins)) + [(w.n, w.k, w.s, w.d, w.begin, w.out) for w in wins]
    return np.array(rows, dtype=np.int64)


def as_3d(flat: np.ndarray) -> np.ndarray:
    """(channels, *spatial) as (channels, D, H, W), leading axes of size 1 added."""
    return flat.reshape(flat.shape[0], *[1] * (4 - flat.ndim), *flat.shape[1:])
