"""Fuzz targets of the file readers: results files, case files, expectations, perf files, the `.pb`
outputs `judge` reads and fixture folders. Each target starts from its seed corpus
(tests/corpus/fuzz/<target>/, real files the bench wrote, and every input a target once crashed on)
and mutates it the way a damaged or crafted artifact differs: structured mutations of the parsed
document (a value replaced by another type, a huge number, a long or deep value; a key dropped or
duplicated; a line dropped, repeated or swapped; a TensorProto's dims, data type, data or external
data changed; one file of a fixture folder changed, removed or added), and byte-level ones
(truncated, flipped, spliced). The reader must give a result or raise its own one-line error type;
anything else is a crash, and 0 are allowed.

Each target runs for a bounded time: at most ONNX_DML_BENCH_FUZZ_SECONDS seconds (default 4) and
ONNX_DML_BENCH_FUZZ_EXAMPLES examples (default 200), whichever ends first. An input that crashes a
target is written into its corpus folder (``find-<hash>``) before the test fails: once the reader is
fixed, it is committed there and replayed on every run (``test_seed_corpus``)."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from google.protobuf.message import DecodeError
from onnx import ModelProto, TensorProto

from onnx_dml_bench.casefile import CaseFileError
from onnx_dml_bench.casefile import load as load_cases
from onnx_dml_bench.expectations import ExpectationsError
from onnx_dml_bench.expectations import load as load_expectations
from onnx_dml_bench.fixtures import FixtureError, load_fixture, read_tensor
from onnx_dml_bench.judge import JudgeError, load_sources, read_outputs
from onnx_dml_bench.report.perf import PerfFileError, load_perf
from onnx_dml_bench.results import ResultsError, read

pytestmark = pytest.mark.fuzz

CORPUS = Path(__file__).parent / "corpus" / "fuzz"
SECONDS = float(os.environ.get("ONNX_DML_BENCH_FUZZ_SECONDS", "4"))
EXAMPLES = int(os.environ.get("ONNX_DML_BENCH_FUZZ_EXAMPLES", "200"))
#: the longest error line a reader may give
MAX_LINE = 1000


def seeds(target: str) -> list[Path]:
    """The corpus of ``target``: files, or folders for the fixture target."""
    return sorted(p for p in (CORPUS / target).iterdir() if not p.name.startswith("."))


#: the seeds of each target as this run found them (an input kept while it runs joins the next run)
SEEDS: dict[str, list[Path]] = {}


def corpus(target: str) -> list[Path]:
    return SEEDS.setdefault(target, seeds(target))


def bounded(fuzz) -> None:
    """Run the hypothesis target ``fuzz`` (a function of ``st.data()``) in rounds of 25 examples
    until ONNX_DML_BENCH_FUZZ_SECONDS or ONNX_DML_BENCH_FUZZ_EXAMPLES is spent."""
    t0, n = time.monotonic(), 0
    run = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                   phases=[Phase.generate])(given(st.data())(fuzz))      # no shrinking: a find is kept as it came
    while n < EXAMPLES and time.monotonic() - t0 < SECONDS:
        run()
        n += 25


def keep_find(target: str, what: Path) -> Path:
    """Write an input that crashed ``target`` into its corpus folder (a file, or a fixture folder)."""
    if what.is_dir():
        h = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(what.rglob("*")) if p.is_file())).hexdigest()[:10]
        dst = CORPUS / target / f"find-{h}"
        if not dst.exists():
            shutil.copytree(what, dst)
    else:
        data = what.read_bytes()
        dst = CORPUS / target / f"find-{hashlib.sha256(data).hexdigest()[:10]}{''.join(what.suffixes)}"
        dst.write_bytes(data)
    return dst


def no_crash(target: str, what: Path, allowed: tuple, call) -> None:
    """``call()`` returns or raises one of ``allowed`` with one short line; anything else is a crash."""
    try:
        call()
    except allowed as e:
        text = str(e)
        if "\n" in text or len(text) > MAX_LINE:
            dst = keep_find(target, what)
            raise AssertionError(f"{target}: an error of {len(text)} characters or on several lines "
                                 f"(kept as {dst}): {text[:300]!r}") from None
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        dst = keep_find(target, what)
        raise AssertionError(f"{target}: crashed with {type(e).__name__}: {e!s:.300} (kept as {dst})") from e


# ----------------------------------------------------------------------------------------------
# Mutations
# ----------------------------------------------------------------------------------------------

#: values a crafted file likes to hold
ODD = [None, True, False, 0, -1, 1, 2**31, 2**32, 2**63, -2**63, 2**64 + 1, 10**400, 1e308, -0.0, 0.5, "", "x",
       "A" * 5000, "NaN", "Infinity", "\u202e", "../../etc/passwd", "C:\\Windows", [], {}, [[[[[[]]]]]],
       {"": None}, ["a", 1, None]]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | st.sampled_from(ODD),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12)


def mutate_tree(data, value):
    """``value`` (a parsed JSON/YAML document) with one node changed: replaced, removed, duplicated or
    wrapped, at a path drawn from the document."""
    if not isinstance(value, (dict, list)) or not value or data.draw(st.integers(0, 4)) == 0:
        op = data.draw(st.sampled_from(["replace", "wrap"]))
        return data.draw(json_values) if op == "replace" else [value]
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    k = data.draw(st.sampled_from(keys))
    op = data.draw(st.sampled_from(["descend", "descend", "descend", "drop", "duplicate", "new"]))
    out = dict(value) if isinstance(value, dict) else list(value)
    if op == "descend":
        out[k] = mutate_tree(data, value[k])
    elif op == "drop":
        del out[k]
    elif op == "duplicate":
        if isinstance(out, dict):
            out[f"{k}_"] = value[k]
        else:
            out.insert(k, value[k])
    elif isinstance(out, dict):
        out[data.draw(st.text(max_size=10))] = data.draw(json_values)
    else:
        out.append(data.draw(json_values))
    return out


def mutate_bytes(data, raw: bytes) -> bytes:
    op = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete", "splice", "odd"]))
    n = len(raw)
    i = data.draw(st.integers(0, n))
    if op == "truncate":
        return raw[:i]
    if op == "flip" and n:
        i = min(i, n - 1)
        return raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
    if op == "insert":
        return raw[:i] + data.draw(st.binary(max_size=16)) + raw[i:]
    if op == "delete":
        return raw[:i] + raw[i + data.draw(st.integers(1, 64)):]
    if op == "splice" and n:
        j = data.draw(st.integers(i, n))
        return raw[:j] + raw[i:j] + raw[j:]
    return raw[:i] + data.draw(st.sampled_from([b"\x00", b"\xff\xfe", b"\n", b"\r\n", b"\"", b"{", b"]",
                                                b"\xe2\x80\xae", b"&a [*a]", b"!!python/object:os.system"])) + raw[i:]


def mutate_document(data, raw: bytes, fmt: str) -> bytes:
    """A JSON or YAML document: its tree mutated and written again in ``fmt``, or its bytes."""
    if data.draw(st.booleans()):
        return mutate_bytes(data, raw)
    try:
        doc = yaml.safe_load(raw) if fmt == "yaml" else json.loads(raw)
    except (yaml.YAMLError, ValueError):        # an earlier mutation's bytes
        return mutate_bytes(data, raw)
    doc = mutate_tree(data, doc)
    if fmt == "yaml" and data.draw(st.booleans()):
        try:
            return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()
        except yaml.YAMLError:
            pass
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def mutate_jsonl(data, raw: bytes) -> bytes:
    lines = raw.splitlines(keepends=True)
    op = data.draw(st.sampled_from(["line", "line", "line", "drop", "repeat", "swap", "blank", "bytes"]))
    if op == "bytes" or not lines:
        return mutate_bytes(data, raw)
    k = data.draw(st.integers(0, len(lines) - 1))
    if op == "line":
        try:
            lines[k] = json.dumps(mutate_tree(data, json.loads(lines[k])), ensure_ascii=False).encode(
                "utf-8", "surrogatepass") + b"\n"
        except ValueError:
            lines[k] = mutate_bytes(data, lines[k])
    elif op == "drop":
        del lines[k]
    elif op == "repeat":
        lines.insert(k, lines[k] * data.draw(st.integers(1, 3)))
    elif op == "swap":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[k], lines[j] = lines[j], lines[k]
    else:
        lines.insert(k, b"\n" * data.draw(st.integers(1, 5)))
    return b"".join(lines)


def mutate_tensor(data, raw: bytes) -> bytes:
    """A TensorProto with one field changed (dims, type, data, name, external data), or its bytes."""
    if data.draw(st.integers(0, 3)) == 0:
        return mutate_bytes(data, raw)
    t = TensorProto()
    try:
        t.ParseFromString(raw)
    except DecodeError:                          # an earlier mutation's bytes
        return mutate_bytes(data, raw)
    op = data.draw(st.sampled_from(["dims", "type", "raw", "typed", "name", "external", "segment"]))
    if op == "dims":
        t.ClearField("dims")
        t.dims.extend(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 7, -1, 2**31, 2**40, 2**62]), max_size=6)))
    elif op == "type":
        t.data_type = data.draw(st.integers(0, 30))
    elif op == "raw":
        t.raw_data = mutate_bytes(data, t.raw_data) if data.draw(st.booleans()) else data.draw(st.binary(max_size=64))
    elif op == "typed":
        t.ClearField("raw_data")
        field = data.draw(st.sampled_from(["float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                                           "string_data"]))
        values = {"float_data": st.floats(width=32), "double_data": st.floats(), "int32_data": st.integers(-2**31, 2**31 - 1),
                  "int64_data": st.integers(-2**63, 2**63 - 1), "uint64_data": st.integers(0, 2**64 - 1),
                  "string_data": st.binary(max_size=8)}[field]
        getattr(t, field).extend(data.draw(st.lists(values, max_size=8)))
    elif op == "name":
        t.name = data.draw(st.sampled_from(["", "Y", "Indices", "X", "Z", "\u202eY", "../Y"]))
    elif op == "external":
        t.data_location = TensorProto.EXTERNAL
        t.ClearField("raw_data")
        for key, val in data.draw(st.lists(st.tuples(
                st.sampled_from(["location", "offset", "length", "checksum", "other"]),
                st.sampled_from(["data.bin", "../x.bin", "/etc/hostname", "", "0", "-1", "99999999999", "output_0.pb",
                                 "test_data_set_0", "case.json"])), max_size=4)):
            e = t.external_data.add()
            e.key, e.value = key, val
    else:
        t.segment.begin, t.segment.end = data.draw(st.integers(-5, 2**40)), data.draw(st.integers(-5, 2**40))
    return t.SerializeToString()


def mutate_model(data, raw: bytes) -> bytes:
    """A ModelProto with one thing changed (opset, a node's type or attribute, an input's or output's
    type or shape), or its bytes."""
    if data.draw(st.integers(0, 2)) == 0:
        return mutate_bytes(data, raw)
    m = ModelProto()
    try:
        m.ParseFromString(raw)
    except DecodeError:
        return mutate_bytes(data, raw)
    g = m.graph
    op = data.draw(st.sampled_from(["opset", "op_type", "attribute", "io", "node_io", "drop_node"]))
    if op == "opset" and m.opset_import:
        m.opset_import[0].version = data.draw(st.sampled_from([0, 1, 7, 99, -1, 2**40]))
    elif op == "op_type" and g.node:
        g.node[0].op_type = data.draw(st.sampled_from(["", "Relu", "MaxPool", "Loop", "NoSuchOp", "If"]))
    elif op == "attribute" and g.node and g.node[0].attribute:
        a = g.node[0].attribute[data.draw(st.integers(0, len(g.node[0].attribute) - 1))]
        a.ClearField("ints")
        a.ints.extend(data.draw(st.lists(st.sampled_from([0, -1, 1, 2**31, 2**62]), max_size=6)))
        a.i = data.draw(st.sampled_from([0, -1, 2**40]))
    elif op == "io" and (g.input or g.output):
        vi = data.draw(st.sampled_from(list(g.input) + list(g.output)))
        if data.draw(st.booleans()):
            vi.type.tensor_type.elem_type = data.draw(st.integers(0, 30))
        else:
            shape = vi.type.tensor_type.shape
            shape.ClearField("dim")
            for d in data.draw(st.lists(st.sampled_from([0, 1, 2, -1, 2**40]), max_size=5)):
                shape.dim.add().dim_value = d
    elif op == "node_io" and g.node:
        g.node[0].output[0] = data.draw(st.sampled_from(["", "Z", "X"]))
    elif op == "drop_node" and g.node:
        del g.node[0]
    return m.SerializeToString()


def mutate_fixture(data, folder: Path) -> None:
    """One file of a fixture folder changed (each by its kind), removed, or one added."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    op = data.draw(st.sampled_from(["change", "change", "change", "change", "remove", "add"]))
    if op == "add":
        name = data.draw(st.sampled_from(["test_data_set_0/output_1.pb", "test_data_set_0/input_1.pb",
                                          "test_data_set_1/input_0.pb", "data.bin", "extra/case.json"]))
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data.draw(st.sampled_from(files)).read_bytes())
        return
    p = data.draw(st.sampled_from(files))
    if op == "remove":
        p.unlink()
        return
    raw = p.read_bytes()
    if p.suffix == ".pb":
        p.write_bytes(mutate_tensor(data, raw))
    elif p.suffix == ".onnx":
        p.write_bytes(mutate_model(data, raw))
    else:
        p.write_bytes(mutate_document(data, raw, "json"))


# ----------------------------------------------------------------------------------------------
# The targets: one reader each, with its own error
# ----------------------------------------------------------------------------------------------

def read_results(p: Path) -> None:
    no_crash("results", p, (ResultsError,), lambda: read(p))
    no_crash("results", p, (ResultsError,), lambda: read(p, allow_partial=True))


def read_casefile(p: Path) -> None:
    no_crash("casefile", p, (CaseFileError,), lambda: load_cases(p))


def read_expectations(p: Path) -> None:
    no_crash("expectations", p, (ExpectationsError,), lambda: load_expectations(p))


def read_perf(p: Path) -> None:
    no_crash("perf", p, (PerfFileError,), lambda: load_perf(p))


def read_pb(p: Path) -> None:
    """A `.pb` output as `judge` reads it (OUTPUTS/<case id>/output_0.pb), and as a fixture's tensor."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "c1"
        d.mkdir()
        shutil.copyfile(p, d / "output_0.pb")
        no_crash("pb", p, (JudgeError,), lambda: read_outputs(Path(tmp), "c1", ["Y"]))
        no_crash("pb", p, (FixtureError,), lambda: read_tensor(tmp, d / "output_0.pb"))


def read_fixture(folder: Path) -> None:
    no_crash("fixture", folder, (FixtureError,), lambda: load_fixture(folder))
    no_crash("fixture", folder, (JudgeError,), lambda: load_sources(folder))


FILE_TARGETS = {"results": read_results, "casefile": read_casefile, "expectations": read_expectations,
                "perf": read_perf, "pb": read_pb}


def _fmt(p: Path) -> str:
    return "yaml" if p.suffix in (".yaml", ".yml") else "json"


def _fuzz_file(target: str, data, mutate) -> None:
    seed = data.draw(st.sampled_from(corpus(target)))
    raw = seed.read_bytes()
    gz = raw[:2] == b"\x1f\x8b"
    if gz:
        raw = gzip.decompress(raw)
    out = mutate(data, raw, seed)
    if gz and data.draw(st.booleans()):
        out = gzip.compress(out, mtime=0)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"fuzzed{''.join(seed.suffixes)}"
        p.write_bytes(out)
        FILE_TARGETS[target](p)


def test_fuzz_results():
    bounded(lambda data: _fuzz_file("results", data, lambda d, raw, seed: mutate_jsonl(d, raw)))


def test_fuzz_case_files():
    bounded(lambda data: _fuzz_file("casefile", data, lambda d, raw, seed: mutate_document(d, raw, _fmt(seed))))


def test_fuzz_expectations():
    bounded(lambda data: _fuzz_file("expectations", data, lambda d, raw, seed: mutate_document(d, raw, _fmt(seed))))


def test_fuzz_perf_files():
    bounded(lambda data: _fuzz_file("perf", data, lambda d, raw, seed: mutate_document(d, raw, "json")))


def test_fuzz_pb_outputs():
    bounded(lambda data: _fuzz_file("pb", data, lambda d, raw, seed: mutate_tensor(d, raw)))


def _fuzz_fixture(data) -> None:
    seed = data.draw(st.sampled_from(corpus("fixture")))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / seed.name
        shutil.copytree(seed, folder)
        for _ in range(data.draw(st.integers(1, 2))):
            mutate_fixture(data, folder)
        read_fixture(folder)


def test_fuzz_fixture_folders():
    bounded(_fuzz_fixture)


@pytest.mark.parametrize("target", [*FILE_TARGETS, "fixture"])
def test_seed_corpus(target):
    """Every seed, and every input a target once crashed on, read again: its result or its error."""
    found = seeds(target)
    assert found, f"{CORPUS / target}: no seed"
    for p in found:
        (read_fixture if target == "fixture" else FILE_TARGETS[target])(p)
