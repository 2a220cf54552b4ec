"""A stack's Wine prefix: 64-bit, set to report Windows 10, without the crash dialog."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Mapping

from . import proc
from .stackinfo import WINEDLLOVERRIDES, StackError, prefix_is_win10

RunFn = Callable[..., object]


def prefix_ready(prefix: Path) -> bool:
    """The prefix exists and reports Windows 10."""
    return (prefix / "system.reg").exists() and prefix_is_win10(prefix)


def prefix_env(prefix: Path, wine: str) -> dict[str, str]:
    """The environment that creates ``prefix`` with the host's (or an unpacked) Wine ``wine``."""
    env = dict(os.environ)
    env.update(WINEPREFIX=str(prefix), WINEARCH="win64", WINEDEBUG="-all",
               WINEDLLOVERRIDES=WINEDLLOVERRIDES)
    env.pop("DISPLAY", None)
    if Path(wine).name == "wine64":
        env["WINELOADER"] = wine
    return env


def make_win10_prefix(prefix: Path, wine: str, wineserver: str, *, env: Mapping[str, str] | None = None,
                      run: RunFn = proc.run, boot_timeout: float = 600, timeout: float = 120,
                      trust_wineboot: bool = True, zlib: Path | None = None,
                      not_win10: str | None = None) -> None:
    """Create the Windows 10 prefix ``prefix``: ``wineboot -i``, Version=win10 and no crash dialog in
    the registry, then wait for the wineserver to finish writing it.

    ``env``: the environment to run Wine in (default ``prefix_env``); ``run(cmd, env=, timeout=,
    check=)``: how a step runs (an installer's logging runner; ``proc.run`` by default);
    ``trust_wineboot=False``: wineboot's exit code is not trusted (without a 32-bit Wine it fails on
    syswow64\\rundll32.exe after writing the prefix), whether it wrote the prefix is checked instead;
    ``zlib``: a zlib1.dll to put into system32 first; ``not_win10``: the StackError's message when the
    registry does not say Windows 10 in the end."""
    env = dict(prefix_env(prefix, wine) if env is None else env)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    if zlib is not None and zlib.is_file():
        # Debian's Wine loads zlib1.dll (libz-mingw-w64, needed by user32) from a folder of the system
        # only; a native DLL in system32 is found wherever Wine is unpacked
        (prefix / "drive_c/windows/system32").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(zlib, prefix / "drive_c/windows/system32/zlib1.dll")
    try:
        if trust_wineboot:
            run([wine, "wineboot", "-i"], env=env, timeout=boot_timeout)
        else:
            r = run([wine, "wineboot", "-i"], env=env, timeout=boot_timeout, check=False)
            if not (prefix / "system.reg").exists():
                raise StackError(f"wineboot did not create {prefix} (exit {r.returncode}): {r.stdout[-2000:]}")
        run([wine, "reg", "add", r"HKCU\Software\Wine", "/v", "Version", "/t", "REG_SZ",
             "/d", "win10", "/f"], env=env, timeout=timeout)
        run([wine, "reg", "add", r"HKCU\Software\Wine\WineDbg", "/v", "ShowCrashDialog",
             "/t", "REG_DWORD", "/d", "0", "/f"], env=env, timeout=timeout)
    finally:
        proc.run([wineserver, "-w"], env=env, timeout=timeout, check=False)
    if not prefix_is_win10(prefix):
        raise StackError(not_win10 or f"Wine prefix {prefix} was not set to Windows 10")
