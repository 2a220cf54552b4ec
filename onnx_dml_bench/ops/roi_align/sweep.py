"""RoiAlign's cases: the sweeps of the profiles, and the census's RoiAlign layers."""
from __future__ import annotations

import json
from pathlib import Path

from ...cases import Case
from .._sweep import check_profile, rotate
from ..base import UINT_MAX, DescriptorError
from .descriptors import RoiAlign1Desc

# ------------------------------------------------------------------------------------------------
# Sweeps
# ------------------------------------------------------------------------------------------------

ADAPTIVE = (1, UINT_MAX)
#: expressible geometries: (InputSizes, NumROIs, OutputSize, ReductionFunction, (Min, Max) samples,
#: spatial scale, InputPixelOffset)
GRAPH_GEOMETRIES = [
    ((1, 1, 8, 8), 3, (2, 2), "AVERAGE", (2, 2), 1.0, 0.5),
    ((2, 3, 10, 12), 4, (3, 3), "AVERAGE", ADAPTIVE, 0.5, 0.5),
    ((1, 2, 16, 16), 3, (2, 4), "MAX", (2, 2), 0.25, 0.5),
    ((2, 2, 7, 9), 5, (1, 1), "AVERAGE", ADAPTIVE, 1.0, 0.0),
    ((1, 4, 12, 10), 3, (4, 3), "MAX", ADAPTIVE, 0.0625, 0.0),
    ((3, 1, 6, 6), 6, (7, 7), "AVERAGE", (1, 1), 1.0, 0.5),
    ((1, 2, 9, 9), 2, (3, 2), "MAX", (3, 3), 2.0, 0.0),
    ((1, 3, 13, 17), 4, (7, 7), "AVERAGE", (2, 2), 0.25, 0.0),
    ((1, 3, 13, 17), 4, (7, 7), "AVERAGE", (2, 2), 0.25, 0.5),
    ((2, 2, 11, 7), 4, (2, 3), "MAX", ADAPTIVE, 0.5, 0.5),
    ((1, 2, 12, 15), 5, (2, 3), "AVERAGE", ADAPTIVE, 0.3, 0.0),     # a scale FLOAT does not hold exactly
]
#: what only the direct lane runs (ROI_ALIGN1's fields no graph can request), on geometry 0 and 1:
#: descriptor field changes
DML_ONLY = [
    dict(InterpolationMode="NEAREST_NEIGHBOR"),
    dict(InterpolationMode="NEAREST_NEIGHBOR", ReductionFunction="MAX"),
    dict(InputPixelOffset=0.0, OutputPixelOffset=0.0),
    dict(InputPixelOffset=0.25, OutputPixelOffset=-0.25),
    dict(AlignRegionsToCorners=True),
    dict(AlignRegionsToCorners=True, OutputPixelOffset=0.0, InputPixelOffset=0.0),
    dict(SpatialScaleX=0.5, SpatialScaleY=0.25),
    dict(OutOfBoundsInputValue=7.5),
    dict(MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=4),
    dict(MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=3),
]


def _desc(op, geo, dtype, **fields):
    sizes, n, out, mode, (lo, hi), scale, ipo = geo
    base = dict(InputSizes=sizes, RoiSizes=(n, 4), DataType=dtype, OutputSize=out, ReductionFunction=mode,
                MinimumSamplesPerOutput=lo, MaximumSamplesPerOutput=hi, SpatialScaleX=scale, SpatialScaleY=scale)
    if op.Desc is RoiAlign1Desc:
        base["InputPixelOffset"] = ipo
    elif ipo != 0.5:
        return None
    d = op.Desc(**{**base, **fields})
    try:
        op.validate(d)
    except DescriptorError:
        return None
    return d


def sweep_of(op, profile: str) -> list[Case]:
    """Per geometry, float32 and float16, a rotation of the input and RoI families (the whole
    rotation in 'full'; real-valued inputs beside it); RoiAlign1 adds what only DirectML can run,
    the other opsets of the expressible geometries, float64 graphs (every family), UINT64 batch
    indices at feature level 5.0 and the tensor shapes ONNX does not write; 'full' adds a grid of
    sizes. 'smoke': one case per geometry and a few of the rest."""
    check_profile(profile)
    one = op.Desc is RoiAlign1Desc
    smoke = profile == "smoke"
    n_fam = {"smoke": 1, "default": 5, "full": 99}[profile]
    geos = list(GRAPH_GEOMETRIES)
    if profile == "full":
        geos += [((2, 4, 20, 24), 6, out, mode, smp, sc, ipo) for out in ((2, 2), (5, 5), (7, 7))
                 for mode in ("AVERAGE", "MAX") for smp in ((2, 2), ADAPTIVE) for sc in (1.0, 0.125) for ipo in (0.0, 0.5)]
    cases = []
    for gi, geo in enumerate(geos):
        for dt in (("FLOAT32", "FLOAT16")[gi % 2],) if smoke else ("FLOAT32", "FLOAT16"):
            d = _desc(op, geo, dt)
            if d is None:
                continue
            fams = ["random"] if smoke and gi % 3 == 0 else rotate(op.families(dt), gi * 3 + (dt == "FLOAT16"), n_fam)
            if not smoke:
                fams += [f for f in ("ties",) if d.ReductionFunction == "MAX" and f not in fams]
                fams += ["real"] if d.ReductionFunction == "AVERAGE" else []
            for fam in fams:
                cases.append(op.make_case(d, {}, fam))
    if one:
        for gi, change in enumerate(DML_ONLY):
            if smoke and gi % 3:
                continue
            for geo in GRAPH_GEOMETRIES[:1] if smoke else GRAPH_GEOMETRIES[:2]:
                for dt in ("FLOAT32",) if smoke else ("FLOAT32", "FLOAT16"):
                    d = _desc(op, geo, dt, **change)
                    if d is None:
                        continue
                    for fam in rotate(op.families(dt), gi * 5 + (dt == "FLOAT16"), 1 if smoke else 2):
                        cases.append(op.make_case(d, {}, fam))
        for gi, geo in enumerate(GRAPH_GEOMETRIES):
            d = _desc(op, geo, "FLOAT32")
            fam = "random" if smoke else rotate(op.families("FLOAT32"), gi, 1)[0]
            if smoke and gi not in (3, 6):
                continue
            if d.InputPixelOffset == 0.0:
                cases.append(op.make_case(d, {}, fam, opset=10))
            if gi % 3 == 0:
                cases.append(op.make_case(d, {}, fam, opset=22))
            if gi % 3 == 1:
                cases.append(op.make_case(d.replace(BatchIndicesDataType="UINT64", FeatureLevel="5.0"), {}, fam))
        # float64 (ONNX's double): every family, over the expressible geometries
        fams = op.families("FLOAT64")[:1] if smoke else op.families("FLOAT64")
        for fi, fam in enumerate(fams):
            d = _desc(op, GRAPH_GEOMETRIES[(fi * 3) % len(GRAPH_GEOMETRIES)], "FLOAT64")
            cases.append(op.make_case(d, {}, fam))
        if not smoke:
            d = _desc(op, GRAPH_GEOMETRIES[1], "FLOAT32")
            cases.append(op.make_case(d.replace(RoiSizes=(1, 1, d.num_rois, 4), BatchIndicesSizes=(1, 1, 1, d.num_rois)),
                                      {}, "random"))
            cases.append(op.make_case(d.replace(RoiSizes=(1, d.num_rois, 4), BatchIndicesSizes=(1, d.num_rois)), {},
                                      "roi-border"))
    return cases


# ------------------------------------------------------------------------------------------------
# Real sizes: the census's RoiAlign layers (torchvision's MultiScaleRoIAlign) and detection sizes
# ------------------------------------------------------------------------------------------------

def census_layers() -> list[dict]:
    """The census's RoiAlign layers (data/census/distinct.json): input shape, RoI count, output
    size, spatial scale, sampling ratio, aligned, and the models that use them."""
    data = json.loads((Path(__file__).resolve().parents[2] / "data" / "census" / "distinct.json").read_text())
    configs = {c["id"]: c for c in data["configs"] if c["kind"] == "roi_align"}
    out = []
    for layer in data["layers"]:
        cfg = configs.get(layer["config"])
        if cfg is None:
            continue
        a = cfg["attrs"]
        out.append({"layer": layer["id"], "input": tuple(layer["input"][0]), "rois": int(layer["input"][1][0]),
                    "output": tuple(a["output_size"]), "spatial_scale": float(a["spatial_scale"]),
                    "sampling_ratio": int(a["sampling_ratio"]), "aligned": bool(a["aligned"]),
                    "models": sorted(layer.get("models", []))})
    return out
