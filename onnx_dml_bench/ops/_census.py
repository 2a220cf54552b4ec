"""The census of real layers (``data/census/distinct.json``, made by ``scripts/census/census.py``;
docs/census.md) as the operators read it for the ``networks`` profile: every distinct layer with
the ONNX nodes each exporter wrote for it.

Each :class:`Export` is one distinct layer (its kind, attributes, input shapes at the census's batch,
the models that use it) under one exporter (``dynamo`` or ``torchscript``), with the nodes that
exporter wrote and their opset. An operator turns the exports whose nodes are one of its ONNX forms
into descriptors (``Operator.from_export``); ``_networks`` makes the cases.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

EXPORTERS = ("dynamo", "torchscript")


@dataclass(frozen=True)
class Export:
    """One distinct census layer as one exporter wrote it."""
    layer: str                         # the distinct layer's id, e.g. "L0001"
    config: str                        # its configuration's id, e.g. "C001"
    kind: str                          # e.g. "adaptive_avg_pool2d", "max_pool2d_same", "pixel_shuffle"
    attrs: dict                        # the layer's attributes, normalised by the census
    inputs: tuple[tuple[int, ...], ...]  # input shapes at the census's batch (RoI layers: feature map, rois)
    models: tuple[str, ...]            # "package:model" of every model that uses the layer
    instances: int                     # layer instances in those models
    exporter: str                      # "dynamo" | "torchscript"
    export_id: str                     # e.g. "X001"
    nodes: tuple[dict, ...]            # the exported nodes: {"op", "attrs", "const_inputs"}
    opset: int

    @property
    def ops(self) -> str:
        """The node types in order, e.g. "Pad+MaxPool"."""
        return "+".join(n["op"] for n in self.nodes)

    def node(self, i: int = -1) -> dict:
        return self.nodes[i]

    def attr(self, node: dict, name: str, default: Any = None) -> Any:
        return (node.get("attrs") or {}).get(name, default)

    def const(self, node: dict, index: int, default: Any = None) -> Any:
        """A constant input of ``node`` (an initializer or Constant node in the exported model)."""
        return (node.get("const_inputs") or {}).get(str(index), default)


@functools.lru_cache(maxsize=1)
def data() -> dict:
    """``distinct.json`` as shipped in the package."""
    text = resources.files("onnx_dml_bench").joinpath("data", "census", "distinct.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def exports() -> tuple[Export, ...]:
    """Every distinct layer under every exporter that wrote nodes for it (an export that failed
    has none and is left out), in the census's order."""
    d = data()
    configs = {c["id"]: c for c in d["configs"]}
    out = []
    for layer in d["layers"]:
        cfg = configs[layer["config"]]
        for exporter in EXPORTERS:
            xid = (layer.get("onnx") or {}).get(exporter)
            x = d["exports"].get(xid) if xid else None
            if not x or not x.get("nodes"):
                continue
            out.append(Export(layer["id"], cfg["id"], cfg["kind"], dict(cfg.get("attrs") or {}),
                              tuple(tuple(int(v) for v in s) for s in layer["input"]),
                              tuple(sorted(layer.get("models") or {})), int(layer.get("instances", 1)),
                              exporter, xid, tuple(x["nodes"]), int(x.get("opset", 0))))
    return tuple(out)


def layer_count() -> int:
    return len(data()["layers"])
