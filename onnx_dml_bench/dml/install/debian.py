"""Debian's package tools, used read-only or with a private state: the installed version of a
package, the system's own mirror, and ``apt-get`` with private lists and cache (the system's apt
configuration is never changed)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..wine.proc import is_root, run
from ..wine.stackinfo import StackError, setup_command


def dpkg_status(pkg: str) -> str | None:
    """Installed version of a Debian package, or None."""
    if not shutil.which("dpkg-query"):
        return None
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Version}", pkg],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    parts = r.stdout.split()
    if len(parts) >= 2 and parts[0] == "ii":
        return parts[1]
    return None


def os_release() -> dict[str, str]:
    d: dict[str, str] = {}
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                d[k.strip()] = v.strip().strip('"')
    except OSError:
        pass
    return d


def is_debian() -> bool:
    osr = os_release()
    return osr.get("ID") == "debian" or "debian" in osr.get("ID_LIKE", "").split()


def manual_instructions(missing: list[str]) -> str:
    pk = " ".join(missing)
    return ("Install the system packages first (as root):\n"
            "    sudo apt-get update\n"
            f"    sudo apt-get install -y --no-install-recommends {pk}\n"
            "then run the setup again, e.g.\n"
            "    " + setup_command())


def debian_mirror() -> tuple[str, str | None]:
    """The system's own Debian mirror (URI, Signed-By keyring or None)."""
    codename = os_release().get("VERSION_CODENAME", "")
    entries: list[tuple[str, list[str], str | None]] = []  # uri, suites, signed-by
    srcdir = Path("/etc/apt")
    one_line_files = [srcdir / "sources.list"] + sorted((srcdir / "sources.list.d").glob("*.list"))
    for f in one_line_files:
        try:
            lines = f.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if not line.startswith("deb "):
                continue
            opts = None
            m = re.match(r"deb\s+\[([^\]]*)\]\s+(.*)", line)
            rest = line[4:].strip()
            if m:
                opts, rest = m.group(1), m.group(2)
            parts = rest.split()
            if len(parts) < 2:
                continue
            signed = None
            if opts:
                sm = re.search(r"signed-by=(\S+)", opts)
                signed = sm.group(1) if sm else None
            entries.append((parts[0], [parts[1]], signed))
    for f in sorted((srcdir / "sources.list.d").glob("*.sources")):
        try:
            text = f.read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            key = None
            for line in stanza.splitlines():
                if line.startswith("#"):
                    continue
                if line[:1] in (" ", "\t") and key:
                    fields[key] += "\n" + line.strip()
                    continue
                if ":" in line:
                    key, _, val = line.partition(":")
                    key = key.strip().lower()
                    fields[key] = val.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            signed = fields.get("signed-by")
            if signed and "\n" in signed:  # inline key: use the default keyring
                signed = None
            for uri in fields.get("uris", "").split():
                entries.append((uri, fields.get("suites", "").split(), signed))
    for uri, suites, signed in entries:
        if "security" in uri or "debian" not in uri:
            continue
        if codename and codename in suites:
            return uri.rstrip("/"), signed
    for uri, suites, signed in entries:
        if "security" not in uri and "debian" in uri:
            return uri.rstrip("/"), signed
    return "http://deb.debian.org/debian", None


class PrivateApt:
    """apt-get with a private state: never touches the system's sources."""

    def __init__(self, root: Path):
        self.root = root
        self.lists = root / "lists"
        self.cache = root / "cache"
        self.sources = root / "sources.list"

    def opts(self) -> list[str]:
        return [
            "-o", f"Dir::State::Lists={self.lists}",
            "-o", f"Dir::Cache={self.cache}",
            "-o", f"Dir::Etc::SourceList={self.sources}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", "Dir::Etc::PreferencesParts=/dev/null",
            "-o", "Dir::Etc::Preferences=/dev/null",
            "-o", "Dir::State::status=/var/lib/dpkg/status",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=" + ("root" if is_root() else os.environ.get("USER", "nobody")),
            "-o", "Acquire::Languages=none",
        ]

    def prepare(self, codename: str) -> None:
        (self.lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.cache / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        uri, signed = debian_mirror()
        if signed is None and Path("/usr/share/keyrings/debian-archive-keyring.gpg").exists():
            signed = "/usr/share/keyrings/debian-archive-keyring.gpg"
        opt = f" [signed-by={signed}]" if signed else ""
        self.sources.write_text(f"deb{opt} {uri} {codename} main\n"
                                f"deb{opt} {uri} {codename}-backports main\n")

    def update(self) -> None:
        run(["apt-get", *self.opts(), "update"], timeout=900)

    def simulate(self, target: str) -> list[tuple[str, str, str]]:
        r = run(["apt-get", *self.opts(), "-s", "install", "--no-install-recommends", target],
                timeout=300, check=False, env=dict(os.environ, LC_ALL="C"))
        if r.returncode != 0:
            raise StackError(f"apt-get -s install {target} failed:\n{r.stdout[-3000:]}")
        pkgs = []
        for line in r.stdout.splitlines():
            m = re.match(r"Inst (\S+) (?:\[[^\]]*\] )?\((\S+) .*\[(\S+)\]\)", line)
            if m:
                pkgs.append((m.group(1), m.group(2), m.group(3)))
        return pkgs

    def download(self, pkgs: list[tuple[str, str, str]], dest: Path) -> list[Path]:
        dest.mkdir(parents=True, exist_ok=True)
        specs = [f"{n}:{a}={v}" if a != "all" else f"{n}={v}" for n, v, a in pkgs]
        run(["apt-get", *self.opts(), "download", *specs], cwd=dest, timeout=900)
        return sorted(dest.glob("*.deb"))


