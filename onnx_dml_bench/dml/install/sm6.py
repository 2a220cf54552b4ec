"""The ``wine10-sm6`` stack: shader model 6 under Wine 10 in a root of its own.

``wine8-sm51``, the default stack (``install/default.py``), is Debian bookworm's Wine 8.0, whose
built-in vkd3d 1.6 compiles only DXBC (shader model 5.1). DirectML kernels it ships only as DXIL (e.g. a float32
``Add`` of [3,4], GRU) then fail at session creation, so the kernel paths DirectML takes on real
drivers are not exercised there.

``wine10-sm6`` runs Debian trixie's Wine 10.0 in a ``debootstrap --variant=minbase trixie`` root
(it needs trixie's glibc), with trixie's Mesa lavapipe, and one DLL rebuilt from Debian's own
``wine`` source package: ``wined3d.dll``, which carries vkd3d. Two changes to that vkd3d:

* ``ID3D12Device::EnumerateMetaCommands`` reports zero meta commands with ``S_OK`` (as shipped it
  returns ``E_NOTIMPL``, and ``DMLCreateDevice`` fails with it for every model);
* vkd3d-shader's DXIL front end is compiled in (``-DVKD3D_SHADER_UNSUPPORTED_DXIL``; Debian builds
  it without), so the device reports shader model 6.0 and DXIL kernels run.

Everything is built here from Debian's packages, nothing binary is committed. Layout, under the
DirectML cache (``<cache>/stacks/wine10-sm6``)::

    root/            the trixie root (Wine 10, Mesa, build tools); wined3d.dll diverted (dpkg-divert)
    build/           the wine source package, patched and configured; wined3d.dll built here
    debs/            debootstrap's package cache
    bin/enter        runs a command in the root (private mount namespace: /proc, /dev, /sys, /tmp,
                     the DirectML cache and this package's folder bound at their own paths; chroot;
                     ``wine/root.py``)
    bin/wine         enter + Wine 10's loader;  bin/wineserver: enter + its wineserver
    prefix/          the stack's Wine prefix (Windows 10)
    logs/<step>.log  one log per step;  steps/<step>.done: the steps finished
    stack.json       the manifest (``select.find_named`` reads it), written last

Windows Node.js and onnxruntime-node (with DirectML.dll) are those of the default stack, so a
``setup dml --stack wine10-sm6`` sets the default stack up first. Programs started through
``bin/wine`` see the same paths as outside, so the Node worker (``node/client.py``) and the
direct harness (``direct/runner.py``) launch unchanged; Xvfb runs on the host (its socket is in /tmp).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Mapping

from ..wine import root as wine_root
from ..wine.prefix import make_win10_prefix, prefix_ready
from ..wine.proc import file_lock, is_root, run
from ..wine.stackinfo import GL_RENDERER_ENV, SM6, LogFn, StackError, StackInfo, stack_dir, write_manifest
from ..wine.versions import WINED3D_DLL, icd_api_version, vkd3d_version, wine_version
from .debian import debian_mirror

SUITE = "trixie"
#: Wine 10, lavapipe, the X and GL client pieces of Wine's GL renderer, vulkaninfo
ROOT_PACKAGES = ["wine", "wine64", "libwine", "mesa-vulkan-drivers", "libvulkan1", "vulkan-tools",
                 "libgl1", "libglx-mesa0", "libgl1-mesa-dri", "libx11-6", "libxext6", "libxrender1",
                 "libxrandr2", "libxi6", "libxcursor1", "libxfixes3", "libxcomposite1", "libxinerama1"]
#: what building wined3d.dll from the wine source package takes (its generators included)
BUILD_PACKAGES = ["dpkg-dev", "gcc", "libc6-dev", "make", "flex", "bison", "gcc-mingw-w64-x86-64",
                  "autoconf", "autotools-dev", "perl", "libxml-libxml-perl", "python3", "khronos-api",
                  "libvulkan-dev", "unicode-data", "unicode-idna", "unicode-cldr-core", "unzip"]
WINE_SOURCE = "wine"
TARGET = "dlls/wined3d/x86_64-windows/wined3d.dll"
WINED3D_IN_ROOT = "/" + WINED3D_DLL
WINE_IN_ROOT = "/usr/lib/wine/wine64"
WINESERVER_IN_ROOT = "/usr/lib/wine/wineserver"
LVP_LIBRARY = "libvulkan_lvp.so"       # found by the loader inside the root
CONFIGURE = ["--enable-win64", "--without-x", "--without-freetype", "--disable-tests"]
DXIL_DEFINE = "-DVKD3D_SHADER_UNSUPPORTED_DXIL"
#: Wine's d3d renderer on this stack: the GL one (wined3d's Vulkan renderer crashes here)
EXTRA_ENV = GL_RENDERER_ENV
# Wine's files that the source package leaves to be generated (debian/rules does the same)
GENERATORS = [
    ["./tools/make_requests"],
    ["./tools/make_specfiles"],
    ["sh", "-c", "cd dlls/opengl32 && ./make_opengl"],
    ["sh", "-c", "cd dlls/winevulkan && ./make_vulkan -x /usr/share/vulkan/registry/vk.xml "
                 "-X /usr/share/vulkan/registry/video.xml"],
    ["./tools/make_unicode"],
    ["ln", "-sf", "/usr/share/misc/config.sub", "tools"],
    ["ln", "-sf", "/usr/share/misc/config.guess", "tools"],
]


# --------------------------------------------------------------------------------------------
# Source patches (pure text functions: unit-tested without Wine)
# --------------------------------------------------------------------------------------------

_ENUM_META = re.compile(
    r"(static HRESULT STDMETHODCALLTYPE d3d12_device_EnumerateMetaCommands\([^)]*?\bUINT \*(\w+),\s*"
    r"D3D12_META_COMMAND_DESC \*(\w+)\)\s*\{)(.*?)(\n\})", re.S)
PATCH_MARK = "onnx-dml-bench: no meta commands"


def patch_enumerate_meta_commands(text: str) -> str:
    """vkd3d's device.c with ``EnumerateMetaCommands`` answering zero meta commands with S_OK
    (also when the descriptions pointer is NULL). Idempotent; StackError if the function is not there."""
    if PATCH_MARK in text:
        return text
    m = _ENUM_META.search(text)
    if not m:
        raise StackError("d3d12_device_EnumerateMetaCommands not found in vkd3d's device.c")
    count, descs = m.group(2), m.group(3)
    body = (f"\n    /* {PATCH_MARK} */\n"
            f'    TRACE("iface %p, {count} %p, {descs} %p.\\n", iface, {count}, {descs});\n\n'
            f"    if (!{count})\n        return E_INVALIDARG;\n"
            f"    *{count} = 0;\n    return S_OK;")
    return text[:m.start(4)] + body + text[m.end(4):]


def patch_vkd3d_makefile(text: str) -> str:
    """libs/vkd3d/Makefile.in with vkd3d-shader's DXIL front end compiled in. Idempotent."""
    if DXIL_DEFINE in text:
        return text
    m = re.search(r"^EXTRADEFS\s*=((?:[^\n]*\\\n)*[^\n]*)$", text, re.M)
    if not m:
        raise StackError("no EXTRADEFS in libs/vkd3d/Makefile.in")
    return text[:m.end()] + f" \\\n\t{DXIL_DEFINE}" + text[m.end():]


def apply_patches(src: Path) -> list[str]:
    """Patch the wine source tree ``src``; the files changed."""
    changed = []
    for rel, fn in (("libs/vkd3d/libs/vkd3d/device.c", patch_enumerate_meta_commands),
                    ("libs/vkd3d/Makefile.in", patch_vkd3d_makefile)):
        p = Path(src) / rel
        if not p.is_file():
            raise StackError(f"{p} not found: is this the wine 10 source (vkd3d bundled in libs/vkd3d)?")
        old = p.read_text()
        new = fn(old)
        if new != old:
            p.write_text(new)
            changed.append(rel)
    return changed


def svg_links(rules: str) -> list[list[str]]:
    """The icon links ``debian/rules`` makes before configure (makedep needs them): ``ln -sf`` lines."""
    out = []
    for line in rules.splitlines():
        m = re.match(r"^\tln -sf (\.\./\S+) (\S+)\s*$", line)
        if m:
            out.append(["ln", "-sf", m.group(1), m.group(2)])
    return out


# --------------------------------------------------------------------------------------------
# The launchers of the root (wine/root.py)
# --------------------------------------------------------------------------------------------

def launcher_texts(sdir: Path, cache: Path, wine_version: str = "10") -> dict[str, str]:
    return wine_root.launcher_texts(sdir, cache, name=SM6, suite=SUITE, loader=WINE_IN_ROOT,
                                    server=WINESERVER_IN_ROOT, wine_version=wine_version)


def write_launchers(sdir: Path, cache: Path, wine_version: str = "10") -> dict[str, Path]:
    return wine_root.write_launchers(sdir, cache, launcher_texts(sdir, cache, wine_version))


def refresh_launchers(sdir: Path, cache: Path) -> None:
    """Launchers written by another checkout (older text, other folders) brought up to this code's."""
    wine_root.refresh_launchers(sdir, launcher_texts(sdir, cache))


class _Steps:
    """Each step's log in ``logs/<step>.log``; a finished step leaves ``steps/<step>.done``."""

    def __init__(self, sdir: Path, log: LogFn):
        self.sdir, self.log = sdir, log
        (sdir / "logs").mkdir(parents=True, exist_ok=True)
        (sdir / "steps").mkdir(parents=True, exist_ok=True)

    def done(self, step: str) -> bool:
        return (self.sdir / "steps" / f"{step}.done").exists()

    def mark(self, step: str, note: str = "") -> None:
        (self.sdir / "steps" / f"{step}.done").write_text(note + "\n")

    def forget(self, *steps: str) -> None:
        for s in steps:
            (self.sdir / "steps" / f"{s}.done").unlink(missing_ok=True)

    def logfile(self, step: str) -> Path:
        return self.sdir / "logs" / f"{step}.log"

    def run(self, step: str, cmd: list[str], *, timeout: float = 1800, env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> str:
        """Run one command of ``step``, appending to its log; StackError: one line naming the step and the
        log's tail."""
        lf = self.logfile(step)
        with lf.open("a") as fh:
            fh.write(f"\n$ {shlex.join(cmd)}\n")
        try:
            r = run(cmd, timeout=timeout, env=env, cwd=cwd, check=False)
        except StackError as e:     # timed out
            with lf.open("a") as fh:
                fh.write(str(e) + "\n")
            raise StackError(f"{SM6} setup step '{step}' timed out (log: {lf})\n{_tail(str(e))}") from None
        with lf.open("a") as fh:
            fh.write(r.stdout)
        if r.returncode != 0:
            raise StackError(f"{SM6} setup step '{step}' failed (exit {r.returncode}; log: {lf})\n"
                             f"{_tail(r.stdout)}")
        return r.stdout


def _tail(text: str, n: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def _apt_env() -> dict[str, str]:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
    for k in ("LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(k, None)
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env


# --------------------------------------------------------------------------------------------
# Setup
# --------------------------------------------------------------------------------------------

def setup(cache: Path, base: StackInfo, *, log: LogFn = print, jobs: int | None = None) -> StackInfo:
    """Build the ``wine10-sm6`` stack under ``<cache>/stacks/wine10-sm6`` (each step kept; re-running
    repeats only what is not done) and return it. ``base``: the default stack (its Node.js and
    onnxruntime-node are used)."""
    if not is_root():
        raise StackError(f"the {SM6} stack is built in a debootstrap root and entered with unshare + chroot: "
                         "run the setup as root")
    for tool in ("unshare", "chroot", "mount"):
        if not shutil.which(tool):
            raise StackError(f"{tool} not found (util-linux / coreutils)")
    cache = Path(cache).resolve()
    sdir = stack_dir(cache)
    sdir.mkdir(parents=True, exist_ok=True)
    t_all = time.monotonic()
    with file_lock(sdir / ".setup.lock", log):
        st = _Steps(sdir, log)
        root = sdir / "root"
        _host_debootstrap(st)
        _debootstrap(st, root)
        launchers = write_launchers(sdir, cache)
        enter = str(launchers["enter"])
        _packages(st, root, enter)
        src = _source(st, sdir, enter)
        _generate(st, src, enter)
        if apply_patches(src):
            st.forget("configure", "build", "install")
        st.mark("patch")
        _configure(st, src, enter)
        _build(st, src, enter, jobs or os.cpu_count() or 2)
        _install(st, src, root, enter)
        info = _stack_info(sdir, base, launchers)
        run_info = wine_root.with_runtime_binds(info, cache)
        _prefix(st, run_info)
        info.versions = _versions(st, run_info, base, src, enter)
        write_manifest(info, name=SM6)
    log(f"{SM6} stack ready in {sdir} ({time.monotonic() - t_all:.1f} s)")
    return info


def _host_debootstrap(st: _Steps) -> None:
    if shutil.which("debootstrap"):
        return
    if not shutil.which("apt-get"):
        raise StackError(f"debootstrap is needed for the {SM6} stack: install Debian's debootstrap")
    st.log("apt-get install debootstrap")
    try:
        st.run("host-debootstrap", ["apt-get", "install", "-y", "--no-install-recommends", "debootstrap"],
               env=_apt_env())
    except StackError:
        st.run("host-debootstrap", ["apt-get", "update"], env=_apt_env())
        st.run("host-debootstrap", ["apt-get", "install", "-y", "--no-install-recommends", "debootstrap"],
               env=_apt_env())


def _mirror() -> tuple[str, str]:
    uri, signed = debian_mirror()
    keyring = signed or "/usr/share/keyrings/debian-archive-keyring.gpg"
    return uri, keyring


def _debootstrap(st: _Steps, root: Path) -> None:
    if st.done("debootstrap") and (root / "usr/bin/apt-get").exists():
        return
    uri, keyring = _mirror()
    tmp = root.with_name("root.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    debs = root.parent / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    st.log(f"debootstrap --variant=minbase {SUITE} from {uri}")
    cmd = ["debootstrap", "--variant=minbase", f"--cache-dir={debs}"]
    if Path(keyring).exists():
        cmd.append(f"--keyring={keyring}")
    st.run("debootstrap", cmd + [SUITE, str(tmp), uri], timeout=1800, env=_apt_env())
    src_line = f"deb-src {uri} {SUITE} main"
    sources = tmp / "etc/apt/sources.list"
    text = sources.read_text() if sources.exists() else f"deb {uri} {SUITE} main\n"
    if src_line not in text:
        text = text.rstrip("\n") + "\n" + src_line + "\n"
    sources.write_text(text)
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    st.forget("packages", "source", "generate", "patch", "configure", "build", "install", "prefix")
    st.mark("debootstrap", f"{SUITE} {uri}")
    st.log(f"{SUITE} root ready in {time.monotonic() - t0:.1f} s")


def _packages(st: _Steps, root: Path, enter: str) -> None:
    want = ROOT_PACKAGES + BUILD_PACKAGES
    note = " ".join(want)
    marker = st.sdir / "steps" / "packages.done"
    if st.done("packages") and marker.read_text().strip() == note:
        return
    t0 = time.monotonic()
    st.log(f"apt-get install in the {SUITE} root: {note}")
    st.run("packages", [enter, "apt-get", "update", "-q"], env=_apt_env())
    st.run("packages", [enter, "apt-get", "install", "-y", "-q", "--no-install-recommends", *want],
           env=_apt_env(), timeout=3600)
    st.run("packages", [enter, "apt-get", "clean"], env=_apt_env())
    st.mark("packages", note)
    st.log(f"packages installed in {time.monotonic() - t0:.1f} s")


def _source(st: _Steps, sdir: Path, enter: str) -> Path:
    build = sdir / "build"
    found = sorted(p for p in build.glob(f"{WINE_SOURCE}-*") if p.is_dir()) if build.exists() else []
    if st.done("source") and found:
        return found[-1]
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    st.log(f"apt-get source {WINE_SOURCE} ({SUITE})")
    env = _apt_env()
    st.run("source", [enter, "sh", "-c", f"cd {shlex.quote(str(build))} && apt-get source -q {WINE_SOURCE}"],
           env=env, timeout=1800)
    found = sorted(p for p in build.glob(f"{WINE_SOURCE}-*") if p.is_dir())
    if not found:
        raise StackError(f"{SM6} setup step 'source': apt-get source {WINE_SOURCE} unpacked nothing "
                         f"(log: {st.logfile('source')})")
    st.forget("generate", "patch", "configure", "build", "install")
    st.mark("source", found[-1].name)
    return found[-1]


def _in_src(src: Path, *cmd: str) -> list[str]:
    return ["sh", "-c", f"cd {shlex.quote(str(src))} && exec \"$@\"", "sh", *cmd]


def _generate(st: _Steps, src: Path, enter: str) -> None:
    if st.done("generate"):
        return
    t0 = time.monotonic()
    st.log("generating the files the source package leaves out (as debian/rules does)")
    cmds = list(GENERATORS) + svg_links((src / "debian/rules").read_text())
    for cmd in cmds:
        st.run("generate", [enter, *_in_src(src, *cmd)], env=_apt_env(), timeout=1800)
    st.run("generate", [enter, *_in_src(src, "autoconf")], env=_apt_env())
    st.run("generate", [enter, *_in_src(src, "autoheader")], env=_apt_env())
    st.mark("generate")
    st.log(f"generated in {time.monotonic() - t0:.1f} s")


def _configure(st: _Steps, src: Path, enter: str) -> None:
    if st.done("configure") and (src / "Makefile").exists():
        return
    t0 = time.monotonic()
    st.log("configure " + " ".join(CONFIGURE))
    st.run("configure", [enter, *_in_src(src, "./configure", *CONFIGURE)], env=_apt_env(), timeout=1800)
    st.forget("build", "install")
    st.mark("configure", " ".join(CONFIGURE))
    st.log(f"configured in {time.monotonic() - t0:.1f} s")


def _build(st: _Steps, src: Path, enter: str, jobs: int) -> None:
    if st.done("build") and (src / TARGET).exists():
        return
    t0 = time.monotonic()
    st.log(f"make -j{jobs} {TARGET} (the tools and import libraries it needs first)")
    st.run("build", [enter, *_in_src(src, "make", f"-j{jobs}", TARGET)], env=_apt_env(), timeout=7200)
    if not (src / TARGET).exists():
        raise StackError(f"{SM6} setup step 'build': make finished without {TARGET} (log: {st.logfile('build')})")
    st.forget("install")
    st.mark("build")
    st.log(f"wined3d.dll built in {time.monotonic() - t0:.1f} s")


def _install(st: _Steps, src: Path, root: Path, enter: str) -> None:
    """Debian's wined3d.dll diverted to wined3d.dll.distrib (dpkg-divert), the rebuilt one in its place."""
    built = (src / TARGET).read_bytes()
    dest = root / WINED3D_IN_ROOT.lstrip("/")
    if st.done("install") and dest.exists() and dest.read_bytes() == built:
        return
    st.run("install", [enter, "dpkg-divert", "--local", "--rename", "--divert", WINED3D_IN_ROOT + ".distrib",
                       "--add", WINED3D_IN_ROOT], env=_apt_env())
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(built)
    tmp.chmod(0o644)
    tmp.replace(dest)
    st.mark("install")
    st.log(f"rebuilt wined3d.dll installed in the root ({WINED3D_IN_ROOT}; Debian's kept as .distrib)")


def _stack_info(sdir: Path, base: StackInfo, launchers: dict[str, Path]) -> StackInfo:
    icd = sdir / "lvp_icd.json"
    src_icd = sdir / "root/usr/share/vulkan/icd.d/lvp_icd.json"
    if not src_icd.exists():
        cands = sorted((sdir / "root/usr/share/vulkan/icd.d").glob("lvp_icd*.json"))
        if not cands:
            raise StackError(f"no lavapipe ICD in the {SUITE} root (mesa-vulkan-drivers)")
        src_icd = cands[0]
    data = json.loads(src_icd.read_text())
    data["ICD"]["library_path"] = LVP_LIBRARY
    icd.write_text(json.dumps(data, indent=4) + "\n")
    return StackInfo(
        cache_dir=sdir, node_exe=base.node_exe, ort_dir=base.ort_dir, ort_common_dir=base.ort_common_dir,
        prefix=sdir / "prefix", mesa_root=sdir / "root", icd_json=icd, lib_dirs=[],
        wine=str(launchers["wine"]), wineserver=str(launchers["wineserver"]), xvfb=base.xvfb,
        versions={}, name=SM6, launcher=str(launchers["enter"]), extra_env=dict(EXTRA_ENV))


def _prefix(st: _Steps, info: StackInfo) -> None:
    prefix = info.prefix
    if st.done("prefix") and prefix_ready(prefix):
        return
    t0 = time.monotonic()
    st.log(f"creating the Wine 10 prefix {prefix}")
    env = info.env()
    env.pop("DISPLAY", None)
    make_win10_prefix(prefix, info.wine, info.wineserver, env=env, boot_timeout=900, timeout=300,
                      run=lambda cmd, env, timeout, check=True: st.run("prefix", cmd, env=env, timeout=timeout),
                      not_win10=f"{SM6} setup step 'prefix': {prefix} was not set to Windows 10 "
                                f"(log: {st.logfile('prefix')})")
    st.mark("prefix")
    st.log(f"Wine prefix ready in {time.monotonic() - t0:.1f} s")


def _deb_version(enter: str, pkg: str) -> str | None:
    r = run([enter, "dpkg-query", "-W", "-f=${Version}", pkg], check=False, env=_apt_env())
    return r.stdout.strip() or None if r.returncode == 0 else None


def _versions(st: _Steps, info: StackInfo, base: StackInfo, src: Path, enter: str) -> dict[str, str]:
    v = {k: val for k, val in base.versions.items() if not k.startswith("deb:") and k not in
         ("wine", "vkd3d", "mesa", "mesa_source", "lavapipe_icd_api_version", "shader_model", "dml_stack")}
    v["wine"] = wine_version(info.wine, env=info.env(), timeout=120)
    v["vkd3d"] = vkd3d_version(src / TARGET) or "unknown"
    v["wine_source"] = f"{src.name} (Debian {SUITE}), wined3d.dll rebuilt: EnumerateMetaCommands S_OK, " \
                       f"{DXIL_DEFINE.lstrip('-D')}"
    mesa = _deb_version(enter, "mesa-vulkan-drivers")
    v["mesa"] = mesa or "unknown"
    v["mesa_source"] = SUITE
    for pkg in ("wine", "libwine", "mesa-vulkan-drivers", "libc6"):
        dv = _deb_version(enter, pkg)
        if dv:
            v[f"deb:{pkg} ({SUITE})"] = dv
    api = icd_api_version(info.icd_json)
    if api is not None:
        v["lavapipe_icd_api_version"] = api
    v["dml_stack"] = SM6
    return v
