"""A stack in a root of its own (a debootstrap tree): the launchers that run a command inside it,
and the host folders bound into it.

``bin/enter`` runs a command in the root: a private mount namespace, the host's /proc, /dev, /sys,
/tmp, the DirectML cache and the folders named in ``ONNX_DML_BENCH_ROOT_BINDS`` bound at their
own paths, then chroot. ``bin/wine`` and ``bin/wineserver`` are enter + the root's Wine, so programs
started through them see the same paths as outside.
"""
from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import replace
from pathlib import Path

from .stackinfo import StackInfo

#: this package's folder (onnx_dml_bench/dml: the Node.js worker, the harness sources), which a
#: root must see
PACKAGE_DIR = Path(__file__).resolve().parent.parent

ENTER = r"""#!/bin/sh
# Run a command in the {suite} root of the onnx-dml-bench DirectML stack {name}: a private mount
# namespace, the host's /proc, /dev, /sys, /tmp, the DirectML cache and the folders named in
# ONNX_DML_BENCH_ROOT_BINDS (colon-separated; the running bench's own folder) bound at their own
# paths, then chroot (same working folder when it exists there). Written by
# `onnx-dml-bench setup dml --stack {name}` (and rewritten by any checkout that uses the stack).
ROOT={root}
exec unshare --mount --propagation private -- /bin/sh -c '
set -e
R="$1"; shift
mount --rbind /proc "$R/proc"
mount --rbind /dev "$R/dev"
mount --rbind /sys "$R/sys"
mount --bind /tmp "$R/tmp"
while [ "$1" != "--" ]; do mount --bind "$1" "$R$1"; shift; done
shift
set -f; IFS=:
for d in $ONNX_DML_BENCH_ROOT_BINDS; do
  [ -d "$d" ] || continue
  case "$d" in /tmp|/tmp/*|/proc*|/dev*|/sys*) continue;; esac
  mkdir -p "$R$d"
  mount --bind "$d" "$R$d"
done
unset IFS; set +f
exec chroot "$R" /bin/sh -c "cd \"\$0\" 2>/dev/null || cd /; exec \"\$@\"" "$PWD" "$@"
' sh "$ROOT" {binds} -- "$@"
"""

WINE = """#!/bin/sh
# Wine {version} of the onnx-dml-bench DirectML stack {name}, run in its root.
export WINELOADER={loader}
exec {enter} {loader} "$@"
"""

WINESERVER = """#!/bin/sh
exec {enter} {server} "$@"
"""


#: environment variable the ``enter`` launcher reads: more host folders to bind into the root
BINDS_ENV = "ONNX_DML_BENCH_ROOT_BINDS"


def _outside_tmp(paths) -> list[Path]:
    keep: list[Path] = []
    for p in paths:
        p = Path(p).resolve()
        if str(p) in ("", ".", "/") or p == Path("/tmp") or Path("/tmp") in p.parents:
            continue    # under the /tmp bind already
        if any(p == k or k in p.parents for k in keep):
            continue
        keep.append(p)
    return keep


def binds(cache: Path) -> list[Path]:
    """Host folders bound into the root when the launchers are written: the DirectML cache."""
    return _outside_tmp([cache])


def runtime_binds(cache: Path) -> list[Path]:
    """Host folders this checkout needs in the root besides ``binds``: its own package folder
    (the Node.js worker, the harness sources), ``ONNX_DML_BENCH_CACHE`` and the temporary folder,
    passed to the launcher through ``ONNX_DML_BENCH_ROOT_BINDS`` at each use, so that a stack built
    from one checkout serves any other (a CI clone elsewhere on the same machine)."""
    extra = [PACKAGE_DIR, Path(tempfile.gettempdir())]
    home = os.environ.get("ONNX_DML_BENCH_CACHE", "")
    if home.strip():
        extra.append(Path(home).expanduser())
    base = _outside_tmp([cache])
    return [p for p in _outside_tmp(extra) if not any(p == b or b in p.parents for b in base)]


def with_runtime_binds(info: StackInfo, cache: Path) -> StackInfo:
    """``info`` with ``runtime_binds`` in its environment."""
    extra = {**info.extra_env, BINDS_ENV: ":".join(str(p) for p in runtime_binds(cache))}
    return replace(info, extra_env=extra)


def launcher_texts(sdir: Path, cache: Path, *, name: str, suite: str, loader: str, server: str,
                   wine_version: str) -> dict[str, str]:
    """The launchers ``enter``, ``wine`` and ``wineserver`` of the stack ``name`` in ``sdir/root``
    (Wine's loader and wineserver at ``loader`` and ``server`` inside it)."""
    root = sdir / "root"
    bindir = sdir / "bin"
    return {
        "enter": ENTER.format(suite=suite, name=name, root=shlex.quote(str(root)),
                              binds=" ".join(shlex.quote(str(d)) for d in binds(cache))),
        "wine": WINE.format(version=wine_version, name=name, loader=loader,
                            enter=shlex.quote(str(bindir / "enter"))),
        "wineserver": WINESERVER.format(enter=shlex.quote(str(bindir / "enter")), server=server),
    }


def write_launchers(sdir: Path, cache: Path, texts: dict[str, str]) -> dict[str, Path]:
    """Write the launcher ``texts`` into ``sdir/bin`` (and the mount points of ``binds`` into the root)."""
    root = sdir / "root"
    for d in binds(cache):
        (root / str(d).lstrip("/")).mkdir(parents=True, exist_ok=True)
    bindir = sdir / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, text in texts.items():
        p = bindir / name
        p.write_text(text)
        p.chmod(0o755)
        out[name] = p
    return out


def refresh_launchers(sdir: Path, texts: dict[str, str]) -> None:
    """Bring the launchers in ``sdir/bin`` up to ``texts`` where they differ (each replaced in one step)."""
    bindir = sdir / "bin"
    if not (bindir / "enter").exists():
        return
    for name, text in texts.items():
        p = bindir / name
        try:
            if p.read_text() == text:
                continue
        except OSError:
            pass
        tmp = p.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(p)
