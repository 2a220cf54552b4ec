"""The layers of ARCHITECTURE.md, as the contracts in pyproject.toml that import-linter checks: every
contract kept, no import cycle among the package's modules, and function-local imports only where
ARCHITECTURE.md allows them (an optional package, or the start-up time of the two entry points)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "onnx_dml_bench"

grimp = pytest.importorskip("grimp", reason="import-linter (the test extra) brings grimp")

#: packages a function may import for itself: optional ones (absent on some machines, or only one
#: function needs them), and platform facilities
OPTIONAL = ("onnxruntime", "yaml", "numba", "llvmlite", "ctypes", "xdist", "_pytest")
#: modules whose functions import the bench itself: the commands (``--help`` loads click, rich and
#: the value modules only) and the pytest plugin (inactive, it registers its options only)
ENTRY_POINTS = ("cli/", "conformance/plugin.py")


def _lint_imports(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    cmd = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or pytest.skip("lint-imports not installed")]
    return subprocess.run(cmd + ["--no-cache", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_every_layer_contract_is_kept():
    p = _lint_imports()
    assert p.returncode == 0, p.stdout + p.stderr
    assert " 0 broken" in p.stdout, p.stdout


def test_a_broken_contract_fails(tmp_path):
    """The check is not vacuous: a contract that today's imports break is reported broken."""
    cfg = tmp_path / "contracts.toml"
    cfg.write_text('[tool.importlinter]\nroot_package = "onnx_dml_bench"\n\n'
                   '[[tool.importlinter.contracts]]\nname = "the command line runs nothing"\ntype = "forbidden"\n'
                   'source_modules = ["onnx_dml_bench.cli"]\nforbidden_modules = ["onnx_dml_bench.plan"]\n',
                   encoding="utf-8")
    p = _lint_imports("--config", str(cfg))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BROKEN" in p.stdout and "onnx_dml_bench.cli.run -> onnx_dml_bench.plan" in p.stdout, p.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for m in sorted(graph.modules):
            if m not in index:
                visit(m)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycle_in_the_package():
    graph = grimp.build_graph("onnx_dml_bench")
    assert len(graph.modules) > 50
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
        modules = set(edges)

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert _cycles(Graph()) == [["a", "b", "c"]]


def _local_imports(path: Path):
    """(line, module) of every import statement inside a function of ``path``."""
    out = []

    def walk(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import):
                out.extend((child.lineno, a.name) for a in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                out.append((child.lineno, "." * child.level + (child.module or "")))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return out


def test_function_local_imports_only_for_optional_packages_and_start_up_time():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, module in _local_imports(path):
            if module.startswith("."):
                if not rel.startswith(ENTRY_POINTS):
                    wrong.append(f"{rel}:{line}: {module} (the bench itself, outside an entry point)")
            elif module.split(".")[0] not in OPTIONAL:
                wrong.append(f"{rel}:{line}: {module} (not an optional package)")
    assert not wrong, "function-local imports ARCHITECTURE.md does not allow:\n" + "\n".join(wrong)
