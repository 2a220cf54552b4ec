"""The census of real layers (onnx_dml_bench/data/census, made by scripts/census/census.py) ships
inside the package and is whole: every instance row parses and names a distinct layer, every
distinct layer has its ONNX nodes and the models that use it, shapes are positive, and every
number that docs/census.md states is computed here from the data and must agree with the page.

`python tests/test_census.py` prints the page's tables from the data."""
from __future__ import annotations

import gzip
import json
import math
import re
import statistics
from collections import Counter
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "census.md"
TASKS = ["classification", "detection", "segmentation", "video", "optical-flow",
         "super-resolution", "yolo"]
ROI_KINDS = ("roi_align", "roi_pool")


def _package_file(name: str):
    return resources.files("onnx_dml_bench").joinpath("data", "census", name)


@lru_cache(maxsize=None)
def distinct() -> dict:
    return json.loads(_package_file("distinct.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def rows() -> list:
    with gzip.open(io_bytes(_package_file("layers.jsonl.gz").read_bytes()), "rt",
                   encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def io_bytes(b: bytes):
    import io
    return io.BytesIO(b)


# ------------------------------------------------------------------------------------------------
# Facts, computed from the data


def configs() -> dict:
    return {c["id"]: c for c in distinct()["configs"]}


def layer_view(L: dict) -> dict:
    """A distinct layer with its configuration's kind and attributes."""
    c = configs()[L["config"]]
    return {**L, "kind": c["kind"], "attrs": c["attrs"]}


def global_window(r: dict) -> int | None:
    """Elements per output of a global average (adaptive average to all-ones, or a mean over
    every spatial axis); None for any other layer (an instance row or a layer_view)."""
    k, a, x = r["kind"], r["attrs"], r["input"][0]
    if k.startswith("adaptive_avg_pool") and all(o == 1 for o in a["output_size"]):
        return math.prod(x[2:])
    if k == "mean":
        return math.prod(x[2:]) if a["layout"].startswith("NC") else math.prod(x[1:-1])
    return None


def model_key(r: dict) -> str:
    return f"{r['source']}:{r['model']}"


def fmt(n) -> str:
    if isinstance(n, float):
        return f"{n:,.1f}"
    return f"{n:,}"


def facts() -> dict:
    d, rs = distinct(), rows()
    models = d["models"]
    ok = [m for m in models if m["status"] == "ok"]
    gap = [r for r in rs if global_window(r) is not None]
    wide = [r for r in gap if global_window(r) > 2048]
    rois = [r for r in rs if r["kind"] in ROI_KINDS]
    exports = d["exports"]

    def export_ops(layer, exporter):
        e = exports[layer["onnx"][exporter]]
        return [n["op"] for n in e.get("nodes", [])]

    views = [layer_view(L) for L in d["layers"]]
    gap_layers = [L for L in views if global_window(L) is not None
                  and L["kind"].startswith("adaptive_avg")]
    return {
        "models in the census": len(models),
        "models that ran": len(ok),
        "models that failed": len(models) - len(ok),
        "models run on the CPU": sum(m.get("run") == "cpu" for m in ok),
        "models with shapes from the meta device only": sum(m.get("run") == "meta" for m in ok),
        "models with at least one census layer": len({model_key(r) for r in rs}),
        "layer instances": len(rs),
        "layer instances seen as modules": sum(r["mechanism"] == "module" for r in rs),
        "layer instances seen as function calls only": sum(r["mechanism"] == "function"
                                                           for r in rs),
        "distinct layers (operation, attributes, input shapes)": len(d["layers"]),
        "distinct configurations (operation, attributes)": len(d["configs"]),
        "models with a global average pooling": len({model_key(r) for r in gap}),
        "global-average layer instances": len(gap),
        "global-average instances over more than 2,048 elements a window": len(wide),
        "models with a global average over more than 2,048 elements a window":
            len({model_key(r) for r in wide}),
        "median layer input (elements, lower median)": statistics.median_low(
            math.prod(r["input"][0]) for r in rs),
        "RoI layer instances": len(rois),
        "RoI layer instances with no RoI": sum(r["rois"] == 0 for r in rois),
        "largest RoI count of one call": max((r["rois"] for r in rois), default=0),
        "adaptive-average-to-1 layers that dynamo exports as GlobalAveragePool": sum(
            export_ops(L, "dynamo") == ["GlobalAveragePool"] for L in gap_layers),
        "adaptive-average-to-1 layers that dynamo exports as ReduceMean": sum(
            export_ops(L, "dynamo") == ["ReduceMean"] for L in gap_layers),
        "adaptive-average-to-1 layers that TorchScript exports as GlobalAveragePool": sum(
            export_ops(L, "torchscript") == ["GlobalAveragePool"] for L in gap_layers),
        "distinct layers a dynamo export failed for": sum(
            "error" in exports[L["onnx"]["dynamo"]] for L in d["layers"]),
        "distinct layers a TorchScript export failed for": sum(
            "error" in exports[L["onnx"]["torchscript"]] for L in d["layers"]),
        "layers whose TorchScript export at the real shape checked the stand-in":
            d["census"]["export"]["standin_checked"],
        "of them, with other nodes than the stand-in": len(
            d["census"]["export"]["standin_mismatches"]),
        "seconds to run the models": d["census"]["seconds"]["collect"],
        "seconds to export the distinct layers": d["census"]["seconds"]["export"],
    }


def family_table() -> list:
    d, rs = distinct(), rows()
    out = []
    for task in TASKS:
        ms = [m for m in d["models"] if m["task"] == task]
        if not ms:
            continue
        trs = [r for r in rs if r["task"] == task]
        out.append([task, len(ms), sum(m["status"] != "ok" for m in ms),
                    len({model_key(r) for r in trs}), len(trs),
                    len({r["id"] for r in trs})])
    return out


def op_table() -> list:
    c = Counter((r["op"], r["kind"], r["mechanism"]) for r in rows())
    return [[f"`{op}`", f"`{kind}`", mech, n]
            for (op, kind, mech), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


def elements(L: dict) -> int:
    return math.prod(L["input"][0])


def largest_inputs(n=8) -> list:
    layers = [layer_view(L) for L in distinct()["layers"]]
    layers = sorted(layers, key=lambda L: (-elements(L), L["id"]))[:n]
    return [[L["id"], f"`{L['kind']}`", "x".join(map(str, L["input"][0])), elements(L),
             ", ".join(sorted(L["models"]))] for L in layers]


def widest_windows(n=8) -> list:
    layers = [L for L in map(layer_view, distinct()["layers"]) if global_window(L) is not None]
    layers.sort(key=lambda L: (-global_window(L), L["id"]))
    return [[L["id"], f"`{L['kind']}`", "x".join(map(str, L["input"][0])), global_window(L),
             ", ".join(sorted(L["models"]))] for L in layers[:n]]


def failed_models() -> list:
    return [[f"{m['source']}:{m['model']}", m.get("error", "")]
            for m in distinct()["models"] if m["status"] != "ok"]


TABLES = {
    "facts": (["fact", "value"], lambda: [[k, v] for k, v in facts().items()]),
    "families": (["task", "models", "failed", "models with layers", "layer instances",
                  "distinct layers"], family_table),
    "ops": (["op (as the code calls it)", "kind", "mechanism", "instances"], op_table),
    "largest": (["layer", "kind", "input", "elements", "models"], largest_inputs),
    "widest": (["layer", "kind", "input", "window (elements)", "models"], widest_windows),
    "failed": (["model", "error"], failed_models),
}


def render(name: str) -> str:
    head, fn = TABLES[name]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in fn():
        lines.append("| " + " | ".join(fmt(v) if isinstance(v, (int, float)) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def doc_table(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- table:{name} -->\n(.*?)\n<!-- /table -->", text, re.S)
    assert m, f"docs/census.md has no table '{name}'"
    return m.group(1).strip()


# ------------------------------------------------------------------------------------------------
# Tests


def _strict(name):
    raise ValueError(f"not strict JSON: {name}")


def test_data_ships_in_the_package_and_is_small():
    for name in ("distinct.json", "layers.jsonl.gz"):
        f = _package_file(name)
        assert f.is_file(), name
        assert len(f.read_bytes()) < 400_000, name
    json.loads(_package_file("distinct.json").read_text(encoding="utf-8"), parse_constant=_strict)
    for r in rows():
        json.loads(json.dumps(r), parse_constant=_strict)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/census/*"' in pyproject


def test_every_row_parses_and_names_its_distinct_layer():
    layers = {L["id"]: L for L in distinct()["layers"]}
    count = Counter()
    for r in rows():
        for key in ("source", "task", "model", "layer", "op", "kind", "mechanism", "attrs",
                    "input", "output", "run", "id"):
            assert key in r, (key, r)
        assert r["task"] in TASKS
        assert r["mechanism"] in ("module", "function")
        assert r["run"] in ("cpu", "meta")
        L = layer_view(layers[r["id"]])
        assert (L["kind"], L["attrs"], L["input"], L["output"]) == \
            (r["kind"], r["attrs"], r["input"], r["output"])
        assert model_key(r) in L["models"]
        count[r["id"]] += 1
        if r["source"] == "architecture":
            assert r.get("ref")
        if r["source"] != "architecture":
            assert r["version"]
    assert count == {i: L["instances"] for i, L in layers.items()}


def test_shapes_are_positive():
    for r in rows():
        x, *rest = r["input"]
        assert x and all(isinstance(s, int) and s > 0 for s in x), r
        assert all(s > 0 for s in r["output"][1:]), r
        if r["kind"] in ROI_KINDS:
            # a level of a multi-scale RoI pooling may get no RoI: a real, empty call
            assert rest == [[r["rois"], 5]] and r["rois"] >= 0 and r["output"][0] == r["rois"]
        else:
            assert not rest and r["output"][0] > 0, r


def test_every_distinct_layer_has_onnx_nodes_and_models():
    d = distinct()
    exports = d["exports"]
    for L in d["layers"]:
        assert L["models"] and all(n > 0 for n in L["models"].values()), L["id"]
        assert sum(L["models"].values()) == L["instances"]
        assert L["config"] in configs()
        assert set(L["onnx"]) == {"dynamo", "torchscript"}
        described = [exports[ref] for ref in L["onnx"].values()]
        for e in described:
            assert ("nodes" in e and e["nodes"] and e["opset"]) or e.get("error"), L["id"]
        assert any(e.get("nodes") for e in described), f"{L['id']}: no exporter gave nodes"
        for e in described:
            for n in e.get("nodes", []):
                assert re.fullmatch(r"[A-Z][A-Za-z]+", n["op"]), n
    assert d["census"]["export"]["standin_mismatches"] == []


def test_configurations_group_the_layers():
    d = distinct()
    layers = {L["id"]: L for L in d["layers"]}
    seen = []
    for c in d["configs"]:
        members = [layers[i] for i in c["layers"]]
        assert members and all(L["config"] == c["id"] for L in members)
        assert c["instances"] == sum(L["instances"] for L in members) == sum(c["ops"].values())
        assert c["models"] == dict(sum((Counter(L["models"]) for L in members), Counter()))
        assert sum(c["models"].values()) == c["instances"]
        for ex in ("dynamo", "torchscript"):
            assert set(c["onnx"][ex]) == {L["onnx"][ex] for L in members}
        seen += c["layers"]
    assert sorted(seen) == sorted(layers)


def test_models_are_listed_with_what_happened():
    d = distinct()
    keys = [f"{m['source']}:{m['model']}" for m in d["models"]]
    assert len(keys) == len(set(keys))
    with_rows = {model_key(r) for r in rows()}
    for m in d["models"]:
        assert m["task"] in TASKS
        assert m["status"] in ("ok", "failed")
        if m["status"] == "ok":
            assert m["run"] in ("cpu", "meta") and m["input"]
            assert (m["layers"] > 0) == (f"{m['source']}:{m['model']}" in with_rows)
        else:
            assert m["error"]
    # the families the census promises beyond classification
    tasks = Counter(m["task"] for m in d["models"] if m["status"] == "ok")
    for task in TASKS:
        assert tasks[task] > 0, task
    kinds = {r["kind"] for r in rows()}
    for kind in ("roi_align", "roi_pool", "pixel_shuffle", "pixel_unshuffle", "space_to_depth",
                 "max_pool3d", "avg_pool3d", "adaptive_avg_pool2d", "mean", "max_pool2d_same"):
        assert kind in kinds, kind


def test_the_fast_rcnn_layer_is_there():
    (r,) = [r for r in rows() if r["model"] == "fast_rcnn_vgg16" and r["kind"] == "roi_pool"]
    assert r["input"] == [[1, 512, 38, 50], [300, 5]]
    assert r["attrs"] == {"output_size": [7, 7], "spatial_scale": 0.0625}
    L = next(L for L in distinct()["layers"] if L["id"] == r["id"])
    e = distinct()["exports"][L["onnx"]["torchscript"]]
    assert [n["op"] for n in e["nodes"]] == ["MaxRoiPool"]
    assert e["nodes"][0]["attrs"] == {"pooled_shape": [7, 7], "spatial_scale": 0.0625}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_doc_tables_agree_with_the_data(name):
    assert doc_table(name) == render(name), \
        f"docs/census.md table '{name}' is stale; `python tests/test_census.py` prints it"


def test_doc_names_every_failed_model_and_the_versions():
    text = DOC.read_text(encoding="utf-8")
    for key, _ in failed_models():
        assert key in text, key
    for dist, version in distinct()["census"]["versions"].items():
        assert f"{dist} {version}".lower() in text.lower(), (dist, version)


def test_doc_prose_numbers_agree_with_the_data():
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    d = distinct()
    models = d["models"]
    assert f"layer of {len(models)} vision models" in text
    tv_cls = sum(m["source"] == "torchvision" and m["task"] == "classification" for m in models)
    assert f"every classification model ({tv_cls})" in text
    timm = sum(m["source"] == "timm" for m in models)
    m = re.search(r"the (\d+) timm models of an earlier census .*? one model for each of the (\d+) "
                  r"timm modules", text)
    assert m and int(m.group(1)) + int(m.group(2)) == timm, (m and m.groups(), timm)
    opsets = {e["opset"] for e in d["exports"].values() if "opset" in e}
    assert len(opsets) == 1 and f"default opset ({opsets.pop()} for both)" in text
    limit = d["census"]["cpu_gflops_limit"]
    assert f"A model over {limit:g} GFLOPs keeps the shapes" in text
    assert "took under 20 minutes" in text and sum(d["census"]["seconds"].values()) < 20 * 60


if __name__ == "__main__":  # print the page's tables
    for name in TABLES:
        print(f"<!-- table:{name} -->\n{render(name)}\n<!-- /table -->\n")
