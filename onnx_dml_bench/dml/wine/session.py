"""The Wine session of a Python process: a private Xvfb display and the prefixes' wineservers,
kept between calls, and a Wine prefix of the process's own (a slot per worker process).

Both Windows programs of the bench, the Node.js worker (``node/client.py``) and the direct harness
(``direct/runner.py``), start under this session: hold ``lock`` while starting one.
``shutdown()`` stops what the session keeps; it also runs at interpreter exit.
"""
from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from .proc import file_lock, one_line, run
from .stackinfo import LogFn, StackError, StackInfo

try:
    import fcntl
except ImportError:           # Windows: there is no Wine session there (the direct lane runs natively)
    fcntl = None

#: held while a Windows program of this process starts (and by node/client.py while it runs jobs)
lock = threading.RLock()
_xvfb: subprocess.Popen | None = None
_display: str | None = None
_servers: dict[str, StackInfo] = {}


def win_path(p: str | os.PathLike) -> str:
    """Windows path of a POSIX path through Wine's Z: drive."""
    s = str(Path(p).resolve())
    return "Z:" + s.replace("/", "\\")


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a process started in its own process group, and everything it started under Wine."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass


def die_with_parent() -> None:
    """In the child: get SIGTERM when the Python process dies (Linux)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------
# Display / wineserver kept between calls
# --------------------------------------------------------------------------


def display() -> str | None:
    """The private Xvfb's DISPLAY while it runs, else None."""
    return _display


#: Mesa's 10-bit framebuffer configs off in the private X server: 480 GLX configs instead of 840.
#: wined3d reads every pixel format's attributes each time Wine's DXGI makes a factory (twice per
#: DirectML session); nothing here draws to the display.
XVFB_ENV = {"allow_rgb10_configs": "false"}


def start_xvfb(stack: StackInfo) -> str:
    """The private Xvfb's DISPLAY (started when it does not run)."""
    global _xvfb, _display
    if _xvfb is not None and _xvfb.poll() is None and _display:
        return _display
    xvfb = stack.xvfb or shutil.which("Xvfb")
    if not xvfb:
        raise RuntimeError("Xvfb not found (apt-get install xvfb)")
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(w), "-nolisten", "tcp", "-screen", "0", "1280x1024x24"],
            pass_fds=(w,), env={**os.environ, **XVFB_ENV}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
    finally:
        os.close(w)
    buf = b""
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline and not buf.endswith(b"\n"):
            ready, _, _ = select.select([r], [], [], 0.5)
            if ready:
                chunk = os.read(r, 64)
                if not chunk:
                    break
                buf += chunk
            if proc.poll() is not None:
                break
    finally:
        os.close(r)
    if not buf.strip().isdigit():
        proc.kill()
        raise RuntimeError("Xvfb did not start")
    _xvfb, _display = proc, ":" + buf.strip().decode()
    return _display


def ensure_wineserver(stack: StackInfo) -> None:
    """Keep a wineserver alive for the prefix (saves ~0.4 s per start)."""
    key = str(stack.prefix)
    env = stack.env()
    try:
        subprocess.run([stack.wineserver, "-p30"], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        pass
    _servers[key] = stack


def kill_wineserver(stack: StackInfo) -> None:
    """Kill the prefix's wineserver, and with it every Windows process running in that prefix."""
    try:
        subprocess.run([stack.wineserver, "-k"], env=stack.env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        pass


def shutdown(kill_wineservers: bool = False) -> None:
    """Stop the private Xvfb and forget the kept wineservers.

    The prefixes' wineservers end by themselves 30 s after their last process (``-p30``);
    ``kill_wineservers`` kills them now, which also kills any other process running in those
    prefixes (another run sharing the prefix): leave it off unless the prefix is this process's own.
    """
    global _xvfb, _display
    with lock:
        for stack in list(_servers.values()):
            if kill_wineservers:
                kill_wineserver(stack)
        _servers.clear()
        if _xvfb is not None and _xvfb.poll() is None:
            _xvfb.terminate()
            try:
                _xvfb.wait(5)
            except subprocess.TimeoutExpired:
                _xvfb.kill()
        _xvfb, _display = None, None


atexit.register(shutdown)


# --------------------------------------------------------------------------
# A Wine prefix per worker process
# --------------------------------------------------------------------------
#
# Worker processes of one run (``run --jobs N``) each take a slot: slot 0 is the stack's own
# prefix, slot k > 0 a copy of it in ``<cache>/prefixes/<k>`` (made once, about 700 MB). A slot is
# held with a file lock for the life of the process, so a hang that makes one worker kill its
# wineserver cannot take the other workers' Wine processes with it, and Wine's single-threaded
# wineserver is not shared.

PREFIX_SLOTS = "prefixes"
MAX_SLOTS = 32
_slot_held: dict[str, tuple[int, object]] = {}


def _copy_prefix(src: Path, dest: Path, log: LogFn) -> None:
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.monotonic()
    r = run(["cp", "-a", "--reflink=auto", str(src), str(tmp)], timeout=600, check=False)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StackError(f"cannot copy the Wine prefix {src} to {dest}: {one_line(r.stdout)}")
    tmp.rename(dest)
    log(f"Wine prefix copied to {dest} in {time.monotonic() - t0:.1f} s")


def worker_stack(stack: StackInfo, log: LogFn = lambda m: None) -> StackInfo:
    """``stack`` on a Wine prefix of this process's own (the first free slot; see above)."""
    held = _slot_held.get(str(stack.cache_dir))
    if held is not None:
        k = held[0]
        return StackInfo(**{**stack.__dict__, "prefix": stack.prefix if k == 0 else
                            Path(stack.cache_dir) / PREFIX_SLOTS / str(k)})
    slots = Path(stack.cache_dir) / PREFIX_SLOTS
    slots.mkdir(parents=True, exist_ok=True)
    for k in range(MAX_SLOTS):
        fh = (slots / f"slot-{k}.lock").open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        prefix = stack.prefix if k == 0 else slots / str(k)
        if k and not (prefix / "system.reg").exists():
            with file_lock(slots / f"copy-{k}.lock", log):
                if not (prefix / "system.reg").exists():
                    _copy_prefix(stack.prefix, prefix, log)
        _slot_held[str(stack.cache_dir)] = (k, fh)
        return StackInfo(**{**stack.__dict__, "prefix": prefix})
    raise StackError(f"all {MAX_SLOTS} Wine prefix slots of {slots} are in use")


def release_worker_stack(stack: StackInfo) -> None:
    """Give this process's prefix slot back (e.g. after the canary, before the workers start)."""
    held = _slot_held.pop(str(stack.cache_dir), None)
    if held is not None:
        fcntl.flock(held[1].fileno(), fcntl.LOCK_UN)
        held[1].close()
