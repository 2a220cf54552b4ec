"""The run folder: which files a run writes into its output folder, and where the triage
commands put their work beside a results file so that the reports find it.

    <folder>/results.jsonl                the records (environment first)       run, fuzz
    <folder>/report.html, junit.xml,      the reports of the results            run, report, fuzz
             summary.json
    <folder>/shrunk/<case id>.json        the minimal case of a recorded case   shrink, triage, fuzz
    <folder>/bundle/<case id>/README.md   the hand-over folder of a case        bundle, triage
    <folder>/triage.md, triage.json       one row per failure signature         triage
    <folder>/compare.html                 this run against a baseline           compare
    <folder>/bench.json                   the main job's facts: expectations,   bench
                                          the bugs shrunk, what changed
    <folder>/previous/                    the run before, kept for what changed bench

``<case id>`` is the id of the recorded case (the one shrunk or bundled), so the report links that
record to its minimal case and bundle (:func:`triage_links`). A results file may come from
elsewhere (a CI artifact): a case id becomes a file name only if it is one the bench writes
(:func:`case_file_name`), and the path it makes stays inside its folder (:func:`inside`).

One command at a time writes into a run folder: :class:`FolderLock` (the file ``.onnx-dml-bench.lock``
in the folder) is held by ``run``, ``report``, ``merge --report``, ``shrink``, ``bundle``,
``triage``, ``fuzz`` and ``compare`` while they write there, and by ``bench`` for its whole run
(:func:`hold_folder`). Reports are written whole or not at
all (:func:`write_files`, :func:`atomic`: a temporary file renamed over the old one).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shlex
import socket
import time
from pathlib import Path

from .errors import FolderInUse, UnsafePath
from .record import Verdict
from .signature import signature

RESULTS = "results.jsonl"
REPORT_HTML = "report.html"
JUNIT_XML = "junit.xml"
SUMMARY_JSON = "summary.json"
#: what a run writes into its output folder (what ``run --overwrite`` replaces)
RUN_FILES = (RESULTS, REPORT_HTML, JUNIT_XML, SUMMARY_JSON)
SHRUNK_DIR = "shrunk"
BUNDLE_DIR = "bundle"
#: the page of a bundle the reports link to
BUNDLE_README = "README.md"
TRIAGE_MD = "triage.md"
TRIAGE_JSON = "triage.json"
COMPARE_HTML = "compare.html"
#: the main job's facts beside its merged results (report/bugs.py reads them), its previous run
BENCH_JSON = "bench.json"
PREVIOUS_DIR = "previous"


#: what a case id must look like to name a file: the bench's ids are letters, digits, '.' and '-'
#: (``max_pooling2``'s ``mp2-f32-2d-k2x2-...-o12-3f9c0a1b2d``); no separator, no leading dot
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
#: names Windows keeps for devices, whatever the extension
_DEVICES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def case_file_name(case_id: str, where: str = "") -> str:
    """``case_id`` when it can name a file or folder of a run folder; UnsafePath otherwise (a case
    id with a path separator, ``..``, a leading dot, a control character, a device name: a results
    file that is damaged or crafted)."""
    if not isinstance(case_id, str) or not _NAME.fullmatch(case_id) or case_id.split(".")[0].lower() in _DEVICES:
        shown = repr(case_id)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        raise UnsafePath(f"{where + ': ' if where else ''}case id {shown} cannot name a file (a case id of the "
                         f"bench holds only letters, digits, '.', '-'): the results file is damaged or crafted")
    return case_id


def inside(base: Path, path: Path) -> Path:
    """``path`` when it stays inside the folder ``base`` once links are followed; UnsafePath
    otherwise (a ``shrunk`` or ``bundle`` folder that is a link to elsewhere, say)."""
    root = Path(base).resolve()
    real = Path(path).resolve()
    if real != root and root not in real.parents:
        raise UnsafePath(f"{path}: leads out of {base} (to {real}): refused")
    return Path(path)


def shrunk_path(results: Path, case_id: str) -> Path:
    """Where the shrunk case of ``case_id`` lives by convention: ``shrunk/<id>.json`` beside the
    results file (the report and JUnit link to it when it exists). UnsafePath for a case id that
    is no file name, or a path that leaves the results' folder."""
    base = Path(results).parent
    return inside(base, base / SHRUNK_DIR / f"{case_file_name(case_id, str(results))}.json")


def bundle_path(results: Path, case_id: str) -> Path:
    """Where the report looks for a bundle of ``case_id``: ``bundle/<id>/`` beside the results
    (UnsafePath as for :func:`shrunk_path`)."""
    base = Path(results).parent
    return inside(base, base / BUNDLE_DIR / case_file_name(case_id, str(results)))


def own_file(path: Path | str, what: str) -> Path:
    """``path`` when it is a plain file of its folder or absent; UnsafePath when it is a link (a
    run folder from elsewhere, a CI artifact, may hold ``results.jsonl`` or the lock file as a link
    to a file outside it, which a write would then change), a file with more than one hard link
    (the same change, through another name) or not a file at all."""
    path = Path(path)
    if path.is_symlink():
        raise UnsafePath(f"{path}: the {what} is a link (to {os.readlink(path)}), and writing it would write "
                         f"there: refused (remove the link)")
    if path.exists() and not path.is_file():
        raise UnsafePath(f"{path}: the {what} is not a file: refused")
    try:
        links = os.stat(path).st_nlink
    except OSError:
        links = 1
    if links > 1:
        raise UnsafePath(f"{path}: the {what} has {links} hard links (the same file under another name, maybe "
                         f"outside the folder), and writing it would change them all: refused (make it a file of "
                         f"its own: cp {shlex.quote(str(path))} x && mv x {shlex.quote(str(path))})")
    return path


def run_folder_of(path: Path | str) -> Path | None:
    """The run folder a file or folder to write lands in: the nearest of its parent, grandparent
    and great-grandparent that holds a results file or a lock (``<run>/shrunk/x.json``,
    ``<run>/bundle/<id>``); None when it lands in none."""
    p = Path(path).parent
    for _ in range(3):
        if (p / RESULTS).exists() or (p / LOCK).exists():
            return p
        if p.parent == p:
            break
        p = p.parent
    return None


def command(*argv) -> str:
    """A command line a person can paste into a shell: every argument quoted (``shlex``), so a
    case id or a path from a results file is never run as shell code."""
    return shlex.join(["onnx-dml-bench", *(str(a) for a in argv)])


def triage_links(sources, records) -> dict[str, dict]:
    """For every failure among ``records`` (a verdict with a signature): the shrunk case file and the bundle that exist beside
    the results files ``sources`` (paths relative to the results' folder, where the reports are
    written), and the command that makes the bundle (run in the results' folder). A failure whose own case was not shrunk or
    bundled gets those of the record of the same EP and signature that was (``of``: that record's
    case id): triage shrinks one case per signature, and its minimal case stands for all of them."""
    shrunk: dict[str, str] = {}
    bundles: dict[str, str] = {}
    first = None
    for src in sources:
        base = Path(src).parent
        first = first or Path(src)
        d = base / SHRUNK_DIR
        if d.is_dir():
            for p in d.glob("*.json"):
                shrunk.setdefault(p.stem, f"{SHRUNK_DIR}/{p.name}")
        b = base / BUNDLE_DIR
        if b.is_dir():
            for p in b.iterdir():
                if (p / BUNDLE_README).is_file():
                    bundles.setdefault(p.name, f"{BUNDLE_DIR}/{p.name}/{BUNDLE_README}")
    own: dict[str, dict] = {}
    shared: dict[tuple, dict] = {}          # (EP, signature) -> the links of the record triage took
    for r in records:
        sig = signature(r)
        if sig is None:
            continue
        d = {}
        if r.case_id in shrunk:
            d["shrunk"] = shrunk[r.case_id]
        if r.case_id in bundles:
            d["bundle"] = bundles[r.case_id]
        own[r.case_id] = d
        if d:
            shared.setdefault((r.ep, sig), {**d, "of": r.case_id})
    out = {}
    for r in records:
        sig = signature(r)
        if sig is None:
            continue
        d = dict(own[r.case_id])
        if not d and (r.ep, sig) in shared:
            d = dict(shared[(r.ep, sig)])
        if "bundle" not in d and first is not None and r.verdict == Verdict.FAIL and _NAME.fullmatch(r.case_id):
            # run in the results' folder (the report's): no path of the machine that wrote the report
            d["cmd"] = command("bundle", r.case_id, "--from", first.name, "--out", f"{BUNDLE_DIR}/{r.case_id}")
        out[r.case_id] = d
    return out


# ----------------------------------------------------------------------------------------------
# Files written whole or not at all
# ----------------------------------------------------------------------------------------------

def _temp_of(path: Path) -> Path:
    """A new temporary file's name beside ``path`` (one left there, or a link planted by a folder
    from elsewhere, goes first: the file is then made anew, never written through a link). The
    temporary files of ``path`` left by writers of this host that died (kill -9) go too."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        if tmp.is_symlink() or tmp.is_file():
            tmp.unlink()
    _remove_stale_temps(path)
    return tmp


def _remove_stale_temps(path: Path) -> None:
    """Remove ``.<name>.<pid>.tmp`` beside ``path`` whose pid is no live process: what a writer
    killed before its rename left (a report's temporary files are tens of MB)."""
    prefix = f".{path.name}."
    try:
        names = [n for n in os.listdir(path.parent or ".") if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):-len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(path.parent / n)         # the entry itself: a link is removed, never followed


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (on Windows, where ``os.kill`` would end it, every
    pid counts as alive: nothing is removed)."""
    if os.name == "nt" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # another user's process: alive
        return True
    return True


def named(e: OSError, path: Path | str, tmp: Path | None = None) -> OSError:
    """``e`` naming the file it is about: ``path``, where it names none (a failed write of an open
    file) or names ``tmp``, the temporary file written for ``path`` (never the name a person did
    not ask for)."""
    if e.errno is not None and (e.filename is None or (tmp is not None and str(e.filename) == str(tmp))):
        return type(e)(e.errno, e.strerror or os.strerror(e.errno), str(path))
    return e


@contextlib.contextmanager
def atomic(path: Path | str, mode: str = "w"):
    """A file object whose content becomes ``path`` only when the block ends without an error:
    written to a temporary file beside it, flushed to disk, then renamed over ``path``. On an
    error (a full disk, a read-only folder) the temporary file is removed and ``path`` keeps
    what it held before: never a file cut short."""
    path = Path(path)
    tmp = _temp_of(path)
    try:
        with open(tmp, mode.replace("w", "x"), **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise named(e, path, tmp) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: Path | str, text: str) -> Path:
    """``text`` into ``path``, whole or not at all (:func:`atomic`)."""
    with atomic(path) as f:
        f.write(text)
    return Path(path)


def write_files(files: dict) -> list[Path]:
    """Several files (path -> str or bytes) as one: every one is written to its temporary file
    first, and only when all are on disk are they renamed into place. A failure leaves the old
    files as they were, so a folder never mixes new and old reports, or holds one cut short."""
    done: list[tuple[Path, Path]] = []
    path = tmp = None
    try:
        for path, data in files.items():
            path = Path(path)
            tmp = _temp_of(path)
            done.append((tmp, path))
            with open(tmp, "xb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
                f.flush()
                os.fsync(f.fileno())
    except BaseException as e:
        for tmp, _ in done:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(e, OSError) and path is not None:
            raise named(e, path, tmp) from None
        raise
    for tmp, path in done:
        os.replace(tmp, path)
    return [p for _, p in done]


# ----------------------------------------------------------------------------------------------
# The lock of a run folder
# ----------------------------------------------------------------------------------------------

LOCK = ".onnx-dml-bench.lock"

try:
    import fcntl as _fcntl
except ImportError:         # Windows
    _fcntl = None
    import msvcrt as _msvcrt

#: where the Windows lock sits in the lock file: past its text, which other processes then still read
_WIN_LOCK_OFFSET = 1 << 30

#: folder (resolved) -> [lock, depth]: the locks this process holds (a command that calls another
#: one's writer, as `run` writes its reports, takes its own lock again)
_HELD: dict[str, list] = {}


def _try_lock(fd: int) -> bool:
    try:
        if _fcntl is not None:
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        else:
            os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
            _msvcrt.locking(fd, _msvcrt.LK_NBLCK, 1)
        return True
    except OSError:
        return False


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        if _fcntl is not None:
            _fcntl.flock(fd, _fcntl.LOCK_UN)
        else:
            os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
            _msvcrt.locking(fd, _msvcrt.LK_UNLCK, 1)


def _holder_text(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read(4096)
        d = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def describe_holder(h: dict) -> str:
    """A lock holder in words: pid, host, since when, command."""
    if not h:
        return "another process (it has not written its name yet)"
    cmd = str(h.get("command") or "?")
    cmd = cmd if len(cmd) <= 200 else cmd[:197] + "..."
    host = h.get("host")
    where = f" on {host}" if host and host != socket.gethostname() else ""
    return f"pid {h.get('pid', '?')}{where}, since {h.get('started', '?')}: {cmd}"


class FolderLock:
    """The lock of a run folder: held by one command at a time (``flock`` on POSIX, a byte lock on
    Windows: the system releases it when the process dies however it dies). The lock file holds
    who has it (pid, host, command, since when); a lock file left by a process that died is taken
    over, and :attr:`note` says whose it was. A second command that wants the folder gets
    FolderInUse naming the folder and the holder, at once: it never waits, never writes."""

    def __init__(self, folder: Path | str, command: str):
        self.folder = Path(folder)
        self.command = command
        self.path = self.folder / LOCK
        self.fd: int | None = None
        self.created = False
        self.note = ""

    def acquire(self) -> "FolderLock":
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(20, "is a file, not a folder", str(self.folder))
        if not self.folder.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            self.created = True
        for _ in range(50):
            own_file(self.path, "lock file of the folder")
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            if not _try_lock(fd):
                os.close(fd)
                holder = {}
                for _ in range(10):        # the holder may be between its lock and writing its name
                    holder = _holder_text(self.path)
                    if holder:
                        break
                    time.sleep(0.05)
                raise FolderInUse(f"{self.folder} is in use by another onnx-dml-bench command "
                                  f"({describe_holder(holder)}); wait for it to end, or use another folder")
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:                   # the holder removed the file as we opened it: again
                _unlock(fd)
                os.close(fd)
                continue
            self.fd = fd
            break
        else:
            raise FolderInUse(f"{self.folder}: its lock file keeps changing; another command is starting and ending there")
        old = _holder_text(self.path)
        if old:
            self.note = (f"{self.folder}: took over the lock left by {describe_holder(old)}, "
                         f"which is no longer running")
        me = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command,
              "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds")}
        data = (json.dumps(me) + "\n").encode("utf-8")
        try:
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            os.write(self.fd, data)
        except OSError as e:             # a disk still full: the lock file named, the lock let go
            self.release()
            raise named(e, self.path) from None
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        if _fcntl is not None:          # removed while still held: no one can take a file about to go
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            _unlock(fd)
            os.close(fd)
        else:                            # Windows removes no open file
            _unlock(fd)
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        if self.created:                 # a folder made for a command that wrote nothing goes again
            with contextlib.suppress(OSError):
                self.folder.rmdir()


@contextlib.contextmanager
def locked(folder: Path | str, command: str, say=None):
    """Hold the lock of ``folder`` for the block (taken once per process: a nested ``locked`` of
    the same folder is a no-op). ``say(note)`` hears of a lock taken over from a dead holder."""
    key = os.path.realpath(folder)
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield held[0]
        finally:
            held[1] -= 1
        return
    lock = FolderLock(folder, command).acquire()
    _HELD[key] = [lock, 1]
    try:
        if lock.note and say is not None:
            say(f"note: {lock.note}")
        yield lock
    finally:
        del _HELD[key]
        lock.release()


def hold_folder(folder: Path | str, command: str, say=None):
    """Take the lock of ``folder`` now (as :func:`locked`: a second command is refused at once) and
    return the function that releases it, for a command that holds its folder from its start to its
    end, whatever it calls in between (``bench``: its lanes, merge and report; the release is the
    command's close hook)."""
    cm = locked(folder, command, say=say)
    cm.__enter__()
    done = []

    def release() -> None:
        if not done:
            done.append(True)
            cm.__exit__(None, None, None)
    return release
