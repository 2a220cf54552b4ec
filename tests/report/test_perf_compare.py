"""perf-compare: a slowdown is flagged only beyond the measured noise (a test over the timed runs, an
interval of the median ratio and a minimum change), never from a single run; the statistics against
their exact forms; the command line, the page and the exit code of the gate."""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.report.perf import (PERF_COMPARE_HTML, PerfFileError, compare_rows, holm, is_perf_file, load_perf,
                                        mann_whitney, median_ratio_interval, min_p, text)


# --------------------------------------------------------------------------------------------
# the statistics
# --------------------------------------------------------------------------------------------

def _exact_p_greater(a, b) -> float:
    """The exact one-sided p-value of U (b larger) under the null: every split of the pooled values
    into groups of the two sizes equally likely."""
    pooled = list(a) + list(b)
    n2 = len(b)

    def u(bs):
        return sum((y > x) + 0.5 * (y == x) for x in (pooled[i] for i in range(len(pooled)) if i not in bs)
                   for y in (pooled[i] for i in bs))
    observed = u(set(range(len(a), len(pooled))))
    splits = [set(c) for c in itertools.combinations(range(len(pooled)), n2)]
    return sum(u(s) >= observed - 1e-12 for s in splits) / len(splits)


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [4.5, 5.5, 6.5, 7.5, 8.5, 9.5]),
    ([1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8], [1.02, 0.97, 1.1, 1.3, 0.99, 1.04, 1.01]),
    ([2.0, 2.0, 3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0, 5.0, 5.0]),        # ties
])
def test_mann_whitney_agrees_with_the_exact_distribution(a, b):
    u, p, q = mann_whitney(a, b)
    assert u == sum((y > x) + 0.5 * (y == x) for x in a for y in b)
    assert p == pytest.approx(_exact_p_greater(a, b), abs=0.03)
    assert q == pytest.approx(_exact_p_greater(b, a), abs=0.03)


def test_mann_whitney_of_equal_values_shows_nothing():
    assert mann_whitney([1.0] * 5, [1.0] * 5)[1:] == (1.0, 1.0)


def test_holm_adjusts_step_down():
    # m = 4: sorted p 0.01, 0.02, 0.03, 0.04 -> 0.04, 0.06, 0.06 (monotone), 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_min_p_tells_when_runs_can_never_show_a_change():
    assert min_p(3, 3) > 0.01 > min_p(10, 10)
    assert min_p(1, 50) > 0.01


def test_the_median_ratio_interval_holds_the_ratio_and_is_reproducible():
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(0, 0.1, 40), 2.0 * rng.lognormal(0, 0.1, 40)
    lo, hi = median_ratio_interval(a, b)
    assert lo < np.median(b) / np.median(a) < hi and 1.7 < lo and hi < 2.3
    assert median_ratio_interval(a, b) == (lo, hi)


# --------------------------------------------------------------------------------------------
# synthetic perf files
# --------------------------------------------------------------------------------------------

def perf_doc(rng, n_cases=120, runs=30, factor=lambda i: 1.0, sigma=0.15, ep="DirectML", outliers=False):
    cases = []
    for i in range(n_cases):
        base = 0.05 * (1 + i % 9)
        s = base * factor(i) * rng.lognormal(0.0, sigma, runs)
        if outliers:                       # a few runs disturbed by the machine, as on a shared host
            s[rng.integers(0, runs, 2)] *= 4.0
        cases.append({"name": f"layer {i}", "case_id": f"case-{i}", "samples_ms": [float(x) for x in s],
                      "median_ms": float(np.median(s)), "verdict": "PASS"})
    return {"record": "perf", "eps": {ep: {"ep": ep, "cases": cases}}}


def test_a_true_threefold_slowdown_is_flagged_and_nothing_else():
    rng = np.random.default_rng(11)
    base = perf_doc(rng)
    cur = perf_doc(rng, factor=lambda i: 3.0 if i == 17 else 1.0)
    cmp = compare_rows(base, cur)
    slower = cmp.by_status("slower")
    assert [r.case_id for r in slower] == ["case-17"]
    r = slower[0]
    assert 2.5 < r.ratio < 3.5 and r.interval[0] > 2.0 and r.p_slower < 1e-6 and r.p_longer > 0.95
    assert not cmp.by_status("faster")


@pytest.mark.parametrize("seed", range(6))
def test_noise_alone_is_never_flagged(seed):
    """Two runs of the same device (same distributions, outliers included): however the noise
    falls on 120 descriptors, none is flagged either way."""
    rng = np.random.default_rng(100 + seed)
    cmp = compare_rows(perf_doc(rng, outliers=True), perf_doc(rng, outliers=True))
    assert not cmp.by_status("slower") and not cmp.by_status("faster")
    assert len(cmp.by_status("unchanged")) + len(cmp.by_status("small change")) == 120


def test_a_single_run_difference_is_never_flagged():
    rng = np.random.default_rng(5)
    cmp = compare_rows(perf_doc(rng, runs=1), perf_doc(rng, runs=1, factor=lambda i: 5.0))
    assert {r.status for r in cmp.rows} == {"too few runs"}
    cmp = compare_rows(perf_doc(rng, runs=3), perf_doc(rng, runs=3, factor=lambda i: 5.0))
    assert {r.status for r in cmp.rows} == {"too few runs"}


def test_a_change_under_the_minimum_is_reported_but_not_flagged():
    rng = np.random.default_rng(7)
    base = perf_doc(rng, n_cases=10, runs=200, sigma=0.02)
    cur = perf_doc(rng, n_cases=10, runs=200, sigma=0.02, factor=lambda i: 1.05)
    cmp = compare_rows(base, cur)
    assert not cmp.by_status("slower")
    assert len(cmp.by_status("small change")) == 10
    assert len(compare_rows(base, cur, min_change=0.02).by_status("slower")) == 10


def test_a_speedup_is_flagged_faster():
    rng = np.random.default_rng(8)
    cmp = compare_rows(perf_doc(rng), perf_doc(rng, factor=lambda i: 0.25 if i < 3 else 1.0))
    assert sorted(r.case_id for r in cmp.by_status("faster")) == ["case-0", "case-1", "case-2"]
    assert not cmp.by_status("slower")


def test_cases_on_one_side_and_untimed_cases_are_listed_not_compared():
    rng = np.random.default_rng(9)
    base, cur = perf_doc(rng, n_cases=4), perf_doc(rng, n_cases=4)
    del cur["eps"]["DirectML"]["cases"][0]
    cur["eps"]["DirectML"]["cases"][1] = {"name": "layer 1", "case_id": "case-1", "verdict": "EP_REJECTED",
                                          "reason": "refused"}
    cmp = compare_rows(base, cur)
    status = {r.case_id: r.status for r in cmp.rows}
    assert status["case-0"] == "only in baseline" and status["case-1"] == "not timed"
    assert "refused" in next(r.why for r in cmp.rows if r.case_id == "case-1")


# --------------------------------------------------------------------------------------------
# files, command line, page
# --------------------------------------------------------------------------------------------

def _write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_perf_compare_exit_code_is_the_gate(tmp_path, capsys):
    rng = np.random.default_rng(12)
    a = _write(tmp_path, "a.json", perf_doc(rng, n_cases=20))
    b = _write(tmp_path, "b.json", perf_doc(rng, n_cases=20, factor=lambda i: 3.0 if i == 4 else 1.0))
    c = _write(tmp_path, "c.json", perf_doc(rng, n_cases=20))
    assert main(["perf-compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "1 slower" in out and "layer 4" in out
    page = (tmp_path / "out" / PERF_COMPARE_HTML).read_text()
    assert "layer 4" in page and "slower" in page and "http" not in page.split("<body>")[1]
    assert main(["perf-compare", str(a), str(c), "--out", str(tmp_path / "p.html")]) == 0
    assert (tmp_path / "p.html").is_file()
    # `compare` sees two perf files and compares them the same way
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "q.html")]) == 1
    assert "slower" in capsys.readouterr().out


def test_bad_perf_files_are_one_line_errors(tmp_path, capsys):
    rng = np.random.default_rng(13)
    a = _write(tmp_path, "a.json", perf_doc(rng, n_cases=2))
    bad = _write(tmp_path, "bad.json", {"record": "something else"})
    results = tmp_path / "r.jsonl"
    results.write_text('{"record": "environment"}\n')
    assert main(["perf-compare", str(a), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "not a perf file" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", str(a), str(results)]) == 2
    assert "perf file" in capsys.readouterr().err
    assert is_perf_file(a) and not is_perf_file(bad) and not is_perf_file(results)
    with pytest.raises(PerfFileError):
        load_perf(bad)


def test_an_ep_in_one_file_only_is_named_not_compared():
    rng = np.random.default_rng(15)
    base, cur = perf_doc(rng, n_cases=3), perf_doc(rng, n_cases=3)
    base["eps"]["DmlExecutionProvider"] = perf_doc(rng, n_cases=3, ep="DmlExecutionProvider")["eps"]["DmlExecutionProvider"]
    cmp = compare_rows(base, cur)
    assert cmp.eps == ["DirectML"] and cmp.one_side == [("DmlExecutionProvider", "baseline")]
    assert {r.ep for r in cmp.rows} == {"DirectML"} and len(cmp.rows) == 3


def test_the_yardstick_and_environment_changes_are_stated(tmp_path):
    rng = np.random.default_rng(14)
    base, cur = perf_doc(rng, n_cases=3), perf_doc(rng, n_cases=3)
    for d, ms, ver in ((base, 2.0, "1.13.1.0"), (cur, 3.0, "1.15.4.0")):
        e = d["eps"]["DirectML"]
        e["yardstick"] = {"bytes": 1 << 20, "best": "identity", "identity": {"ok": True, "median_ms": ms}}
        e["environment"] = {"device": "dev", "versions": {"DirectML.dll": ver}}
    cmp = compare_rows(base, cur)
    assert cmp.yardsticks[0]["ratio"] == pytest.approx(1.5)
    assert ("DirectML", "DirectML.dll", "1.13.1.0", "1.15.4.0") in cmp.env
    assert math.isfinite(cmp.yardsticks[0]["current_ms"])


def drifting_runs(rng, n_runs, n_cases=60, runs=30, factor=lambda i: 1.0, drift=0.2, sigma=0.03, run_factor=None):
    """Runs of one environment made at different times: each run's device state moves each case's
    times by a factor of its own (as a shared machine's load does), on top of small noise within it;
    ``run_factor(run, case)``: a further factor of one run's case (a known shift in one run only)."""
    out = []
    for k in range(n_runs):
        d = perf_doc(rng, n_cases=n_cases, runs=runs, factor=factor, sigma=sigma)
        for i, c in enumerate(d["eps"]["DirectML"]["cases"]):
            f = float(rng.lognormal(0.0, drift)) * (run_factor(k, i) if run_factor else 1.0)
            c["samples_ms"] = [x * f for x in c["samples_ms"]]
            c["median_ms"] = float(np.median(c["samples_ms"]))
        out.append(d)
    return out


def flagged(cmp):
    return sorted(r.case_id for r in cmp.rows if r.status in ("slower", "faster", "small change"))


@pytest.mark.parametrize("seed", range(5))
def test_runs_repeated_over_time_tell_drift_from_a_change(seed):
    """Where each run of an environment moves by its own factor (sd 20%), one file a side measures
    the noise within a run only, and drift reads as changes; two runs a side, the run the unit, flag
    none of the drift and still the true 3x slowdown."""
    rng = np.random.default_rng(21 + seed)
    base = drifting_runs(rng, 2)
    cur = drifting_runs(rng, 2, factor=lambda i: 3.0 if i == 9 else 1.0)
    single = compare_rows(base[0], cur[0])
    assert len(single.by_status("slower")) + len(single.by_status("faster")) > 5       # drift flagged
    both = compare_rows(base, cur)
    assert [r.case_id for r in both.by_status("slower")] == ["case-9"]
    assert flagged(both) == ["case-9"] and both.n_files == (2, 2)
    r = both.by_status("slower")[0]
    assert r.spread[0].startswith("runs ") and r.interval[0] > r.noise[1] and r.p_slower < 0.01
    assert both.run_noise == pytest.approx(0.2, rel=0.3) and both.noise_df == 120


@pytest.mark.parametrize("seed", range(12))
def test_drift_alone_is_never_flagged_over_several_runs(seed):
    """The family-wise false-alarm rate: no change, runs drifting by 20% (the single-file test flags
    many); three runs a side flag nothing."""
    rng = np.random.default_rng(300 + seed)
    cmp = compare_rows(drifting_runs(rng, 3, n_cases=40, runs=15), drifting_runs(rng, 3, n_cases=40, runs=15))
    assert flagged(cmp) == [] and cmp.counts() == {"unchanged": 40}


def test_known_shifts_beyond_small_drift_are_found_both_ways():
    """Steady runs (drift 2%): a 25% slowdown and a 20% speed-up are found, a 6% one is a small
    change (beyond the noise, under the minimum of 10%), the rest is unchanged; the interval holds
    the shift."""
    shifts = {3: 1.25, 4: 0.8, 5: 1.06}
    rng = np.random.default_rng(7)
    base = drifting_runs(rng, 3, n_cases=30, drift=0.02, sigma=0.01)
    cur = drifting_runs(rng, 3, n_cases=30, drift=0.02, sigma=0.01, factor=lambda i: shifts.get(i, 1.0))
    cmp = compare_rows(base, cur)
    by = {r.case_id: r for r in cmp.rows}
    assert [r.case_id for r in cmp.by_status("slower")] == ["case-3"]
    assert [r.case_id for r in cmp.by_status("faster")] == ["case-4"]
    assert [r.case_id for r in cmp.by_status("small change")] == ["case-5"]
    for i, f in shifts.items():
        lo, hi = by[f"case-{i}"].interval
        assert lo < f < hi
    assert perf_compare_gate(base, cur) == 1


def perf_compare_gate(base, cur):
    return 1 if compare_rows(base, cur).by_status("slower") else 0


def test_one_slow_run_among_steady_ones_is_not_a_regression():
    """A descriptor whose one current run was 4x slow (the machine busy then) and whose other runs
    match the baseline: its geometric mean moves 59%, far beyond the pooled noise of 400 steady
    descriptors (p under Holm < alpha), but its own interval (its runs resampled) reaches into the
    noise: not called."""
    rng = np.random.default_rng(8)
    base = drifting_runs(rng, 3, n_cases=400, runs=10, drift=0.02, sigma=0.01)
    cur = drifting_runs(rng, 3, n_cases=400, runs=10, drift=0.02, sigma=0.01,
                        run_factor=lambda k, i: 4.0 if (k, i) == (2, 6) else 1.0)
    cmp = compare_rows(base, cur)
    r = next(r for r in cmp.rows if r.case_id == "case-6")
    assert r.ratio == pytest.approx(4 ** (1 / 3), rel=0.05) and r.p_slower < 0.01
    assert r.status == "unchanged" and "runs disagree" in r.why and r.interval[0] < r.noise[1]
    assert flagged(cmp) == []


def test_a_disturbed_run_is_part_of_the_noise():
    """The same disturbed run among 30 descriptors: it is one of the 180 run-to-run deviations, so
    the noise band widens (a change of 59% is then within it) and nothing is called."""
    rng = np.random.default_rng(8)
    base = drifting_runs(rng, 3, n_cases=30, drift=0.02, sigma=0.01)
    cur = drifting_runs(rng, 3, n_cases=30, drift=0.02, sigma=0.01,
                        run_factor=lambda k, i: 4.0 if (k, i) == (2, 6) else 1.0)
    cmp = compare_rows(base, cur)
    r = next(r for r in cmp.rows if r.case_id == "case-6")
    assert r.p_slower > 0.01 and r.status == "unchanged" and flagged(cmp) == []


def test_too_few_runs_to_measure_the_noise_flag_nothing():
    """Two descriptors, two runs against one: 2 run-to-run deviations, too few to know the noise."""
    rng = np.random.default_rng(9)
    base = drifting_runs(rng, 2, n_cases=2)
    cur = drifting_runs(rng, 1, n_cases=2, factor=lambda i: 5.0)
    cmp = compare_rows(base, cur)
    assert cmp.counts() == {"too few runs": 2} and cmp.run_noise is None
    assert "at least 5 are needed" in cmp.rows[0].why
    assert "not measured" in text(cmp)


def test_more_runs_of_each_side_on_the_command_line(tmp_path, capsys):
    rng = np.random.default_rng(22)
    base = drifting_runs(rng, 2, n_cases=20)
    cur = drifting_runs(rng, 2, n_cases=20, factor=lambda i: 3.0 if i == 1 else 1.0)
    files = [_write(tmp_path, f"{n}.json", d) for n, d in zip(("a1", "a2", "b1", "b2"), base + cur)]
    code = main(["perf-compare", str(files[0]), str(files[2]), "--baseline-run", str(files[1]),
                 "--current-run", str(files[3]), "--out", str(tmp_path / "c.html")])
    out = capsys.readouterr().out
    assert "runs: 2 file(s) of the baseline's environment, 2 of the current one" in out and "layer 1" in out and "run-to-run noise" in out
    assert code == 1
    page = (tmp_path / "c.html").read_text()
    assert "perf file(s) of the baseline" in page and "hierarchical bootstrap" in page and "noise band" in page
    # one file a side says what it cannot see
    code = main(["perf-compare", str(files[0]), str(files[2]), "--out", str(tmp_path / "d.html")])
    assert "noise within one run only" in capsys.readouterr().out


def test_a_gzipped_perf_file_reads_as_the_plain_one(tmp_path, capsys):
    """A large perf file is kept as perf.json.gz: perf-compare, compare and the perf page read it as
    they read the plain file; a gzip that does not hold a perf file, or is cut short, is one line."""
    import gzip
    from onnx_dml_bench.report.perf import write_perf_html
    rng = np.random.default_rng(16)
    a = _write(tmp_path, "a.json", perf_doc(rng, n_cases=20))
    b = _write(tmp_path, "b.json", perf_doc(rng, n_cases=20, factor=lambda i: 3.0 if i == 4 else 1.0))
    bz = tmp_path / "b.json.gz"
    bz.write_bytes(gzip.compress(b.read_bytes()))
    assert is_perf_file(bz) and load_perf(bz) == load_perf(b)
    assert main(["perf-compare", str(a), str(bz)]) == 1
    assert "1 slower" in capsys.readouterr().out
    assert main(["compare", str(bz), str(a), "--out", str(tmp_path / "q.html")]) == 0
    sample = Path(__file__).resolve().parents[2] / "reports" / "dml-perf-lavapipe" / "perf-1.13.1-1.json"
    sz = tmp_path / "perf-1.13.1-1.json.gz"
    sz.write_bytes(gzip.compress(sample.read_bytes()))
    page = write_perf_html(sz)
    assert page == tmp_path / "perf-1.13.1-1.html"
    assert page.read_text().split("Generated", 1)[1].split("\n", 1)[1] == \
        write_perf_html(sample, tmp_path / "plain.html").read_text().split("Generated", 1)[1].split("\n", 1)[1]
    results = tmp_path / "r.jsonl.gz"
    results.write_bytes(gzip.compress(b'{"record": "environment"}\n'))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(bz.read_bytes()[:-20])
    assert not is_perf_file(results)
    for bad in (cut,):
        assert main(["perf-compare", str(a), str(bad)]) == 2
        err = capsys.readouterr().err
        assert bad.name in err and len(err.strip().splitlines()) == 1
