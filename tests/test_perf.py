"""The performance lens (perf.py) through a lane's Timer: every run's time kept, the traffic from the
operator's struct, the yardstick as the share column's bandwidth, verdicts through the one verdict
path (a speed figure for a wrong answer is a FAIL), the case selection, perf.json and perf.html."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from onnx_dml_bench import perf, registry
from onnx_dml_bench.errors import PlanError
from onnx_dml_bench.lanes.base import Lane, Timed
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.plan import select_noted
from onnx_dml_bench.record import Placement
from onnx_dml_bench.report.perf import PERF_HTML, load_perf, write_perf_html


class FakeTimer:
    """A timer whose device answers with the DirectML reference (or a wrong answer, or refuses),
    each run taking ``ms`` with a little spread."""
    semantics = "dml"
    clock = "fake clock"

    def __init__(self, wrong=False, refuse=None, ms=2.0):
        self.ep_name = "DirectML"
        self.wrong, self.refuse, self.ms = wrong, refuse, ms
        self.closed = False

    def unsupported(self, case):
        return self.refuse

    def time(self, case, inputs, warmup, repeats):
        out = {k: np.array(v, copy=True) for k, v in case.operator.reference(case, inputs).items()}
        if self.wrong:
            first = next(iter(out))
            out[first] = out[first] + np.ones_like(out[first])
        samples = [self.ms * (1 + 0.01 * (k % 5)) for k in range(repeats)]
        return Timed(Outcome(True, "done", None, out), samples,
                     Placement(fallback_disabled=False, nodes=None, proof="fake"), {"timestamp_frequency": 10 ** 9})

    def yardstick(self, nbytes, warmup, repeats):
        return {"identity": {"ok": True, "samples_ms": [2 * nbytes / 50e9 * 1e3] * repeats},
                "copy": {"ok": True, "samples_ms": [2 * nbytes / 100e9 * 1e3] * repeats}}

    def close(self):
        self.closed = True


@dataclass
class FakeLane(Lane):
    canary_name: ClassVar[str] = "fake canary"
    timer: object = None
    fail_preflight: bool = False

    def make_timer(self):
        return self.timer

    def preflight(self):
        if self.fail_preflight:
            from onnx_dml_bench.lanes.base import PreflightError
            raise PreflightError("the canary gave a wrong answer")
        return {"device": "fake device"}


def small_cases():
    mp = registry.get("max_pooling2")
    d = mp.Desc(InputSizes=(1, 4, 16, 16), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1), OutputIndicesDataType="UINT32",
                FeatureLevel="5.0")
    s2d = registry.get("space_to_depth1")
    e = s2d.Desc(InputSizes=(1, 4, 8, 8), DataType="FLOAT32", BlockSize=2, Order="DEPTH_COLUMN_ROW")
    return [perf.PerfCase("mp", mp.make_case(d, {}, "random")), perf.PerfCase("s2d", s2d.make_case(e, {"form": "native"}, "random"))]


def test_traffic_comes_from_the_struct_and_differs_from_onnx_for_indices():
    mp_case = small_cases()[0].case
    x = 1 * 4 * 16 * 16 * 4
    y = 1 * 4 * 8 * 8
    assert perf.traffic(mp_case, "dml") == (x, y * 4 + y * 4)       # UINT32 indices
    assert perf.traffic(mp_case, "onnx") == (x, y * 4 + y * 8)      # ONNX's INT64 indices


def test_spread_keeps_every_run():
    s = perf.spread([3.0, 1.0, 2.0, 10.0])
    assert s["samples_ms"] == [3.0, 1.0, 2.0, 10.0]
    assert s["median_ms"] == 2.5 and s["min_ms"] == 1.0 and s["p90_ms"] > s["p10_ms"]


def test_timer_lane_times_every_run_and_uses_the_measured_yardstick(tmp_path):
    timer = FakeTimer()
    lane = FakeLane("fake", "DirectML", "fake package", timer=timer)
    doc = perf.run_perf(lane, 20, 2, None, small_cases(), 1 << 20, log=lambda m: None)
    assert timer.closed
    assert doc["environment"]["device"] == "fake device"
    # the copy dispatch is the yardstick (a kernel, as the descriptors are); the copy engine's figure beside it
    assert doc["yardstick"]["best"] == "identity" and doc["bandwidth_gbs"] == pytest.approx(50.0, rel=0.01)
    assert doc["yardstick"]["copy"]["gbs"] == pytest.approx(100.0, rel=0.01)
    assert "measured on this device" in doc["bandwidth_source"]
    for r in doc["cases"]:
        assert r["verdict"] == "PASS", r["reason"]
        assert len(r["samples_ms"]) == 20 and r["median_ms"] > 0
        moved = r["bytes_read"] + r["bytes_written"]
        assert r["achieved_gbs"] == pytest.approx(moved / (r["median_ms"] / 1e3) / 1e9, rel=0.01)
        assert r["bandwidth_share"] == pytest.approx(r["achieved_gbs"] / doc["bandwidth_gbs"], rel=0.01)
    # --bandwidth still overrides the yardstick
    doc = perf.run_perf(lane, 5, 0, 1000.0, small_cases()[:1], 1 << 20, log=lambda m: None)
    assert doc["bandwidth_gbs"] == 1000.0 and "stated by the user" in doc["bandwidth_source"]


def test_a_wrong_answer_is_a_fail_and_a_refusal_is_named():
    lane = FakeLane("fake", "DirectML", "p", timer=FakeTimer(wrong=True))
    rows = perf.run_perf(lane, 5, 0, None, small_cases(), 1 << 20, log=lambda m: None)["cases"]
    assert [r["verdict"] for r in rows] == ["FAIL", "FAIL"] and all(r["samples_ms"] for r in rows)
    lane = FakeLane("fake", "DirectML", "p", timer=FakeTimer(refuse="DirectML reports FLOAT32 unsupported"))
    rows = perf.run_perf(lane, 5, 0, None, small_cases(), 1 << 20, log=lambda m: None)["cases"]
    assert {r["verdict"] for r in rows} == {"NOT_SUPPORTED"} and "unsupported" in rows[0]["reason"]


def test_a_failed_preflight_gives_exit_code_3_and_no_figures(tmp_path):
    lane = FakeLane("fake", "DirectML", "p", timer=FakeTimer(), fail_preflight=True)
    code, path = perf.perf_command(lane, 5, 0, None, tmp_path, small_cases())
    assert code == 3 and path is None and not (tmp_path / "perf.json").exists()


def test_perf_json_and_the_page_with_its_chart(tmp_path):
    lane = FakeLane("fake", "DirectML", "p", timer=FakeTimer())
    code, path = perf.perf_command(lane, 10, 1, None, tmp_path, small_cases(), 1 << 20)
    assert code == 0 and path == tmp_path / "perf.json"
    slow = FakeLane("fake2", "DmlExecutionProvider", "p", timer=FakeTimer(ms=9.0))
    perf.perf_command(slow, 10, 1, None, tmp_path, small_cases(), 1 << 20)
    doc = load_perf(path)
    assert set(doc["eps"]) == {"DirectML", "DmlExecutionProvider"}
    page = write_perf_html(path)
    assert page == tmp_path / PERF_HTML
    html = page.read_text()
    assert html.count("<svg") >= 2 * len(small_cases()) and "mp" in html and "s2d" in html
    assert "What the DirectML EP adds" in html           # both DirectML lanes: the overhead table
    assert "<script" not in html and "http://" not in html.split("<body>")[1]
    json.dumps(doc)


def _lens(profile=None, ops=None, cases_file=None, every=1):
    """The lens's cases as `perf` selects them: through the run plan's selection."""
    selected = select_noted(profile, ops, cases_file=cases_file) if profile or cases_file else None
    return perf.lens_cases(selected, ops, distinct=bool(profile), every=every)


def test_case_selection(tmp_path):
    assert [pc.name for pc in _lens()] == [pc.name for pc in perf.default_cases()]
    prof = _lens("smoke", ["max_pooling2"])
    assert prof and {pc.case.op for pc in prof} == {"max_pooling2"}
    keys = [(pc.case.op, repr(pc.case.desc), pc.case.variant, pc.case.opset) for pc in prof]
    assert len(keys) == len(set(keys))                        # each descriptor once, whatever its input families
    assert len(_lens("smoke", ["max_pooling2"], every=3)) == len(prof[::3])
    both = _lens("smoke", ["space_to_depth1", "max_pooling2"])       # the registry's order, as the lens lists them
    assert [pc.case.op for pc in both] == sorted((pc.case.op for pc in both), key=registry.names().index)
    f = tmp_path / "layers.json"
    f.write_text(json.dumps({"cases": [{"op": "max_pooling2", "note": "resnet50 stem max pool",
                                        "descriptor": small_cases()[0].case.desc.to_dict()}]}))
    (pc,) = _lens(cases_file=f)
    assert pc.name.startswith("resnet50 stem max pool: ")
    assert _lens(cases_file=f, ops=["space_to_depth1"]) == []           # --op applies to a case file's cases too
    with pytest.raises(PlanError, match="no_such_op"):
        _lens("smoke", ["no_such_op"])
    with pytest.raises(perf.PerfCaseError, match="no_such_op"):
        _lens(cases_file=f, ops=["no_such_op"])
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(PlanError, match="bad.json"):
        _lens(cases_file=bad)


def test_perf_command_line_on_the_cpu_ep(tmp_path, capsys):
    """The in-process lens keeps every run too (perf-compare needs them), takes --profile/--op/--every,
    and writes perf.html beside perf.json."""
    from onnx_dml_bench.cli import main
    code = main(["perf", "--ep", "cpu", "--profile", "smoke", "--op", "space_to_depth1", "--every", "20",
                 "--runs", "4", "--warmup", "1", "--bandwidth", "10", "--out", str(tmp_path)])
    assert code in (0, 1)
    doc = load_perf(tmp_path / "perf.json")
    rows = doc["eps"]["CPUExecutionProvider"]["cases"]
    assert rows and all(r["op"] == "space_to_depth1" for r in rows)
    assert all(len(r["samples_ms"]) == 4 for r in rows if r["verdict"] == "PASS")
    assert (tmp_path / PERF_HTML).is_file()
    # a named file's page takes its name: two runs in one folder keep both pages
    main(["perf", "--ep", "cpu", "--profile", "smoke", "--op", "space_to_depth1", "--every", "40", "--runs", "2",
          "--warmup", "0", "--out", str(tmp_path / "perf-2.json")])
    assert (tmp_path / "perf-2.html").is_file() and "perf-2.json" in (tmp_path / "perf-2.html").read_text()
    assert main(["perf", "--ep", "cpu", "--profile", "smoke", "--cases", str(tmp_path / "x.json")]) == 2
    assert "--cases and --profile" in capsys.readouterr().err



class RoundsTimer(FakeTimer):
    """A FakeTimer that notes each call (case, repeats) and whose device slows down as the
    measurement goes on (each call 10% slower than the one before); ``fail_at``: the call that fails."""

    def __init__(self, fail_at=None):
        super().__init__()
        self.calls, self.fail_at = [], fail_at

    def time(self, case, inputs, warmup, repeats):
        self.calls.append((case.id, repeats))
        self.ms = 2.0 * 1.1 ** (len(self.calls) - 1)
        timed = super().time(case, inputs, warmup, repeats)
        if len(self.calls) == self.fail_at:
            return Timed(Outcome(False, "run", "device removed", {}), [], timed.placement, {})
        return timed


def test_round_sizes_split_the_runs_evenly():
    assert perf.round_sizes(10, 3) == [4, 3, 3]
    assert perf.round_sizes(2, 5) == [1, 1] and perf.round_sizes(7, 1) == [7]


def test_the_runs_are_taken_in_rounds_over_all_the_cases():
    """Each case's runs spread over the whole measurement: the cases take turns in every round, so a
    device that slows as it goes moves every case alike (not the last case alone)."""
    cases = small_cases()
    timer = RoundsTimer()
    doc = perf.run_perf(FakeLane("fake", "DirectML", "p", timer=timer), 10, 1, None, cases, 1 << 20,
                        log=lambda m: None, rounds=3)
    ids = [pc.case.id for pc in cases]
    assert timer.calls == [(ids[0], 4), (ids[1], 4), (ids[0], 3), (ids[1], 3), (ids[0], 3), (ids[1], 3)]
    assert doc["rounds"] == 3 and "3 round(s)" in doc["timing"]
    a, b = doc["cases"]
    assert len(a["samples_ms"]) == len(b["samples_ms"]) == 10 and a["rounds"] == 3
    assert a["verdict"] == b["verdict"] == "PASS"
    assert b["median_ms"] / a["median_ms"] < 1.15          # one round's step apart, not the whole drift


def test_a_round_that_fails_gives_its_case_the_verdict_and_spares_the_others():
    cases = small_cases()
    timer = RoundsTimer(fail_at=3)                          # the first case, second round
    rows = perf.run_perf(FakeLane("fake", "DirectML", "p", timer=timer), 4, 0, None, cases, 1 << 20,
                         log=lambda m: None, rounds=2)["cases"]
    assert rows[0]["verdict"] != "PASS" and "device removed" in rows[0]["reason"]
    assert rows[1]["verdict"] == "PASS" and len(rows[1]["samples_ms"]) == 4
    assert [c for c, _ in timer.calls].count(cases[0].case.id) == 2


def test_perf_page_names_every_yardstick_copy_the_file_holds():
    """A CUDA perf file's yardstick is `cuda-copy` (CUDA events around cudaMemcpyAsync): the page
    lists it by its name. Once the page looked up `identity` and `copy` only, and `copy` resolved to
    the dictionary's own method: every `perf` on the CUDA EP ended in a template error (exit 1).
    The file is one of an NVIDIA H200 run, cut to one case."""
    from onnx_dml_bench.report.perf import render_perf
    doc = json.loads((Path(__file__).parent / "data" / "perf-cuda-h200.json").read_text())
    entry = doc["eps"]["CUDAExecutionProvider"]
    entry["yardstick"]["identity"] = {"ok": False, "error": "no such kernel"}
    page = render_perf(doc)
    assert "cuda-copy: " in page and "3272.0 GB/s" in page and "identity: failed (no such kernel)" in page
