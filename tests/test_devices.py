"""Every device of a host in one run (``run --devices``, ``devices.py``) and the odd device out
(``crossdevice.py``: the finding DEVICE_DIFFERS), without a GPU: the CPU EP's lane made to list
devices by the test hook ``FAKE_DEVICES_ENV``, one of them answering with a bit flipped
(``DEVICE_FAULT_ENV``); and several hosts' device sets merged into one cross-device report."""
from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from onnx_dml_bench import crossdevice as X
from onnx_dml_bench.cli import main
from onnx_dml_bench.lanes.base import DEVICE_FAULT_ENV, FAKE_DEVICES_ENV
from onnx_dml_bench.record import IDENTITY_KEYS, CaseRecord, Environment, OutputStats, jsonable, to_json
from onnx_dml_bench.results import env_id, read

SMALL = ("--ep", "cpu", "--op", "MAX_POOLING2", "--dtype", "FLOAT32", "--overwrite")


def _run(tmp_path, name, *extra, devices="all", fake=3, fault=None, monkeypatch):
    monkeypatch.setenv(FAKE_DEVICES_ENV, str(fake))
    if fault is None:
        monkeypatch.delenv(DEVICE_FAULT_ENV, raising=False)
    else:
        monkeypatch.setenv(DEVICE_FAULT_ENV, str(fault))
    out = tmp_path / name
    code = main(["run", *SMALL, "--devices", devices, "--out", str(out), *extra])
    return code, out


def _by_device(out):
    res = read(out / "results.jsonl")
    index = {e.env_id: e.get("device_unit")["index"] for e in res.envs}
    by: dict[int, list[CaseRecord]] = {}
    for r in res.records:
        by.setdefault(index[r.env_id], []).append(r)
    return res, by


def test_the_faulty_device_of_three_is_named(tmp_path, monkeypatch):
    code, out = _run(tmp_path, "three", "--same-cases", "--fail-on", "DEVICE_DIFFERS", fault=1,
                     monkeypatch=monkeypatch)
    assert code == 1
    res, by = _by_device(out)
    assert len({e.env_id for e in res.envs}) == 3
    assert [e.get("device_unit")["uuid"] for e in res.envs] == ["fake-cpu-0", "fake-cpu-1", "fake-cpu-2"]
    assert sorted(by) == [0, 1, 2] and len({len(v) for v in by.values()}) == 1     # every case on every device
    assert by[1] and all("DEVICE_DIFFERS" in r.findings for r in by[1])
    assert all("device 1 (" in r.reason and "fake-cpu-1" in r.reason.split("DEVICE_DIFFERS")[1] for r in by[1])
    assert not any("DEVICE_DIFFERS" in r.findings for r in by[0] + by[2])
    html = (out / "report.html").read_text()
    assert 'id="crossdevice"' in html and "fake-cpu-1" in html


def test_identical_devices_pass_the_gate(tmp_path, monkeypatch):
    code, out = _run(tmp_path, "same", "--same-cases", "--fail-on", "DEVICE_DIFFERS", fake=2, monkeypatch=monkeypatch)
    assert code == 0
    res, by = _by_device(out)
    assert sorted(by) == [0, 1] and len(by[0]) == len(by[1]) > 0
    assert all(o.digest for r in res.records for o in r.outputs.values())
    assert not any(r.findings for r in res.records if "DEVICE_DIFFERS" in r.findings)


def test_two_devices_that_differ_are_both_named_without_a_majority(tmp_path, monkeypatch):
    code, out = _run(tmp_path, "two", "--same-cases", "--fail-on", "DEVICE_DIFFERS", fake=2, fault=0,
                     monkeypatch=monkeypatch)
    assert code == 1
    res, by = _by_device(out)
    for k in (0, 1):
        assert all("DEVICE_DIFFERS" in r.findings and "no majority" in r.reason for r in by[k])


def test_without_same_cases_the_cases_are_dealt(tmp_path, monkeypatch):
    code, out = _run(tmp_path, "dealt", "--fail-on", "DEVICE_DIFFERS", fake=2, monkeypatch=monkeypatch)
    assert code == 0
    res, by = _by_device(out)
    ids = [r.case_id for r in res.records]
    assert len(ids) == len(set(ids)) and by[0] and by[1]       # each case once, on one device or the other
    solo = main(["run", *SMALL, "--out", str(tmp_path / "solo")])
    assert solo in (0, 1)
    assert sorted(ids) == sorted(r.case_id for r in read(tmp_path / "solo" / "results.jsonl").records)


def test_bad_device_choices_are_one_line_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(FAKE_DEVICES_ENV, raising=False)
    assert main(["run", *SMALL, "--devices", "all", "--out", str(tmp_path / "a")]) == 2
    assert "no devices to choose from" in capsys.readouterr().err
    monkeypatch.setenv(FAKE_DEVICES_ENV, "2")
    assert main(["run", *SMALL, "--devices", "0,5", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no device 5" in err[0]
    assert main(["run", *SMALL, "--devices", "0,x", "--out", str(tmp_path / "c")]) == 2
    assert main(["run", *SMALL, "--same-cases", "--out", str(tmp_path / "d")]) == 2
    assert "--same-cases needs --devices" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# Several hosts merged
# ----------------------------------------------------------------------------------------------

def _as_host(src, dst, host: str) -> None:
    """The results of ``src`` as if another host had written them: its machine and device UUIDs."""
    res = read(src)
    new = {}
    lines = []
    for e in res.envs:
        unit = dict(e.get("device_unit"), uuid=f"{host}-{e.get('device_unit')['uuid']}")
        e2 = Environment.from_flat({**e.flat(), "machine": host, "device_unit": unit, "env_id": ""})
        e2.env_id = env_id(e2)
        new[e.env_id] = e2.env_id
        lines.append(to_json(e2))
    for r in res.records:
        lines.append(to_json(dataclasses.replace(r, env_id=new[r.env_id])))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(lines) + "\n")


def test_merge_of_two_hosts_names_the_odd_device(tmp_path, monkeypatch):
    _, a = _run(tmp_path, "hostA", "--same-cases", fake=2, monkeypatch=monkeypatch)
    _, b = _run(tmp_path, "hostB", "--same-cases", fake=2, fault=1, monkeypatch=monkeypatch)
    _as_host(a / "results.jsonl", tmp_path / "A" / "results.jsonl", "rack1-node1")
    _as_host(b / "results.jsonl", tmp_path / "B" / "results.jsonl", "rack1-node2")
    merged = tmp_path / "merged.jsonl"
    assert main(["merge", str(merged), str(tmp_path / "A" / "results.jsonl"),
                 str(tmp_path / "B" / "results.jsonl")]) == 0
    res = read(merged)
    assert len(res.envs) == 4
    odd = {r.env_id for r in res.records if "DEVICE_DIFFERS" in r.findings}
    assert len(odd) == 1
    (env,) = [e for e in res.envs if e.env_id in odd]
    assert env.machine == "rack1-node2" and env.get("device_unit")["index"] == 1
    reasons = [r.reason for r in res.records if r.env_id in odd]
    assert all("device 1 (" in t and "on rack1-node2" in t and "3 sibling device(s)" in t for t in reasons)
    assert main(["report", str(merged), "--out", str(tmp_path / "rep")]) in (0, 1)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="crossdevice"' in html and "rack1-node2" in html


# ----------------------------------------------------------------------------------------------
# The comparison itself
# ----------------------------------------------------------------------------------------------

def _env(i: int, **kw) -> Environment:
    e = Environment.from_flat({"ep": "CUDAExecutionProvider", "device": "NVIDIA H200", "driver": "580.1",
                               "machine": "h", "device_unit": {"index": i, "uuid": f"GPU-{i}"}, **kw})
    e.env_id = env_id(e)
    return e


def _rec(e: Environment, digest: str, verdict="PASS") -> CaseRecord:
    return CaseRecord("c1", "max_pooling2", "MAX_POOLING2", "FLOAT32", 12, "f", 0, {}, e.ep, verdict,
                      outputs={"Y": OutputStats("Y", "exact", True, 4, digest=digest)}, env_id=e.env_id)


def test_majority_and_idempotence():
    envs = [_env(i) for i in range(3)]
    recs = [_rec(envs[0], "aa"), _rec(envs[1], "bb"), _rec(envs[2], "aa")]
    diffs = X.flag(envs, recs)
    assert [d.odd for d in diffs] == [[envs[1].env_id]]
    assert recs[1].finding == "DEVICE_DIFFERS" and "outputs Y differ" in recs[1].reason
    before = json.dumps([to_json(r) for r in recs])
    X.flag(envs, recs)                                   # again: the same records
    assert json.dumps([to_json(r) for r in recs]) == before
    recs[1].outputs["Y"].digest = "aa"                   # fixed: the finding goes
    assert X.flag(envs, recs) == [] and recs[1].finding is None and "DEVICE_DIFFERS" not in recs[1].reason


def test_only_siblings_are_compared():
    a, b = _env(0), _env(1, driver="580.2")              # another driver: not siblings
    c = Environment.from_flat({"ep": "CUDAExecutionProvider", "device": "NVIDIA H200", "driver": "580.1"})
    c.env_id = env_id(c)                                 # a run on the default device: not compared
    recs = [_rec(a, "aa"), _rec(b, "bb"), _rec(c, "cc")]
    assert X.flag([a, b, c], recs) == []
    v = [_rec(_env(0), "aa"), _rec(_env(1), "aa", verdict="EP_ERROR")]
    assert [len(d.odd) for d in X.flag([_env(0), _env(1)], v)] == [2]     # a verdict of its own is a difference too


def test_env_ids_without_a_device_are_as_before():
    e = Environment.from_flat({"ep": "CPUExecutionProvider", "device": "x"})
    bound = Environment.from_flat({"ep": "CPUExecutionProvider", "device": "x", "device_unit": {"index": 0}})
    assert env_id(e) != env_id(bound)
    flat = e.flat()                                      # the identity of records written before devices
    old = hashlib.sha256(json.dumps(jsonable([flat.get(k) for k in IDENTITY_KEYS]), sort_keys=True).encode())
    assert env_id(e) == old.hexdigest()[:12]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_deal_keeps_every_case_once(n):
    from onnx_dml_bench.devices import deal
    from onnx_dml_bench.lanes.base import RunConfig
    from onnx_dml_bench.plan import select_cases
    cases = select_cases("smoke", ["max_pooling2"])
    parts = deal(cases, n, RunConfig(batch_size=4))
    assert len(parts) == n and sorted(c.id for p in parts for c in p) == sorted(c.id for c in cases)


def test_ctrl_c_stops_every_device_and_resume_continues_each(tmp_path):
    """Ctrl-C in a run over two devices: exit 130, no traceback, the resume command; --resume then
    runs on each device only what that device has not done, and every case ends on both."""
    import os
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "r"
    argv = ["run", "--ep", "cpu", "--devices", "all", "--same-cases", "--profile", "default", "--op", "max_pooling2",
            "--batch-size", "4", "--no-report", "--out", str(out)]
    env = {**os.environ, FAKE_DEVICES_ENV: "2"}
    env.pop(DEVICE_FAULT_ENV, None)
    p = subprocess.Popen([sys.executable, "-m", "onnx_dml_bench.cli", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") > 12):
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "--resume" in err.strip().splitlines()[-1]
    before = read(results, allow_partial=True)
    total = len({r.case_id for r in before.records})
    r = subprocess.run([sys.executable, "-m", "onnx_dml_bench.cli", *argv[:-2], "--out", str(out), "--resume",
                        "--fail-on", "DEVICE_DIFFERS"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    after = read(results)
    by_env: dict[str, set] = {}
    for rec in after.records:
        by_env.setdefault(rec.env_id, set()).add(rec.case_id)
    assert len(by_env) == 2 and len({frozenset(v) for v in by_env.values()}) == 1
    assert len(next(iter(by_env.values()))) >= total


def test_every_device_s_workers_share_the_host_s_cores(monkeypatch):
    """``run --devices``: each device's pool gets the run's config with the host's workers over
    every device (jobs x devices), by which each worker's reference takes its share of the cores,
    and the memory budget shared."""
    from onnx_dml_bench import devices as D
    from onnx_dml_bench.lanes.base import RunConfig
    seen = []

    class Pool:
        def __init__(self, lane, cfg, batches, emit, stopping):
            seen.append(cfg)
            self.workers = []

        def run(self):
            pass
    monkeypatch.setattr(D, "_DevicePool", Pool)
    D.run_on_devices([None, None, None], [[], [], []], RunConfig(jobs=2, memory_budget=6 << 30))
    assert [c.host_workers for c in seen] == [6, 6, 6]
    assert [c.jobs for c in seen] == [2, 2, 2] and all(c.memory_budget == 2 << 30 for c in seen)
