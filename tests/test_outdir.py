"""The run folder (outdir.py): its lock between processes, files written whole or not at all, and
file names made from case ids of a results file that may be crafted."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onnx_dml_bench import outdir
from onnx_dml_bench.cli import main
from onnx_dml_bench.errors import FolderInUse, UnsafePath
from onnx_dml_bench.outdir import (LOCK, FolderLock, bundle_path, case_file_name, command, locked, shrunk_path,
                                   write_files, write_text)

#: a process that holds the lock of a folder until its stdin closes (or it is killed)
HOLDER = """
import sys
from onnx_dml_bench.outdir import FolderLock
lock = FolderLock(sys.argv[1], "onnx-dml-bench run --out held-by-test").acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


def hold(folder: Path) -> subprocess.Popen:
    """Another process holding the lock of ``folder`` (returns once it holds it)."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_process_is_refused_with_the_holder_named(tmp_path):
    p = hold(tmp_path / "run")
    try:
        with pytest.raises(FolderInUse) as e:
            FolderLock(tmp_path / "run", "onnx-dml-bench report").acquire()
        msg = str(e.value)
        assert str(tmp_path / "run") in msg and f"pid {p.pid}" in msg and "onnx-dml-bench run --out held-by-test" in msg
        assert "\n" not in msg
    finally:
        p.stdin.close()
        p.wait(10)
    # released: the lock file is gone, and the folder can be taken
    assert not (tmp_path / "run" / LOCK).exists()
    with locked(tmp_path / "run", "me") as lock:
        assert lock.note == ""
        assert json.loads((tmp_path / "run" / LOCK).read_text())["pid"] == os.getpid()
    assert not (tmp_path / "run" / LOCK).exists()


def test_the_lock_of_a_killed_holder_is_taken_over_with_a_note(tmp_path):
    p = hold(tmp_path / "run")
    p.kill()
    p.wait(10)
    assert (tmp_path / "run" / LOCK).exists()          # left behind: the holder could not remove it
    notes = []
    with locked(tmp_path / "run", "me", say=notes.append):
        pass
    assert len(notes) == 1 and f"pid {p.pid}" in notes[0] and "no longer running" in notes[0]
    assert "held-by-test" in notes[0]


def test_a_lock_file_with_a_dead_pid_written_by_hand_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK).write_text(json.dumps({"pid": dead.pid, "host": "x", "command": "onnx-dml-bench run",
                                             "started": "then"}))
    lock = FolderLock(tmp_path, "me").acquire()
    try:
        assert f"pid {dead.pid}" in lock.note
    finally:
        lock.release()


def test_the_lock_is_taken_once_per_process(tmp_path):
    """`run` holds its folder and writes its reports through `report`'s writer, which takes it too."""
    with locked(tmp_path, "outer"):
        with locked(tmp_path, "inner"):
            assert (tmp_path / LOCK).exists()
        assert (tmp_path / LOCK).exists()
        other = subprocess.run([sys.executable, "-c", HOLDER, str(tmp_path)], capture_output=True, text=True,
                               timeout=60)                # another process still cannot take it
        assert other.returncode != 0 and "FolderInUse" in other.stderr and f"pid {os.getpid()}" in other.stderr
    assert not (tmp_path / LOCK).exists()


def test_a_folder_made_for_the_lock_goes_again_when_nothing_was_written(tmp_path):
    with locked(tmp_path / "new" / "run", "me"):
        assert (tmp_path / "new" / "run").is_dir()
    assert not (tmp_path / "new" / "run").exists()
    with locked(tmp_path / "kept", "me"):
        (tmp_path / "kept" / "results.jsonl").write_text("x")
    assert (tmp_path / "kept" / "results.jsonl").exists() and not (tmp_path / "kept" / LOCK).exists()


def test_a_file_is_no_folder_to_lock(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        FolderLock(tmp_path / "f", "me").acquire()


# ----------------------------------------------------------------------------------------------
# Whole or not at all
# ----------------------------------------------------------------------------------------------

class _FullDisk:
    """``open`` of outdir that runs out of room once ``room`` bytes were written to a file whose name
    holds ``which``."""

    def __init__(self, which: str, room: int = 10):
        self.which, self.room = which, room

    def __call__(self, path, mode="r", **kw):
        f = open(path, mode, **kw)
        if self.which not in str(path):
            return f
        real_write, room = f.write, [self.room]

        def write(data):
            if len(data) > room[0]:
                real_write(data[:room[0]])
                room[0] = 0
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            room[0] -= len(data)
            return real_write(data)
        f.write = write
        return f


def test_a_set_of_files_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    for name in ("report.html", "junit.xml", "summary.json"):
        (tmp_path / name).write_text(f"old {name}")
    monkeypatch.setattr(outdir, "open", _FullDisk("junit"), raising=False)
    with pytest.raises(OSError) as e:
        write_files({tmp_path / "report.html": "new html", tmp_path / "junit.xml": b"<new junit that is long/>",
                     tmp_path / "summary.json": "{}"})
    assert e.value.errno == errno.ENOSPC
    # the old set, untouched; no temporary file left; never a junit.xml of 0 bytes
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        "report.html": "old report.html", "junit.xml": "old junit.xml", "summary.json": "old summary.json"}


def test_write_text_keeps_the_old_file_on_a_full_disk(tmp_path, monkeypatch):
    (tmp_path / "triage.md").write_text("old")
    monkeypatch.setattr(outdir, "open", _FullDisk("triage", room=3), raising=False)
    with pytest.raises(OSError):
        write_text(tmp_path / "triage.md", "a much longer new text")
    assert [p.name for p in tmp_path.iterdir()] == ["triage.md"] and (tmp_path / "triage.md").read_text() == "old"
    monkeypatch.undo()
    write_text(tmp_path / "triage.md", "new")
    assert (tmp_path / "triage.md").read_text() == "new"


# ----------------------------------------------------------------------------------------------
# Names from a results file
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../../../somewhere/x", "..", ".", ".hidden", "a/b", "a\\b", "/etc/passwd", "",
                                 "x" * 201, "con", "NUL.json", "a\nb", "$(touch x)", "a b"])
def test_case_ids_that_name_no_file_are_refused(bad, tmp_path):
    with pytest.raises(UnsafePath) as e:
        shrunk_path(tmp_path / "results.jsonl", bad)
    assert "\n" not in str(e.value) and "case id" in str(e.value)
    with pytest.raises(UnsafePath):
        bundle_path(tmp_path / "results.jsonl", bad)


def test_every_case_id_of_the_sweeps_names_a_file():
    from conftest import sweep
    for c in sweep("default"):
        assert case_file_name(c.id) == c.id


def test_a_shrunk_folder_that_links_elsewhere_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "shrunk").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath, match="leads out of"):
        shrunk_path(tmp_path / "run" / "results.jsonl", "mp2-f32-x")


def test_suggested_commands_are_quoted(tmp_path):
    line = command("bundle", "id", "--from", tmp_path / "$(touch PWNED)" / "results.jsonl")
    out = subprocess.run(["bash", "-c", line.replace("onnx-dml-bench", "printf '%s\\n'", 1)], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["bundle", "id", "--from", str(tmp_path / "$(touch PWNED)" / "results.jsonl")]
    assert not (tmp_path / "PWNED").exists()


# ----------------------------------------------------------------------------------------------
# A run folder from elsewhere whose files are links: nothing is written through them
# ----------------------------------------------------------------------------------------------

def test_a_lock_file_that_is_a_link_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK).symlink_to(victim)
    with pytest.raises(UnsafePath, match="lock file of the folder is a link"):
        FolderLock(run, "onnx-dml-bench report").acquire()
    assert victim.read_text() == "keep" and (run / LOCK).is_symlink()
    (run / LOCK).unlink()
    (run / LOCK).mkdir()
    with pytest.raises(UnsafePath, match="not a file"):
        FolderLock(run, "onnx-dml-bench report").acquire()


def test_a_results_file_that_is_a_link_is_not_appended_to(tmp_path, capsys):
    """`run --resume` in a folder whose results.jsonl links to a file elsewhere: exit 2, one line,
    the file elsewhere unchanged."""
    sel = ["--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke", "--no-report"]
    assert main(["run", *sel, "--out", str(tmp_path / "src")]) == 0
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes((tmp_path / "src" / "results.jsonl").read_bytes())
    before = victim.read_bytes()
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").symlink_to(victim)
    capsys.readouterr()
    assert main(["run", *sel, "--out", str(run), "--resume"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "results file is a link" in err[0], err
    assert victim.read_bytes() == before


def test_a_temporary_file_planted_as_a_link_is_not_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "report.html"
    (tmp_path / f".report.html.{os.getpid()}.tmp").symlink_to(victim)
    write_text(target, "new")
    write_files({tmp_path / "junit.xml": "x"})
    assert target.read_text() == "new" and not target.is_symlink() and victim.read_text() == "keep"


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temporary_files_of_killed_writers_are_removed(tmp_path, capsys):
    """`report` and `merge` killed (kill -9) between writing their temporary files and renaming them
    leave `.<name>.<pid>.tmp` (a report's are tens of MB): the next writer of that file removes those
    of dead pids; a live writer's, another file's and a link's target are left alone."""
    sel = ["--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke", "--no-report"]
    assert main(["run", *sel, "--out", str(tmp_path / "src")]) == 0
    results = tmp_path / "src" / "results.jsonl"
    out = tmp_path / "rep"
    out.mkdir()
    dead, live = _dead_pid(), os.getppid()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    stale = [out / f".report.html.{dead}.tmp", out / f".junit.xml.{dead}.tmp", out / f".summary.json.{dead}.tmp",
             tmp_path / f".m.jsonl.{dead}.tmp"]
    kept = [out / f".report.html.{live}.tmp", out / f".notes.txt.{dead}.tmp", out / ".report.html.x.tmp"]
    for p in stale + kept:
        p.write_bytes(b"\0" * 1000)
    (out / f".junit.xml.{dead + 1 if dead + 1 != live else dead + 2}.tmp").symlink_to(victim)
    assert main(["report", str(results), "--out", str(out)]) == 0
    assert main(["merge", str(tmp_path / "m.jsonl"), str(results)]) == 0
    assert not any(p.exists() for p in stale), [p.name for p in stale if p.exists()]
    assert all(p.exists() for p in kept) and victim.read_text() == "keep"
    assert (out / "report.html").is_file() and (tmp_path / "m.jsonl").is_file()
