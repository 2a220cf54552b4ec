"""README.md and the manual in docs/: the front page stays a front page (at most 150 lines); every
relative link of README.md and docs/*.md points at something that exists (and, with an anchor, at a
heading of that Markdown file or an id of that HTML file); the two commands for a fresh machine are
the ones `.ci/run` calls; and every `onnx-dml-bench` command line the pages show (in code blocks and
inline code) names a real command and only options that command has, as do the pytest plugin's
`--dml-bench-*` options."""
from __future__ import annotations

import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 150

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The page without code: fenced blocks, indented blocks and inline code."""
    text = _FENCE.sub("", text)
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("    "))
    return _INLINE.sub("", text)


def _code(text: str) -> list[str]:
    """Every piece of code of a page: lines of fenced and indented blocks, and inline code spans."""
    out = []
    for block in _FENCE.findall(text):
        out += block.splitlines()[1:-1]
    rest = _FENCE.sub("", text)
    out += [ln for ln in rest.splitlines() if ln.startswith("    ")]
    out += _INLINE.findall("\n".join(ln for ln in rest.splitlines() if not ln.startswith("    ")))
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        return frozenset(re.findall(r"""\bid=["']([^"']+)["']""", text))
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", _FENCE.sub("", text), re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def links(page: Path) -> list[str]:
    return [t for t in _LINK.findall(_prose(_text(page)))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]        # http:, https:, mailto: ...


def test_readme_is_a_front_page():
    n = len(_text(README).splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; the manual belongs in docs/"


def test_pages_exist_and_are_linked_from_the_readme():
    linked = {(README.parent / t.split("#")[0]).resolve() for t in links(README)}
    for page in PAGES[1:]:
        assert page.resolve() in linked, f"{page.relative_to(ROOT)} is not linked from README.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    bad = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page.resolve()
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif ROOT.resolve() not in (dest, *dest.parents):
            bad.append(f"{target}: outside the repository")
        elif anchor and dest.is_file() and dest.suffix.lower() in (".md", ".html", ".htm") \
                and anchor not in anchors(dest):
            bad.append(f"{target}: no anchor #{anchor} in {dest.relative_to(ROOT.resolve())}")
    assert not bad, bad


def test_checks_reject_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## A (b): c.d\n\n[ok](#a-b-cd) [bad](#nope) [gone](missing.md) "
                    "`[code](ignored.md)` [web](https://example.org)\n", encoding="utf-8")
    assert links(page) == ["#a-b-cd", "#nope", "missing.md"]
    assert anchors(page) == {"top", "a-b-cd"}


def test_fresh_machine_commands_are_the_ones_ci_runs():
    commands = re.findall(r"^    (scripts/\S+)$", _text(README), re.M)
    assert commands == ["scripts/bench.sh", "scripts/test.sh"], commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for cmd in commands:
        assert (ROOT / cmd).is_file()
        assert re.search(rf"(^|[\s;&|]){re.escape(cmd)}(\s|$)", ci, re.M), f".ci/run does not call {cmd}"


# ----------------------------------------------------------------------------------------------
# command lines shown in the pages
# ----------------------------------------------------------------------------------------------

def _help(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "onnx_dml_bench", *args, "--help"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, (args, res.stderr)
    return res.stdout


@lru_cache(maxsize=None)
def commands() -> frozenset[str]:
    text = _help().split("Commands:", 1)[1]
    return frozenset(re.findall(r"^  ([a-z][a-z-]*)\b", text, re.M))


@lru_cache(maxsize=None)
def options(command: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_OPTION.findall(_help(*command)))


def command_lines(page: Path) -> list[tuple[tuple[str, ...], str]]:
    """(command words, the rest of the line) of each bench command shown in the page's code."""
    out = []
    for snippet in _code(_text(page)):
        snippet = re.sub(r"(^|\s)#.*$", "", snippet)                   # shell comments
        for seg in re.split(r"&&|\|\||;|\|(?=\s)", snippet):
            seg = seg.strip()
            m = re.search(r"(?:^|[\s/])onnx-dml-bench\s+(\S+)(.*)", seg)
            if m is None:
                m = re.match(r"([a-z][a-z-]*)((?:\s+(?:dml|[A-Z_.]+))*\s+--.*)$", seg)   # `run --ep X`, `shrink CASE_ID --from R`
                if m is None or m.group(1) not in commands():
                    continue
            word, rest = m.group(1), m.group(2)
            if word.isupper() or not re.match(r"^[a-z]", word):            # COMMAND, a placeholder
                continue
            cmd = (word,)
            if word == "setup":
                sub = rest.split()
                cmd, rest = (word, sub[0]), rest.split(sub[0], 1)[1] if sub else ""
            out.append((cmd, rest))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_command_lines_use_real_commands_and_options(page):
    bad = []
    for cmd, rest in command_lines(page):
        if cmd[0] not in commands():
            bad.append(f"onnx-dml-bench {' '.join(cmd)}: no such command")
            continue
        unknown = set(_OPTION.findall(rest)) - options(cmd)
        if unknown:
            bad.append(f"onnx-dml-bench {' '.join(cmd)}{rest}: {sorted(unknown)}")
    assert not bad, bad


def test_checks_reject_unknown_commands_and_options(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `run --ep cpu --bogus` or\n\n    onnx-dml-bench setup dml --stack wine10-sm6 --nope\n"
                    "    .venv/bin/onnx-dml-bench frobnicate --x   # a comment --ignored\n", encoding="utf-8")
    found = command_lines(page)
    assert [c for c, _ in found] == [("setup", "dml"), ("frobnicate",), ("run",)]
    assert set(_OPTION.findall(found[0][1])) - options(("setup", "dml")) == {"--nope"}
    assert "frobnicate" not in commands()
    assert set(_OPTION.findall(found[2][1])) - options(("run",)) == {"--bogus"}


def test_command_lines_are_found():
    lines = [c for page in PAGES for c, _ in command_lines(page)]
    assert {c[0] for c in lines} >= {"run", "merge", "report", "compare", "cases", "shrink", "bundle", "triage",
                                     "fuzz", "expectations", "fixtures", "eps", "perf", "setup"}
    assert ("setup", "dml") in lines


def test_pytest_plugin_options_are_real():
    used = set()
    for page in PAGES:
        used |= set(re.findall(r"--dml-bench-[a-z-]+", _text(page)))
    res = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    known = set(re.findall(r"--dml-bench-[a-z-]+", res.stdout))
    assert used and known, res.stdout[-2000:] + res.stderr[-2000:]
    assert used <= known, used - known


def test_every_test_the_guarantees_page_names_exists():
    """docs/guarantees.md proves each guarantee by a test: each test it names is a test function of
    the file it names (a renamed or removed test leaves a guarantee unproven)."""
    text = _text(ROOT / "docs" / "guarantees.md")
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", text)
    assert len(named) >= 30, named
    for path, name in named:
        src = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", src, re.M), f"docs/guarantees.md names {path}::{name}, which does not exist"
