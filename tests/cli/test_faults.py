"""The command line under faults, with real processes: two commands into one folder, SIGTERM,
a full disk and a read-only folder. What each must do is in docs/guarantees.md."""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.execute import FAULTS_ENV
from onnx_dml_bench.outdir import LOCK
from onnx_dml_bench.plan import RunPlan, RunRequest
from onnx_dml_bench.results import read

CLI = [sys.executable, "-m", "onnx_dml_bench.cli"]
#: a small selection on the CPU EP, and another (disjoint) one
SEL_A = ["--ep", "cpu", "--op", "max_pooling2", "--profile", "smoke"]
SEL_B = ["--ep", "cpu", "--op", "average_pooling1", "--profile", "smoke"]
#: one case (its results file: about 5 KB, its report.html about 56 KB)
SEL_ONE = ["--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke"]


def cases_of(sel: list[str]) -> list:
    """The cases of a selection, in the order the runner batches them."""
    opt = dict(zip(sel[::2], sel[1::2]))
    plan = RunPlan.build(RunRequest(ep=opt["--ep"], ops=(opt["--op"],), dtypes=tuple(filter(None, [opt.get("--dtype")])),
                                    profile=opt["--profile"]))
    return sorted(plan.cases, key=lambda c: (c.opset, c.op, c.dtype, repr(c.variant), c.id))


def start(argv: list[str], env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(CLI + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, **kw)


def lines_of(path: Path) -> list[dict]:
    """Every whole line of a results file as written (every record, not only the latest)."""
    out = []
    for line in path.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            out.append(json.loads(line))
    return out


def wait_for_records(path: Path, n: int, proc: subprocess.Popen, limit: float = 120) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if path.exists() and sum(1 for d in lines_of(path) if d.get("record") == "case") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{path}: fewer than {n} records after {limit} s")


# ----------------------------------------------------------------------------------------------
# Two commands, one folder
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gap", [0.1, 0.3])
def test_two_runs_into_one_folder_never_mix(gap, tmp_path):
    """Two `run --overwrite` into one --out, `gap` seconds apart, each kept busy by a case that hangs
    until its batch's timeout: one runs, the other is refused at once with one line naming the
    folder and the holder; the results are the winner's, whole, and so is its summary."""
    out = tmp_path / "run"
    a, b = cases_of(SEL_A), cases_of(SEL_B)
    env = {FAULTS_ENV: json.dumps({a[3].id: "hang", b[1].id: "hang"})}
    opts = ["--overwrite", "--timeout", "4", "--batch-size", "4", "--out", str(out)]
    first = start(["run", *SEL_A, *opts], env)
    time.sleep(gap)
    second = start(["run", *SEL_B, *opts], env)
    res = {"A": (first, a), "B": (second, b)}
    done = {k: (p.wait(180), *p.communicate(), cases) for k, (p, cases) in res.items()}
    refused = [k for k, d in done.items() if d[0] == 2]
    assert len(refused) == 1, {k: (d[0], d[2][-500:]) for k, d in done.items()}
    loser, winner = refused[0], ({"A", "B"} - set(refused)).pop()
    pid = res[winner][0].pid
    err = [x for x in done[loser][2].splitlines() if x.strip()]
    assert len(err) == 1 and str(out) in err[0] and f"pid {pid}" in err[0] and "run" in err[0], err
    assert done[loser][1] == ""                                 # no summary of any run
    rc, stdout, stderr, cases = done[winner]
    assert rc == 1 and "Traceback" not in stderr                 # its hanging case is a TIMEOUT
    recs = read(out / "results.jsonl").records
    assert sorted(r.case_id for r in recs) == sorted(c.id for c in cases)
    assert f": {len(cases)} cases in " in stdout                # its own summary, not the other's
    assert not (out / LOCK).exists()


def test_two_runs_into_a_fresh_folder_never_share_it(tmp_path):
    """Both pass the "does --out hold results?" check if the lock is not taken before it: the one
    that comes second is refused before its preflight, and the folder holds one run, whole."""
    out = tmp_path / "fresh"
    a = cases_of(SEL_A)
    env = {FAULTS_ENV: json.dumps({a[3].id: "hang"})}
    procs = [start(["run", *SEL_A, "--timeout", "4", "--out", str(out)], env)]
    time.sleep(0.2)
    procs.append(start(["run", *SEL_A, "--timeout", "4", "--out", str(out)], env))
    done = [(p.wait(180), *p.communicate()) for p in procs]
    assert sorted(d[0] for d in done) == [1, 2], [(d[0], d[2][-800:]) for d in done]
    winner = next(p for p, d in zip(procs, done) if d[0] == 1)
    err = next(d[2] for d in done if d[0] == 2)
    assert f"pid {winner.pid}" in err and len(err.strip().splitlines()) == 1, err
    envs = [d for d in lines_of(out / "results.jsonl") if d.get("record") == "environment"]
    assert len(envs) == 1 and len(read(out / "results.jsonl").records) == len(a)


def test_two_benches_into_one_folder_never_mix(tmp_path):
    """`bench` holds its folder for its whole run (from before its first lane to its last line): a
    second `bench` into it, started while the first runs its CPU lane, is refused at once (exit 2,
    one line naming the folder and the first's pid), and writes nothing there."""
    out = tmp_path / "latest"
    a = cases_of(["--ep", "cpu", "--op", "max_pooling2", "--profile", "smoke"])
    env = {FAULTS_ENV: json.dumps({a[0].id: "hang"})}      # the first bench's CPU lane stays busy
    argv = ["bench", "--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "1", "--out", str(out)]
    first = start(argv, env, start_new_session=True)
    try:
        t0 = time.monotonic()
        while not (out / "cpu" / "results.jsonl").exists():
            assert first.poll() is None and time.monotonic() - t0 < 120, first.communicate()
            time.sleep(0.2)
        second = start(argv)
        rc, stdout, stderr = second.wait(60), *second.communicate()
        err = [x for x in stderr.splitlines() if x.strip()]
        assert rc == 2 and len(err) == 1 and str(out) in err[0] and f"pid {first.pid}" in err[0], (rc, stderr)
        assert "bench" in err[0] and stdout == "" and "Traceback" not in stderr
        assert first.poll() is None                               # the first goes on
        assert json.loads((out / LOCK).read_text())["pid"] == first.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.wait(60)
        first.communicate()


def test_bench_releases_its_folder_when_it_ends(tmp_path, monkeypatch, capsys):
    """The lock `bench` takes is held while its lanes run (another process is refused) and gone once
    it ends, by whatever exit: a second bench into the folder then runs."""
    from onnx_dml_bench import mainjob as B
    from onnx_dml_bench.errors import FolderInUse
    from onnx_dml_bench.outdir import FolderLock
    out = tmp_path / "latest"
    seen = []

    def lane(ln, profile, jobs, folder, *rest):
        probe = subprocess.run([sys.executable, "-c", "import sys\nfrom onnx_dml_bench.outdir import FolderLock\n"
                                "FolderLock(sys.argv[1], 'probe').acquire()", str(folder)], capture_output=True,
                               text=True)
        seen.append(probe.returncode != 0 and "FolderInUse" in probe.stderr and f"pid {os.getpid()}" in probe.stderr)
        ln.code = 0

    monkeypatch.setattr(B, "run_lane", lane)
    monkeypatch.setattr(B, "plan_lanes", lambda: ([B.LaneRun("cpu", "CPUExecutionProvider", "onnxruntime")], {}))
    for _ in range(2):
        assert main(["bench", "--no-dml", "--out", str(out)]) == 0
        assert not (out / LOCK).exists()
    assert seen == [True, True]
    FolderLock(out, "after").acquire().release()
    monkeypatch.setattr(B, "run_lane", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(["bench", "--no-dml", "--out", str(out)]) == 130              # interrupted: released too
    assert not (out / LOCK).exists()
    with pytest.raises(FolderInUse):                                          # (the probe can fail)
        lock = FolderLock(out, "mine").acquire()
        try:
            FolderLock(out, "other").acquire()
        finally:
            lock.release()


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
def test_two_dml_runs_into_a_fresh_folder(tmp_path, dml_stack):
    """The DML EP's canary (seconds under Wine) once sat between the check of --out and the open of
    its results file: two runs both passed the check and wrote one file between them."""
    out = tmp_path / "fresh"
    sel = ["--ep", "dml", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke", "--out", str(out)]
    p1 = start(["run", *sel])
    time.sleep(0.2)
    p2 = start(["run", *sel])
    done = [(p.wait(600), *p.communicate()) for p in (p1, p2)]
    codes = sorted(d[0] for d in done)
    assert codes[-1] == 2 and codes[0] in (0, 1), [(d[0], d[2][-800:]) for d in done]
    res = read(out / "results.jsonl")
    assert len(res.envs) == 1 and len(res.records) == len(cases_of(sel[:8]))


def test_a_killed_run_leaves_its_lock_and_resume_takes_it_over(tmp_path):
    out = tmp_path / "run"
    a = cases_of(SEL_A)
    p = start(["run", *SEL_A, "--timeout", "60", "--batch-size", "4", "--out", str(out)],
              {FAULTS_ENV: json.dumps({a[9].id: "hang"})}, start_new_session=True)
    wait_for_records(out / "results.jsonl", 4, p)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(30)
    assert json.loads((out / LOCK).read_text())["pid"] == p.pid
    r = subprocess.run(CLI + ["run", *SEL_A, "--batch-size", "4", "--out", str(out), "--resume"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert f"took over the lock left by pid {p.pid}" in r.stderr and "no longer running" in r.stderr
    assert sorted(x.case_id for x in read(out / "results.jsonl").records) == sorted(c.id for c in a)
    written = [d["case_id"] for d in lines_of(out / "results.jsonl") if d.get("record") == "case"]
    assert sorted(written) == sorted(c.id for c in a)          # every case once: none lost, none twice
    assert not (out / LOCK).exists()


def test_a_report_into_the_folder_of_a_running_run_is_refused(finished_run, tmp_path):
    """A `report` of another results file into the folder a `run` is writing (two real processes):
    refused at once, naming the run; the run ends whole, its reports of its own records."""
    out = tmp_path / "run"
    a = cases_of(SEL_A)
    p = start(["run", *SEL_A, "--timeout", "4", "--batch-size", "4", "--out", str(out)],
              {FAULTS_ENV: json.dumps({a[3].id: "hang"})})
    t0 = time.monotonic()
    while not (out / LOCK).exists() or f'"pid": {p.pid}' not in (out / LOCK).read_text():
        assert p.poll() is None and time.monotonic() - t0 < 120, p.communicate()
        time.sleep(0.05)
    r = subprocess.run(CLI + ["report", str(finished_run), "--out", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and f"pid {p.pid}" in r.stderr and str(out) in r.stderr, r.stderr[-1500:]
    assert p.poll() is None                                      # still running: the report came mid-run
    rc, (stdout, stderr) = p.wait(180), p.communicate()
    assert rc == 1, stderr[-1500:]                               # its hanging case is a TIMEOUT
    assert sorted(x.case_id for x in read(out / "results.jsonl").records) == sorted(c.id for c in a)
    summary = json.loads((out / "summary.json").read_text())
    assert sum(summary["totals"].values()) == len(a), summary["totals"]
    assert not (out / LOCK).exists()


HOLD = """
import sys
from onnx_dml_bench.outdir import FolderLock
lock = FolderLock(sys.argv[1], "onnx-dml-bench triage --from x").acquire()
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished run of SEL_ONE (its results file)."""
    out = tmp_path_factory.mktemp("done") / "run"
    assert main(["run", *SEL_ONE, "--out", str(out), "--no-report"]) == 0
    return out / "results.jsonl"


def test_every_command_that_writes_into_a_run_folder_respects_its_lock(finished_run, tmp_path, capsys):
    """run, report, merge --report, shrink, bundle, triage, fuzz and compare's page: each refused
    with exit code 2 and one line naming the folder and the holder while another process holds it;
    nothing in the folder changes."""
    run = tmp_path / "held"
    run.mkdir()
    results = run / "results.jsonl"
    results.write_bytes(finished_run.read_bytes())
    first = read(results).records[0].case_id
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    commands = {
        "run --resume": ["run", *SEL_ONE, "--out", str(run), "--resume"],
        "run --overwrite": ["run", *SEL_ONE, "--out", str(run), "--overwrite"],
        "report": ["report", str(finished_run), "--out", str(run)],
        "merge --report": ["merge", str(run / "merged.jsonl"), str(finished_run), "--report"],
        "shrink": ["shrink", first, "--from", str(results)],
        "bundle": ["bundle", first, "--from", str(results), "--out", str(run / "bundle" / first), "--no-rerun"],
        "triage": ["triage", "--from", str(results)],
        "fuzz": ["fuzz", "--out", str(run), "--budget", "5s", "--max-cases", "2"],
        "compare": ["compare", str(finished_run), str(results), "--out", str(run)],      # the page only where --out asks
    }
    before = sorted(p.name for p in run.iterdir())
    try:
        for name, argv in commands.items():
            capsys.readouterr()
            code = main(argv)
            out, err = capsys.readouterr()
            lines = [x for x in err.splitlines() if x.strip()]
            assert code == 2, (name, code, err[-1500:])
            assert len(lines) == 1 and str(run) in lines[0] and f"pid {holder.pid}" in lines[0], (name, err)
            assert "onnx-dml-bench triage --from x" in lines[0], name
            assert sorted(p.name for p in run.iterdir()) == before, name
            assert results.read_bytes() == finished_run.read_bytes(), name
    finally:
        holder.stdin.close()
        holder.wait(10)


# ----------------------------------------------------------------------------------------------
# SIGTERM
# ----------------------------------------------------------------------------------------------

def _alive_in_group(pgid: int) -> list[str]:
    """The processes of a process group that still run (a zombie, dead and not yet reaped by the
    container's first process, does not)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(text[:200])
    return alive


@pytest.mark.parametrize("whole_group", [True, False], ids=["group", "parent"])
def test_sigterm_saves_prints_the_resume_command_and_exits_143(whole_group, tmp_path):
    """CI cancels a job with SIGTERM, to the whole process group or to the command alone: the run
    saves what is done, prints the command that continues it and exits 143; no worker prints a
    traceback, none of its cases is recorded as a CRASH, and the command printed finishes the run
    with every case once."""
    out = tmp_path / "run dir"
    a = cases_of(SEL_A)
    hang = {a[8].id: "hang", a[13].id: "hang"}       # both workers stuck: the run is mid-way for sure
    p = start(["run", *SEL_A, "--jobs", "2", "--batch-size", "2", "--timeout", "120", "--out", str(out)],
              {FAULTS_ENV: json.dumps(hang)}, start_new_session=True)
    try:
        wait_for_records(out / "results.jsonl", 4, p)
        time.sleep(0.5)
        if whole_group:
            os.killpg(p.pid, signal.SIGTERM)
        else:
            p.send_signal(signal.SIGTERM)
        # a worker left running would hold the pipe open: communicate() would not return
        _, err = p.communicate(timeout=60)
        time.sleep(1)
        alive = _alive_in_group(p.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    rc = p.returncode
    assert rc == 143, err[-2000:]
    assert "Traceback" not in err and "Error" not in err, err[-2000:]
    assert "interrupted (SIGTERM)" in err
    resume = err.strip().splitlines()[-1].strip()
    assert resume.startswith("onnx-dml-bench run ") and resume.endswith("--resume")
    assert alive == []                               # no worker left behind
    saved = [d for d in lines_of(out / "results.jsonl") if d.get("record") == "case"]
    assert 4 <= len(saved) < len(a) and not any(d["verdict"] == "CRASH" for d in saved)
    assert not (out / LOCK).exists()
    # the line printed, pasted: the run continues where it stopped
    argv = shlex.split(resume)[1:]
    r = subprocess.run(CLI + argv, capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    recs = read(out / "results.jsonl").records
    assert sorted(x.case_id for x in recs) == sorted(c.id for c in a)
    assert not any(d["verdict"] in ("CRASH", "TIMEOUT") for d in lines_of(out / "results.jsonl")
                   if d.get("record") == "case")


# ----------------------------------------------------------------------------------------------
# A full disk, a read-only folder
# ----------------------------------------------------------------------------------------------

def _can_mount() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0


@pytest.fixture
def small_fs(tmp_path):
    """mount(size) -> a tmpfs of that size (``ro=True``: read-only); unmounted afterwards."""
    if not _can_mount():
        pytest.skip("needs root on Linux to mount a tmpfs")
    mounts = []

    def mount(size: str, ro: bool = False, name: str = "fs") -> Path:
        d = tmp_path / name
        d.mkdir()
        opts = f"size={size}" + (",ro" if ro else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounts.append(d)
        return d
    yield mount
    for d in mounts:
        subprocess.run(["umount", "-l", str(d)], check=False)


def _fill(fs: Path, leave: int) -> Path:
    """A file that takes all of ``fs`` but ``leave`` bytes."""
    st = os.statvfs(fs)
    free = st.f_bavail * st.f_frsize
    filler = fs / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("onnx-dml-bench: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    return lines[0]


def test_room_for_the_results_but_not_the_reports(small_fs):
    """The results are whole, the reports are not written at all (never a junit.xml of 0 bytes),
    one line and exit code 5; `report` writes them once there is room."""
    fs = small_fs("256k")
    out = fs / "run"
    _fill(fs, 6 * 4096)                 # the results (about 5 KB), the lock; not a 56 KB report.html
    r = subprocess.run(CLI + ["run", *SEL_ONE, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stderr[-2000:]
    line = _one_error_line(r.stderr)
    assert "No space left on device" in line and str(out) in line
    assert "report" in r.stderr and "once there is room" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["results.jsonl"]      # nothing cut short, no temporary file
    assert len(read(out / "results.jsonl").records) == len(cases_of(SEL_ONE))
    (fs / "filler").unlink()
    assert main(["report", str(out / "results.jsonl"), "--out", str(out)]) == 0
    assert (out / "junit.xml").stat().st_size > 0


def test_a_disk_that_fills_during_the_run(small_fs):
    """The results file fills up mid-run: the run stops with the cases saved whole and the command
    that continues it (exit code 5); once there is room, that command finishes the run."""
    fs = small_fs("512k")
    out = fs / "run"
    filler = _fill(fs, 4 * 4096)        # the lock, and three pages of results (the environment, a few records)
    r = subprocess.run(CLI + ["run", *SEL_A, "--batch-size", "4", "--no-report", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stderr[-2000:]
    assert "No space left on device" in _one_error_line(r.stderr)
    resume = next(x.strip() for x in r.stderr.splitlines() if x.strip().endswith("--resume"))
    saved = read(out / "results.jsonl", allow_partial=True).records
    assert 0 < len(saved) < len(cases_of(SEL_A))
    filler.unlink()
    r = subprocess.run(CLI + shlex.split(resume)[1:], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert sorted(x.case_id for x in read(out / "results.jsonl").records) == sorted(c.id for c in cases_of(SEL_A))


def test_a_read_only_folder(small_fs, finished_run, capsys):
    ro = small_fs("64k", ro=True)
    for argv in (["run", *SEL_ONE, "--out", str(ro / "run")],
                 ["report", str(finished_run), "--out", str(ro)],
                 ["report", str(finished_run), "--out", str(ro / "new")],
                 ["merge", str(ro / "m.jsonl"), str(finished_run)],
                 ["compare", str(finished_run), str(finished_run), "--out", str(ro)]):
        capsys.readouterr()
        assert main(argv) == 5, argv
        line = _one_error_line(capsys.readouterr().err)
        assert "Read-only file system" in line and str(ro) in line, line


def test_every_writer_names_the_file_asked_for_in_a_read_only_folder(small_fs, finished_run, capsys):
    """`fixtures`, `expectations` and `cases --export` into a read-only folder: exit code 5 and one line
    naming the folder or file asked for, never a raw errno text nor the writer's temporary file."""
    ro = small_fs("64k", ro=True)
    for argv, named in ((["fixtures", "--op", "space_to_depth1", "--dtype", "f32", "--out", str(ro / "fx")], ro / "fx"),
                        (["fixtures", "--op", "space_to_depth1", "--dtype", "f32", "--out", str(ro)], ro),
                        (["expectations", "--from", str(finished_run), "--out", str(ro / "e.yaml")], ro / "e.yaml"),
                        (["cases", "--op", "space_to_depth1", "--export", str(ro / "x.yaml")], ro / "x.yaml"),
                        (["cases", "--op", "space_to_depth1", "--export", str(ro / "x.json")], ro / "x.json")):
        capsys.readouterr()
        assert main(argv) == 5, argv
        line = _one_error_line(capsys.readouterr().err)
        assert "Read-only file system" in line and str(named) in line and ".tmp" not in line, line
        assert "[Errno" not in line, line


def test_resume_on_a_disk_still_full_names_the_file(small_fs):
    """`run --resume` while the disk is still full: exit code 5, one line naming the results file (not
    a bare "No space left on device"), the cases saved so far unchanged and the --resume line again."""
    fs = small_fs("512k")
    out = fs / "run"
    filler = _fill(fs, 4 * 4096)
    r = subprocess.run(CLI + ["run", *SEL_A, "--batch-size", "4", "--no-report", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stderr[-2000:]
    resume = next(x.strip() for x in r.stderr.splitlines() if x.strip().endswith("--resume"))
    saved = sorted(x.case_id for x in read(out / "results.jsonl", allow_partial=True).records)
    with open(fs / "last", "wb") as f:          # what the run left free: taken too
        with contextlib.suppress(OSError):
            f.write(b"\0" * (1 << 20))
    r = subprocess.run(CLI + shlex.split(resume)[1:], capture_output=True, text=True, timeout=300)
    assert r.returncode == 5, r.stderr[-2000:]
    line = _one_error_line(r.stderr)
    assert "No space left on device" in line and str(out) in line, line
    assert sorted(x.case_id for x in read(out / "results.jsonl", allow_partial=True).records) == saved
    filler.unlink()
    (fs / "last").unlink()
    r = subprocess.run(CLI + shlex.split(resume)[1:], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
