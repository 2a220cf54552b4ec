"""The performance lens's pages and its comparison: perf.html (time per case and share of the device's
bandwidth, as charts) and perf-compare (slowdowns beyond the measured noise between two perf files).

Both read perf.json files (``perf.write_perf_json``: ``{"record": "perf", "eps": {EP: entry}}``, each
entry's ``cases`` with every timed run in ``samples_ms``) and nothing else; the pages are
self-contained (inline CSS and SVG, no script, no network).

A descriptor is flagged slower only when all of these hold, so a single-run difference or noise never
is (``compare_rows``):

- both sides have at least :data:`MIN_RUNS` timed runs;
- a one-sided Mann-Whitney U test over the runs says the current runs tend to be longer, at a
  family-wise error rate ``alpha`` over all the descriptors compared (Holm's step-down adjustment);
- the bootstrap 95% interval of the ratio of the medians (current / baseline) lies above 1;
- the ratio of the medians is at least ``1 + min_change``.

Within one file the timed runs of a case are independent draws only as far as the device is steady
while it is measured: the test above measures the noise within one run. On a device whose state moves
between runs (a CPU device shared with other work, as lavapipe; clocks, heat, other tenants), that is
not all the noise, and one file a side reads that drift as changes. So a side may be several perf files
of its environment, made at different times; then the run is the unit (``_compare_runs``) and a
descriptor is flagged slower only when all of these hold:

- at least :data:`MIN_NOISE_DF` run-to-run deviations over all the descriptors (so more than one file
  on at least one side), and :data:`MIN_RUNS` timed runs in every file;
- the ratio of the geometric means of the runs' medians lies beyond the run-to-run noise at the
  family-wise error rate ``alpha`` (Holm): the noise is each run's log median less its side's mean,
  pooled over every descriptor and both sides and resampled into as many runs as each side has (a
  bootstrap of the null; its p-value is the share of resamples at least as far out);
- the descriptor's own 95% interval, a hierarchical bootstrap (its runs resampled within each side,
  then the timed runs within each drawn run), lies wholly above the noise band (the central
  ``1 - alpha`` of that null): so a descriptor whose own runs disagree, one slow run among fast ones,
  is not called (the row's 95% interval is the wider of this one and the ratio moved by the pooled
  noise: a bootstrap of a few runs alone is too narrow);
- the ratio is at least ``1 + min_change``.

Faster is the mirror image. The effect size is reported as the ratio of the medians with its interval
and as the probability that a current run is longer than a baseline run (the common-language effect
size, U / (n1 n2)).
"""
from __future__ import annotations

import datetime as _dt
import math
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import EXIT_FAIL, EXIT_INCOMPLETE, EXIT_OK
from ..safeload import MAX_FILE_BYTES, UntrustedFileError, brief, loads_json, one_line, open_file, read_bytes
from . import data as D
from .html import environment, static

PERF_HTML = "perf.html"
PERF_COMPARE_HTML = "perf-compare.html"
#: fewest timed runs per side for a comparison
MIN_RUNS = 5
#: bootstrap resamples of the median ratio, and their seed (the interval is the same on every run)
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 20261125
#: EP colours in the charts (by the order the EPs appear in)
EP_COLOURS = ("#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e")


class PerfFileError(ValueError):
    """A file that is not a perf file (perf.json); the message names it."""


#: how a perf file begins (``perf.write_perf_json``); a results file begins with its environment record
_PERF_HEAD = re.compile(rb'\A\s*\{\s*"record"\s*:\s*"perf"')


def is_perf_file(path: Path) -> bool:
    """Whether ``path`` begins as a perf.json document does (``{"record": "perf", ...``), plain or
    gzipped: read no further than its first bytes, so a large results file costs nothing here."""
    try:
        if not Path(path).is_file():       # a pipe is read once, as results; a FIFO is never waited on
            return False
        with open_file(path, "perf file") as fh:
            head = fh.read(4096)
        if head[:2] == _GZIP:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 256)
        return bool(_PERF_HEAD.match(head[:256]))
    except (OSError, zlib.error):
        return False


_GZIP = b"\x1f\x8b"


def _perf_text(path: Path) -> str:
    """The text of a perf file, plain or gzipped (a large one is kept as perf.json.gz), within the
    bounds of :mod:`safeload` (the decompressed text too)."""
    data = read_bytes(path, what="perf file")
    if data[:2] == _GZIP:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text = inflate.decompress(data, MAX_FILE_BYTES + 1)
        except zlib.error as e:
            raise UntrustedFileError(f"{path}: a damaged gzip file ({e})") from None
        if len(text) > MAX_FILE_BYTES or inflate.unconsumed_tail:
            raise UntrustedFileError(f"{path}: decompresses to more than {MAX_FILE_BYTES >> 20} MiB: "
                                     "not a perf file this bench reads")
        if not inflate.eof:
            raise UntrustedFileError(f"{path}: a damaged gzip file (cut short)")
        data = text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UntrustedFileError(f"{path}: not a perf file (byte {e.start} is not UTF-8 text)") from None


def load_perf(path: Path) -> dict:
    """The perf.json document at ``path``, read within the bounds of :mod:`safeload`; PerfFileError
    (one line naming the file) otherwise."""
    try:
        doc = loads_json(_perf_text(path), str(path))
    except OSError as e:
        raise PerfFileError(one_line(f"{path}: cannot be read: {e}")) from None
    except (UntrustedFileError, ValueError) as e:
        raise PerfFileError(one_line(f"{path}: not a perf file ({e})")) from None
    if not isinstance(doc, dict) or doc.get("record") != "perf" or not isinstance(doc.get("eps"), dict):
        raise PerfFileError(f"{path}: not a perf file (perf.json of `onnx-dml-bench perf`: "
                            "{\"record\": \"perf\", \"eps\": {...}})")
    for ep, entry in doc["eps"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("cases"), list):
            raise PerfFileError(one_line(f"{path}: EP {brief(ep)}: no list of cases"))
        _check_entry(entry, f"{path}: EP {brief(ep)}")
    return doc


#: a case's fields that hold a time or a size: a number >= 0 (or absent / null)
_NUMBERS = ("median_ms", "p10_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "bytes_read", "bytes_written",
            "bandwidth_share")


#: the most timed runs of a case (``perf --runs`` at most): the tests resample them thousands of times
MAX_SAMPLES = 10_000


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _check_entry(entry: dict, where: str) -> None:
    """PerfFileError (one line naming the EP, the case and the field) for what a comparison or a page
    would read wrong: a case that is no mapping or has no id, a time that is no number >= 0."""
    for key in ("environment", "yardstick"):
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            raise PerfFileError(one_line(f"{where}: {key}: must be a mapping, got {brief(entry[key])}"))
    env = entry.get("environment") or {}
    if env.get("versions") is not None and not isinstance(env["versions"], dict):
        raise PerfFileError(one_line(f"{where}: environment.versions: must be a mapping"))
    ys = entry.get("yardstick") or {}
    best = ys.get("best")
    if best is not None:
        if not isinstance(best, str) or not isinstance(ys.get(best), dict) or not (
                ys[best].get("median_ms") is None or _number(ys[best]["median_ms"])):
            raise PerfFileError(one_line(f"{where}: yardstick.best: {brief(best)} names no measurement with a "
                                         f"median_ms >= 0"))
    if entry.get("bandwidth_gbs") is not None and not _number(entry["bandwidth_gbs"]):
        raise PerfFileError(one_line(f"{where}: bandwidth_gbs: must be a number >= 0, got {brief(entry['bandwidth_gbs'])}"))
    for i, r in enumerate(entry["cases"]):
        at = f"{where}: cases[{i}]"
        if not isinstance(r, dict):
            raise PerfFileError(one_line(f"{at}: must be a mapping (a measured case), got {brief(r)}"))
        cid = r.get("case_id") or r.get("name")
        if not isinstance(cid, str) or not cid:
            raise PerfFileError(one_line(f"{at}: has no case_id (or name): a text naming the case"))
        for key in ("case_id", "name", "verdict", "reason"):
            if r.get(key) is not None and not isinstance(r[key], str):
                raise PerfFileError(one_line(f"{at} ({brief(cid)}): {key}: must be a text, got {brief(r[key])}"))
        for key in _NUMBERS:
            if r.get(key) is not None and not _number(r[key]):
                raise PerfFileError(one_line(f"{at} ({brief(cid)}): {key}: must be a number >= 0, got {brief(r[key])}"))
        xs = r.get("samples_ms")
        if xs is not None:
            if not isinstance(xs, list):
                raise PerfFileError(one_line(f"{at} ({brief(cid)}): samples_ms: must be a list of times, got {brief(xs)}"))
            if len(xs) > MAX_SAMPLES:
                raise PerfFileError(one_line(f"{at} ({brief(cid)}): samples_ms: {len(xs):,} timed runs; `perf --runs` "
                                             f"makes at most {MAX_SAMPLES:,}"))
            bad = next((j for j, x in enumerate(xs) if not _number(x)), None)
            if bad is not None:
                raise PerfFileError(one_line(f"{at} ({brief(cid)}): samples_ms[{bad}]: must be a time in ms >= 0, "
                                             f"got {brief(xs[bad])}"))


# ----------------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------------

def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x), dtype=np.float64)
    r[order] = np.arange(1, len(x) + 1, dtype=np.float64)
    _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(inv, weights=r) / counts)[inv]


def mann_whitney(a, b) -> tuple[float, float, float]:
    """(U, p_greater, p_less) of samples ``a`` (baseline) and ``b`` (current): U counts the pairs in
    which the b value is the larger (ties count half); ``p_greater`` is the one-sided p-value of "b
    tends to be larger than a", ``p_less`` of "smaller" (normal approximation with the tie
    correction and a continuity correction of 1/2)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n1, n2 = len(a), len(b)
    both = np.concatenate([a, b])
    u = float(_ranks(both)[n1:].sum() - n2 * (n2 + 1) / 2)
    n = n1 + n2
    _, counts = np.unique(both, return_counts=True)
    ties = float((counts ** 3 - counts).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:                          # every value equal: nothing tends to be larger
        return u, 1.0, 1.0
    sd = math.sqrt(var)
    mu = n1 * n2 / 2.0
    p_greater = 0.5 * math.erfc(((u - mu - 0.5) / sd) / math.sqrt(2))
    p_less = 0.5 * math.erfc(((mu - u - 0.5) / sd) / math.sqrt(2))
    return u, min(1.0, p_greater), min(1.0, p_less)


def min_p(n1: int, n2: int) -> float:
    """The smallest one-sided p-value :func:`mann_whitney` can give for these sample sizes (every b
    value larger than every a value, no ties): below ``alpha`` or the runs can never show a change."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return mann_whitney(np.arange(n1, dtype=np.float64), np.arange(n1, n1 + n2, dtype=np.float64))[1]


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment: the adjusted p-values, in the order given (family-wise error)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        out[i] = running
    return out


def median_ratio_interval(a, b, level: float = 0.95, resamples: int = BOOTSTRAP,
                          seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of median(b) / median(a): both samples resampled with
    replacement, independently, ``resamples`` times (seeded: the same interval on every call)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    chunk = max(1, min(resamples, 2_000_000 // max(len(a), len(b), 1)))
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        ma = np.median(a[rng.integers(0, len(a), (k, len(a)))], axis=1)
        mb = np.median(b[rng.integers(0, len(b), (k, len(b)))], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios[start:start + k] = mb / ma
    lo, hi = np.quantile(ratios, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------

#: the statuses of a compared descriptor, most important first
STATUSES = ("slower", "faster", "small change", "unchanged", "too few runs", "not timed", "only in baseline",
            "only in current")
#: the statuses of a descriptor that was not compared (a comparison of none of them compared nothing)
NOT_COMPARED = ("too few runs", "not timed", "only in baseline", "only in current")


@dataclass
class Row:
    """One descriptor (by case id and EP) in both perf files."""
    ep: str
    case_id: str
    name: str
    status: str = "unchanged"
    why: str = ""
    runs: tuple[int, int] = (0, 0)
    median: tuple[float | None, float | None] = (None, None)
    spread: tuple[str, str] = ("", "")
    ratio: float | None = None
    interval: tuple[float, float] | None = None
    p_slower: float | None = None             # Holm-adjusted
    p_faster: float | None = None
    p_longer: float | None = None             # P(a current run is longer than a baseline run)
    noise: tuple[float, float] | None = None  # several runs a side: the ratio's run-to-run noise band
    verdicts: tuple[str, str] = ("", "")


@dataclass
class PerfComparison:
    baseline: Path
    current: Path
    alpha: float
    min_change: float
    rows: list[Row] = field(default_factory=list)
    eps: list[str] = field(default_factory=list)               # the EPs both files hold (compared)
    one_side: list[tuple[str, str]] = field(default_factory=list)   # (EP, "baseline" | "current"): not compared
    env: list[tuple[str, str, str, str]] = field(default_factory=list)   # (EP, key, baseline, current)
    yardsticks: list[dict] = field(default_factory=list)
    n_files: tuple[int, int] = (1, 1)                          # runs (perf files) of each side
    run_noise: float | None = None                             # several runs a side: sd of a run's log median
    noise_df: int = 0                                          # its degrees of freedom (deviations pooled)

    def by_status(self, status: str) -> list[Row]:
        return [r for r in self.rows if r.status == status]

    def counts(self) -> dict[str, int]:
        return {s: len(self.by_status(s)) for s in STATUSES if self.by_status(s)}


def _samples(rec: dict) -> list[float]:
    xs = rec.get("samples_ms")
    if isinstance(xs, list):
        return [float(x) for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
    return []


def _spread_text(rec: dict) -> str:
    if rec.get("p10_ms") is not None and rec.get("p90_ms") is not None:
        return f"{rec['p10_ms']:.4g}-{rec['p90_ms']:.4g}"
    return ""


def _as_runs(side) -> list[dict]:
    return list(side) if isinstance(side, (list, tuple)) else [side]


def compare_rows(base, cur, alpha: float = 0.01, min_change: float = 0.10,
                 baseline_path: Path = Path("?"), current_path: Path = Path("?")) -> PerfComparison:
    """Every descriptor of the EPs both sides hold, compared (see the module text). ``base`` and
    ``cur``: a perf document each (the test over the timed runs, :func:`_compare_one`), or lists of
    perf documents of the same environment, runs made at different times (:func:`_compare_runs`:
    the run is the unit)."""
    base, cur = _as_runs(base), _as_runs(cur)
    if len(base) == 1 and len(cur) == 1:
        return _compare_one(base[0], cur[0], alpha, min_change, baseline_path, current_path)
    return _compare_runs(base, cur, alpha, min_change, baseline_path, current_path)


#: several runs a side: resamples of the run-to-run null (the p-values' resolution) and of each
#: descriptor's hierarchical interval; fewest run-to-run deviations (degrees of freedom, pooled over
#: the descriptors) for the noise to be measured at all
NULL_RESAMPLES = 100_000
RUN_RESAMPLES = 2000
RUN_POOL = 400
MIN_NOISE_DF = 5


def _compare_runs(base: list[dict], cur: list[dict], alpha: float, min_change: float, baseline_path: Path,
                  current_path: Path) -> PerfComparison:
    """Several runs (perf files) of each environment; the run is the unit (the module text).

    Per descriptor: each run's median, and the ratio of the geometric means of the current runs'
    medians and the baseline's. The noise: each run's log median less the mean of its side, over every
    descriptor and both sides (scaled by sqrt(R / (R - 1)) for the mean taken out), resampled into as
    many runs as each side has: how far the log ratio moves between environments that do not differ.
    Its tail beyond the observed log ratio is the p-value (Holm over the descriptors); its central
    ``1 - alpha`` range is the noise band. The descriptor's own interval is a hierarchical bootstrap:
    its runs resampled within each side, then each run's timed runs within that run; with few runs it
    is too narrow (a bootstrap of three runs sees two thirds of their variance), so the row's 95%
    interval is the wider of it and the ratio moved by the pooled noise's central 95%."""
    cmp = _compare_one(base[0], cur[0], alpha, min_change, baseline_path, current_path, test=False)
    cmp.n_files = (len(base), len(cur))
    tested: list[tuple[Row, list[list[float]], list[list[float]]]] = []
    for row in cmp.rows:
        if row.status in ("only in baseline", "only in current"):
            continue
        ra = [s for s in (_samples_of(d, row) for d in base) if s]
        rb = [s for s in (_samples_of(d, row) for d in cur) if s]
        row.p_slower = row.p_faster = row.interval = None
        row.p_longer = None
        if not ra or not rb:
            row.status, row.ratio = "not timed", None
            row.why = row.why or "no timed runs in the files of one side"
            continue
        row.runs = (sum(map(len, ra)), sum(map(len, rb)))
        meds_a, meds_b = [float(np.median(s)) for s in ra], [float(np.median(s)) for s in rb]
        row.median = (_geomean(meds_a), _geomean(meds_b))
        row.spread = (_run_medians(meds_a), _run_medians(meds_b))
        row.ratio = row.median[1] / row.median[0] if row.median[0] > 0 else None
        if min(map(len, ra + rb)) < MIN_RUNS or row.ratio is None or min(meds_a + meds_b) <= 0:
            row.status = "too few runs"
            row.why = f"fewer than {MIN_RUNS} timed runs in a file (or a median of 0 ms)"
            continue
        tested.append((row, ra, rb))
    pool = []
    for _, ra, rb in tested:
        for side in (ra, rb):
            if len(side) > 1:
                logs = np.log([np.median(s) for s in side])
                pool.extend((logs - logs.mean()) * math.sqrt(len(side) / (len(side) - 1)))
    df = sum(len(side) - 1 for _, ra, rb in tested for side in (ra, rb))
    cmp.noise_df = df
    if df < MIN_NOISE_DF:
        for row, _, _ in tested:
            row.status = "too few runs"
            row.why = (f"{df} run-to-run deviation(s) over the descriptors: at least {MIN_NOISE_DF} are needed to "
                       "measure the noise between runs (more perf files of one side)")
        return cmp
    pool = np.asarray(pool)
    cmp.run_noise = float(np.sqrt(np.mean(pool ** 2)))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    nulls: dict[tuple[int, int], np.ndarray] = {}
    own: dict[tuple[str, str], tuple[float, float]] = {}
    raw = []
    for row, ra, rb in tested:
        key = (len(ra), len(rb))
        if key not in nulls:
            nulls[key] = np.sort(pool[rng.integers(0, len(pool), (NULL_RESAMPLES, key[1]))].mean(axis=1)
                                 - pool[rng.integers(0, len(pool), (NULL_RESAMPLES, key[0]))].mean(axis=1))
        null = nulls[key]
        d = math.log(row.ratio)
        above = len(null) - np.searchsorted(null, d, side="left")
        below = np.searchsorted(null, d, side="right")
        raw.append(((1 + above) / (len(null) + 1), (1 + below) / (len(null) + 1)))
        lo, hi = np.quantile(null, [alpha / 2, 1 - alpha / 2])
        row.noise = (math.exp(lo), math.exp(hi))
        own[row.case_id, row.ep] = hierarchical_interval(ra, rb, rng)
        lo, hi = np.quantile(null, [0.025, 0.975])          # the ratio moved by the pooled noise
        row.interval = (min(own[row.case_id, row.ep][0], row.ratio * math.exp(lo)),
                        max(own[row.case_id, row.ep][1], row.ratio * math.exp(hi)))
        u, _, _ = mann_whitney(np.concatenate(ra), np.concatenate(rb))
        row.p_longer = u / (row.runs[0] * row.runs[1])
    slow, fast = holm([p for p, _ in raw]), holm([p for _, p in raw])
    for (row, _, _), ps, pf in zip(tested, slow, fast):
        row.p_slower, row.p_faster = ps, pf
        (lo, hi), (n_lo, n_hi) = own[row.case_id, row.ep], row.noise
        if ps < alpha and lo > n_hi and row.ratio >= 1.0 + min_change:
            row.status, row.why = "slower", ""
        elif pf < alpha and hi < n_lo and row.ratio <= 1.0 / (1.0 + min_change):
            row.status, row.why = "faster", ""
        elif (ps < alpha and lo > n_hi) or (pf < alpha and hi < n_lo):
            row.status = "small change"
            row.why = f"beyond the run-to-run noise, but under the minimum change of {100 * min_change:g}%"
        else:
            row.status = "unchanged"
            row.why = (f"its runs disagree: the interval {lo:.3g}-{hi:.3g} reaches into the run-to-run noise "
                       f"({n_lo:.3g}-{n_hi:.3g})") if (ps < alpha or pf < alpha) else ""
    order = {s: i for i, s in enumerate(STATUSES)}
    cmp.rows.sort(key=lambda r: (order[r.status], -(abs(math.log(r.ratio)) if r.ratio else 0), r.ep, r.name))
    return cmp


def hierarchical_interval(ra: list[list[float]], rb: list[list[float]], rng, level: float = 0.95,
                          resamples: int = RUN_RESAMPLES) -> tuple[float, float]:
    """The percentile interval of the ratio of the geometric means of the runs' medians (current /
    baseline) by a two-level bootstrap: each side's runs drawn with replacement, and each drawn run's
    timed runs drawn with replacement within it."""
    def side(runs: list[list[float]]) -> np.ndarray:
        meds = []
        for s in runs:                                  # each run's resampled medians (a pool to draw from)
            x = np.asarray(s, dtype=np.float64)
            meds.append(np.log(np.median(x[rng.integers(0, len(x), (RUN_POOL, len(x)))], axis=1)))
        meds = np.asarray(meds)
        pick = rng.integers(0, len(runs), (resamples, len(runs)))
        col = rng.integers(0, RUN_POOL, (resamples, len(runs)))
        return meds[pick, col].mean(axis=1)
    d = side(rb) - side(ra)
    lo, hi = np.quantile(d, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(math.exp(lo)), float(math.exp(hi))


def _samples_of(doc: dict, row: "Row") -> list[float]:
    entry = doc["eps"].get(row.ep) or {}
    for r in entry.get("cases", []):
        if (r.get("case_id") or r.get("name")) == row.case_id:
            return _samples(r)
    return []


def _geomean(xs: list[float]) -> float:
    return float(math.exp(np.mean(np.log(xs)))) if min(xs) > 0 else float(np.median(xs))


def _run_medians(meds: list[float]) -> str:
    return "runs " + " / ".join(f"{m:.4g}" for m in meds)


def _compare_one(base: dict, cur: dict, alpha: float, min_change: float,
                 baseline_path: Path = Path("?"), current_path: Path = Path("?"), test: bool = True) -> PerfComparison:
    """One perf document against another: the test over the timed runs (the module text); with
    ``test`` False, the rows and the environment's differences only."""
    cmp = PerfComparison(Path(baseline_path), Path(current_path), alpha, min_change)
    tested: list[tuple[Row, list[float], list[float]]] = []
    for ep in sorted(set(base["eps"]) | set(cur["eps"])):
        eb, ec = base["eps"].get(ep), cur["eps"].get(ep)
        if eb is None or ec is None:
            cmp.one_side.append((ep, "baseline" if ec is None else "current"))
            continue
        cmp.eps.append(ep)
        cmp.env.extend(_env_diff(ep, eb, ec))
        yb, yc = _yardstick_median(eb), _yardstick_median(ec)
        if yb and yc:
            cmp.yardsticks.append({"ep": ep, "what": yb[0], "baseline_ms": yb[1], "current_ms": yc[1],
                                   "ratio": yc[1] / yb[1] if yb[1] else None})
    for ep in cmp.eps:
        eb, ec = base["eps"][ep], cur["eps"][ep]
        rb = {r.get("case_id") or r.get("name"): r for r in eb["cases"]}
        rc = {r.get("case_id") or r.get("name"): r for r in ec["cases"]}
        for cid in list(rb) + [k for k in rc if k not in rb]:
            a, b = rb.get(cid), rc.get(cid)
            row = Row(ep, str(cid), str((b or a).get("name", cid)))
            cmp.rows.append(row)
            if a is None or b is None:
                row.status = "only in current" if a is None else "only in baseline"
                continue
            row.verdicts = (str(a.get("verdict") or ""), str(b.get("verdict") or ""))
            sa, sb = _samples(a), _samples(b)
            row.runs = (len(sa), len(sb))
            row.median = (float(np.median(sa)) if sa else a.get("median_ms"),
                          float(np.median(sb)) if sb else b.get("median_ms"))
            row.spread = (_spread_text(a), _spread_text(b))
            if not sa or not sb:
                row.status, row.why = "not timed", ("no timed runs on one side (" + (a.get("reason") or b.get("reason")
                                                                                     or "no samples recorded") + ")")
                continue
            row.ratio = row.median[1] / row.median[0] if row.median[0] else None
            if len(sa) < MIN_RUNS or len(sb) < MIN_RUNS or min_p(len(sa), len(sb)) >= alpha:
                row.status = "too few runs"
                row.why = (f"{len(sa)} and {len(sb)} timed runs: at least {MIN_RUNS} each, and enough that a test at "
                           f"alpha {alpha:g} could show a change (never a single-run difference)")
                continue
            tested.append((row, sa, sb))
    if tested and test:
        raw = [mann_whitney(sa, sb) for _, sa, sb in tested]
        slow = holm([p for _, p, _ in raw])
        fast = holm([p for _, _, p in raw])
        for (row, sa, sb), (u, _, _), ps, pf in zip(tested, raw, slow, fast):
            row.p_slower, row.p_faster = ps, pf
            row.p_longer = u / (len(sa) * len(sb))
            row.interval = median_ratio_interval(sa, sb)
            lo, hi = row.interval
            ratio = row.ratio if row.ratio is not None else float("nan")
            if ps < alpha and lo > 1.0 and ratio >= 1.0 + min_change:
                row.status = "slower"
            elif pf < alpha and hi < 1.0 and ratio <= 1.0 / (1.0 + min_change):
                row.status = "faster"
            elif (ps < alpha and lo > 1.0) or (pf < alpha and hi < 1.0):
                row.status = "small change"
                row.why = f"beyond the noise, but under the minimum change of {100 * min_change:g}%"
            else:
                row.status = "unchanged"
    order = {s: i for i, s in enumerate(STATUSES)}
    cmp.rows.sort(key=lambda r: (order[r.status], -(abs(math.log(r.ratio)) if r.ratio else 0), r.ep, r.name))
    return cmp


def _yardstick_median(entry: dict) -> tuple[str, float] | None:
    ys = entry.get("yardstick") or {}
    best = ys.get("best")
    if best and (ys.get(best) or {}).get("median_ms"):
        return best, float(ys[best]["median_ms"])
    return None


#: environment facts worth showing when they differ between the two files
ENV_KEYS = ("device", "driver", "ep_package", "ort_version", "dml_stack", "shader_model", "machine")


def _env_diff(ep: str, eb: dict, ec: dict) -> list[tuple[str, str, str, str]]:
    out = []
    vb, vc = eb.get("environment") or {}, ec.get("environment") or {}
    for k in ENV_KEYS:
        if vb.get(k) != vc.get(k):
            out.append((ep, k, str(vb.get(k, "")), str(vc.get(k, ""))))
    db, dc = (vb.get("versions") or {}).get("DirectML.dll"), (vc.get("versions") or {}).get("DirectML.dll")
    if db != dc:
        out.append((ep, "DirectML.dll", str(db or ""), str(dc or "")))
    if eb.get("bandwidth_gbs") != ec.get("bandwidth_gbs"):
        out.append((ep, "bandwidth_gbs (share column)", str(eb.get("bandwidth_gbs")), str(ec.get("bandwidth_gbs"))))
    return out


# ----------------------------------------------------------------------------------------------
# Text and the command
# ----------------------------------------------------------------------------------------------

def _ms(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def text(cmp: PerfComparison, limit: int = 40) -> str:
    runs = "" if cmp.n_files == (1, 1) else (f" (runs: {cmp.n_files[0]} file(s) of the baseline's environment, "
                                             f"{cmp.n_files[1]} of the current one)")
    lines = [f"perf-compare {cmp.baseline} -> {cmp.current}{runs}",
             f"  flagged when: >= {MIN_RUNS} runs a side, one-sided Mann-Whitney U at family-wise alpha {cmp.alpha:g} "
             f"(Holm over {sum(1 for r in cmp.rows if r.p_slower is not None)} descriptors), bootstrap 95% interval of "
             f"the median ratio beyond 1, and a change of at least {100 * cmp.min_change:g}%"]
    if cmp.n_files != (1, 1):
        lines[1] = (f"  flagged when: the ratio of the runs' medians beyond the run-to-run noise (pooled over the "
                    f"descriptors, bootstrap) at family-wise alpha {cmp.alpha:g} (Holm), the descriptor's hierarchical "
                    f"95% interval (runs, then timed runs) clear of the noise band, and a change of at least "
                    f"{100 * cmp.min_change:g}%")
        if cmp.run_noise is not None:
            lines.append(f"  run-to-run noise: a run's median moves by x{math.exp(cmp.run_noise):.3g} (one sd, "
                         f"{cmp.noise_df} deviations)")
        else:
            lines.append(f"  run-to-run noise not measured: {cmp.noise_df} deviation(s), at least {MIN_NOISE_DF} needed")
    else:
        lines.append("  one file a side: the noise within one run only; a device that drifts between runs needs "
                     "more files a side (--baseline-run, --current-run)")
    for ep, side in cmp.one_side:
        lines.append(f"  {ep}: only in the {side} file, not compared")
    for ep, k, b, c in cmp.env:
        lines.append(f"  {ep}: {k}: {b} -> {c}")
    for y in cmp.yardsticks:
        lines.append(f"  {y['ep']}: yardstick ({y['what']}) median {y['baseline_ms']:.4g} -> {y['current_ms']:.4g} ms"
                     + (f" (x{y['ratio']:.3f})" if y["ratio"] else ""))
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in cmp.counts().items()))
    shown = [r for r in cmp.rows if r.status in ("slower", "faster", "small change", "too few runs", "not timed")]
    if shown:
        head = ["status", "EP", "case", "baseline ms", "current ms", "ratio", "95% interval", "p (Holm)", "P(longer)"]
        if cmp.n_files != (1, 1):
            head.append("noise band")
        rows = []
        for r in shown[:limit]:
            p = r.p_slower if r.status == "slower" else r.p_faster if r.status == "faster" else None
            name = r.name if len(r.name) <= 72 else r.name[:71] + "…"
            rows.append([r.status, r.ep, name, _ms(r.median[0]), _ms(r.median[1]),
                         f"{r.ratio:.3f}" if r.ratio else "-",
                         f"{r.interval[0]:.3f}-{r.interval[1]:.3f}" if r.interval else "-",
                         f"{p:.2g}" if p is not None else "-",
                         f"{r.p_longer:.2f}" if r.p_longer is not None else "-"]
                        + ([f"{r.noise[0]:.3f}-{r.noise[1]:.3f}" if r.noise else "-"] if cmp.n_files != (1, 1) else []))
        w = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head)]
        lines.append("  " + "  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
        lines += ["  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(x)) for x in rows]
        if len(shown) > limit:
            lines.append(f"  ... and {len(shown) - limit} more (see the page)")
    return "\n".join(lines)


def perf_compare_command(baseline: Path, current: Path, out: Path | None = None, *, alpha: float = 0.01,
                         min_change: float = 0.10, baseline_runs: list[Path] = (), current_runs: list[Path] = ()) -> int:
    """Compare two perf files (with ``baseline_runs`` / ``current_runs``: more runs of each side's
    environment): print the text, write the page (``out`` itself when it ends in .html, else into the
    folder ``out``, else beside ``current``); 1 when a descriptor is slower, else 4 when nothing was
    compared (no EP, no descriptor both files hold, or none with enough timed runs on both sides: as
    ``compare`` says of a comparison with nothing to stand on), else 0. PerfFileError for a file that
    is not a perf file (one line naming the file, the EP, the case and the field)."""
    cmp = compare_rows([load_perf(p) for p in [baseline, *baseline_runs]], [load_perf(p) for p in [current, *current_runs]],
                       alpha, min_change, baseline, current)
    compared = [r for r in cmp.rows if r.status not in NOT_COMPARED]
    if out is not None and Path(out).suffix.lower() in (".html", ".htm"):
        page = Path(out)
    else:
        page = (Path(out) if out is not None else Path(current).parent) / PERF_COMPARE_HTML
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_compare(cmp), encoding="utf-8")
    print(text(cmp))
    print(f"wrote {page}")
    if cmp.by_status("slower"):
        return EXIT_FAIL
    if not compared:
        why = ("the files share no EP" if not cmp.eps else "they share no descriptor" if not any(
            r.status not in ("only in baseline", "only in current") for r in cmp.rows)
            else "no descriptor has enough timed runs on both sides")
        print(f"nothing compared: {why}: exit code {EXIT_INCOMPLETE}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


# ----------------------------------------------------------------------------------------------
# Pages
# ----------------------------------------------------------------------------------------------

def _generated() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render_compare(cmp: PerfComparison) -> str:
    t = environment().get_template("perf_compare.html.j2")
    return t.render(cmp=cmp, css=static("report.css"), generated=_generated(), statuses=STATUSES,
                    min_runs=MIN_RUNS, min_noise_df=MIN_NOISE_DF, counts=cmp.counts(), fmt=_ms, e=math.e)


@dataclass
class Bar:
    """One bar of a chart row: its label, value and width in the chart's units."""
    ep: str
    colour: str
    value: float | None
    text: str
    x0: float = 0.0
    width: float = 0.0
    lo: float | None = None        # the p10-p90 whisker, in chart units
    hi: float | None = None


def chart_rows(doc: dict) -> tuple[list[dict], list[tuple[str, str]], dict]:
    """The perf document as chart rows: per case (by case id, in the order of the first EP that has
    it) a time bar per EP on one logarithmic scale and a bar of the share of that EP's bandwidth."""
    eps = list(doc["eps"])
    colours = {ep: EP_COLOURS[i % len(EP_COLOURS)] for i, ep in enumerate(eps)}
    cases: dict[str, dict] = {}
    for ep in eps:
        for r in doc["eps"][ep]["cases"]:
            cid = r.get("case_id") or r.get("name")
            c = cases.setdefault(cid, {"name": r.get("name", cid), "case_id": cid, "by_ep": {},
                                       "mb": (r.get("bytes_read", 0) + r.get("bytes_written", 0)) / 1e6})
            c["by_ep"][ep] = r
    times = [r["median_ms"] for c in cases.values() for r in c["by_ep"].values() if r.get("median_ms")]
    shares = [r["bandwidth_share"] for c in cases.values() for r in c["by_ep"].values()
              if r.get("bandwidth_share") is not None]
    lo = math.log10(min(times)) if times else 0.0
    hi = math.log10(max(times)) if times else 1.0
    lo, hi = math.floor(lo), math.ceil(hi) if math.ceil(hi) > math.floor(lo) else math.floor(lo) + 1
    smax = max([1.0] + shares)
    scale = {"log_lo": lo, "log_hi": hi, "share_max": smax,
             "ticks": [10.0 ** k for k in range(int(lo), int(hi) + 1)],
             "share_ticks": [x / 4 * smax for x in range(5)]}

    def tx(v: float) -> float:
        return (math.log10(v) - lo) / (hi - lo)

    rows = []
    for c in cases.values():
        bars, sbars = [], []
        for ep in eps:
            r = c["by_ep"].get(ep)
            if r is None:
                continue
            med = r.get("median_ms")
            b = Bar(ep, colours[ep], med, (f"{med:.4g} ms" if med else r.get("verdict", "")))
            if med:
                b.width = tx(med)
                if r.get("p10_ms") and r.get("p90_ms"):
                    b.lo, b.hi = tx(max(r["p10_ms"], 10.0 ** lo)), tx(r["p90_ms"])
            bars.append(b)
            sh = r.get("bandwidth_share")
            if sh is not None:
                sbars.append(Bar(ep, colours[ep], sh, f"{100 * sh:.1f}%", width=sh / smax))
        verdicts = {ep: r.get("verdict") for ep, r in c["by_ep"].items()}
        rows.append({"name": c["name"], "case_id": c["case_id"], "mb": c["mb"], "bars": bars, "shares": sbars,
                     "verdicts": verdicts})
    return rows, [(ep, colours[ep]) for ep in eps], scale


def render_perf(doc: dict, source: str = "") -> str:
    rows, legend, scale = chart_rows(doc)
    both = [ep for ep in ("DirectML", "DmlExecutionProvider") if ep in doc["eps"]]
    overhead = []
    if len(both) == 2:
        direct, dml = doc["eps"][both[0]], doc["eps"][both[1]]
        rd = {r.get("case_id"): r for r in direct["cases"]}
        for r in dml["cases"]:
            g = rd.get(r.get("case_id"))
            if g and g.get("median_ms") and r.get("median_ms"):
                overhead.append({"name": r.get("name"), "gpu": g["median_ms"], "session": r["median_ms"],
                                 "extra": r["median_ms"] - g["median_ms"], "times": r["median_ms"] / g["median_ms"]})
    t = environment().get_template("perf.html.j2")
    return t.render(doc=doc, rows=rows, legend=legend, scale=scale, overhead=overhead, css=static("report.css"),
                    generated=_generated(), source=source, fmt=_ms, value_json=D.value_json)


def write_perf_html(perf_json: Path, out: Path | None = None) -> Path:
    """The page of the perf file ``perf_json``: beside it under its name (perf.json: perf.html,
    perf-1.15.4.json: perf-1.15.4.html, x.json.gz: x.html) unless ``out`` names the page."""
    doc = load_perf(perf_json)
    src = Path(perf_json)
    page = Path(out) if out is not None else \
        (src.with_suffix("").with_suffix(".html") if src.name.lower().endswith(".json.gz") else src.with_suffix(".html"))
    page.write_text(render_perf(doc, str(perf_json)), encoding="utf-8")
    return page

