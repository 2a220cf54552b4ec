#!/usr/bin/env python3
"""Census of the pooling, RoI and space/depth layers that real networks run, at their real sizes.

For every model of the lists below (random weights, the model's default input size, batch 1, CPU,
torch.no_grad(); models over CPU_GFLOPS_LIMIT on the meta device, shapes only), record each layer
instance: the operation, its attributes, its input and output shapes. Then, for each distinct layer (operation + attributes + input shapes), export a one-layer
module with `torch.onnx.export` (the dynamo exporter, torch's default, and the TorchScript one) and
record the ONNX nodes. Writes, under --out (default: the package's data folder):

  layers.jsonl.gz   one JSON object per layer instance
  distinct.json     the census's versions and models, every distinct layer and configuration with
                    its ONNX nodes and the models that use it

Requirements (optional, never needed by the bench): scripts/census/requirements.txt, in a venv of
its own. See docs/census.md.

    python scripts/census/census.py                 # everything (collect, export, write)
    python scripts/census/census.py --only 'resnet' # a subset, into build/census-only (no data)
    python scripts/census/census.py --stage write   # rewrite the data files from --work
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import gzip
import importlib.metadata
import io
import json
import math
import os
import platform
import re
import signal
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_VERBOSE", "False")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import archs  # noqa: E402

FORMAT = 1
# Models above this many FLOPs (counted by torch's FlopCounterMode on the meta device) are not run on
# the CPU: their shapes come from the meta-device forward pass alone.
CPU_GFLOPS_LIMIT = 60.0
CPU_SECONDS_LIMIT = 300
# Export a layer at its real input shape up to this many elements, else at a stand-in shape with the
# same spatial sizes (batch and channels reduced); the attributes are always the real ones.
EXPORT_MAX_ELEMENTS = 1 << 25

warnings.filterwarnings("ignore")

# --------------------------------------------------------------------------------------------------
# What is recorded: functional calls (seen by a torch function mode) and modules (seen by hooks)

_MAX = ["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
_MAX_D = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False, "return_indices": False}
_AVG = ["input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
        "divisor_override"]
_AVG_D = {"stride": None, "padding": 0, "ceil_mode": False, "count_include_pad": True,
          "divisor_override": None}
_ADA = ["input", "output_size", "return_indices"]
_ADA_D = {"return_indices": False}
_LP = ["input", "norm_type", "kernel_size", "stride", "ceil_mode"]
_LP_D = {"stride": None, "ceil_mode": False}


@dataclasses.dataclass
class Target:
    name: str  # how the code calls it
    kind: str  # the layer kind in the census
    params: list
    defaults: dict
    rank: int = 0  # spatial rank (pooling)


def _targets() -> dict:
    t = {}

    def add(func, name, kind, params, defaults, rank=0):
        if func is not None:
            t[func] = Target(name, kind, params, defaults, rank)

    for n in (1, 2, 3):
        add(getattr(F, f"max_pool{n}d"), f"F.max_pool{n}d", f"max_pool{n}d", _MAX, _MAX_D, n)
        add(getattr(F, f"max_pool{n}d_with_indices"), f"F.max_pool{n}d_with_indices",
            f"max_pool{n}d", _MAX, dict(_MAX_D, return_indices=True), n)
        add(getattr(torch, f"max_pool{n}d"), f"torch.max_pool{n}d", f"max_pool{n}d", _MAX, _MAX_D, n)
        add(getattr(F, f"avg_pool{n}d"), f"F.avg_pool{n}d", f"avg_pool{n}d", _AVG, _AVG_D, n)
        add(getattr(F, f"adaptive_avg_pool{n}d"), f"F.adaptive_avg_pool{n}d",
            f"adaptive_avg_pool{n}d", _ADA[:2], {}, n)
        add(getattr(F, f"adaptive_max_pool{n}d"), f"F.adaptive_max_pool{n}d",
            f"adaptive_max_pool{n}d", _ADA, _ADA_D, n)
        add(getattr(F, f"adaptive_max_pool{n}d_with_indices"),
            f"F.adaptive_max_pool{n}d_with_indices", f"adaptive_max_pool{n}d", _ADA,
            dict(_ADA_D, return_indices=True), n)
        add(getattr(F, f"lp_pool{n}d", None), f"F.lp_pool{n}d", f"lp_pool{n}d", _LP, _LP_D, n)
    add(F.pixel_shuffle, "F.pixel_shuffle", "pixel_shuffle", ["input", "upscale_factor"], {})
    add(F.pixel_unshuffle, "F.pixel_unshuffle", "pixel_unshuffle", ["input", "downscale_factor"], {})
    add(torch.Tensor.mean, "Tensor.mean", "mean", ["input", "dim", "keepdim"],
        {"dim": None, "keepdim": False})
    add(torch.mean, "torch.mean", "mean", ["input", "dim", "keepdim"], {"dim": None, "keepdim": False})
    add(torch.Tensor.amax, "Tensor.amax", "amax", ["input", "dim", "keepdim"],
        {"dim": (), "keepdim": False})
    add(torch.amax, "torch.amax", "amax", ["input", "dim", "keepdim"], {"dim": (), "keepdim": False})
    tv = torch.ops.torchvision
    add(tv.roi_align, "torchvision.ops.roi_align", "roi_align",
        ["input", "rois", "spatial_scale", "pooled_height", "pooled_width", "sampling_ratio",
         "aligned"], {"sampling_ratio": -1, "aligned": False}, 2)
    add(tv.roi_pool, "torchvision.ops.roi_pool", "roi_pool",
        ["input", "rois", "spatial_scale", "pooled_height", "pooled_width"], {}, 2)
    return t


TARGETS = _targets()

# Modules whose forward is one of the calls above: the row is the module (its path and type), the
# attributes and shapes are those of the call it makes.
MERGE_MODULES = {
    **{getattr(nn, f"{p}{n}d"): f"nn.{p}{n}d" for n in (1, 2, 3)
       for p in ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool", "LPPool")
       if hasattr(nn, f"{p}{n}d")},
    nn.PixelShuffle: "nn.PixelShuffle",
    nn.PixelUnshuffle: "nn.PixelUnshuffle",
    torchvision.ops.RoIAlign: "torchvision.ops.RoIAlign",
    torchvision.ops.RoIPool: "torchvision.ops.RoIPool",
}


def _own_modules() -> dict:
    """Modules that are a layer of their own (not one call): attributes read off the module, shapes
    at the module's boundary. type -> (op name, kind, attrs(module) -> dict)."""
    own = {
        archs.SpaceToDepth: ("architecture.SpaceToDepth", "space_to_depth",
                             lambda m: m.census_attrs()),
    }
    try:
        from timm.layers.pool2d_same import AvgPool2dSame, MaxPool2dSame
    except ImportError:
        return own
    own[MaxPool2dSame] = ("timm.layers.MaxPool2dSame", "max_pool2d_same", lambda m: {
        "kernel_size": _tup(m.kernel_size, 2), "stride": _tup(m.stride, 2),
        "dilation": _tup(m.dilation, 2), "ceil_mode": bool(m.ceil_mode)})
    own[AvgPool2dSame] = ("timm.layers.AvgPool2dSame", "avg_pool2d_same", lambda m: {
        "kernel_size": _tup(m.kernel_size, 2), "stride": _tup(m.stride, 2),
        "ceil_mode": bool(m.ceil_mode), "count_include_pad": bool(m.count_include_pad)})
    try:  # view/permute/view in DCR order (TResNet's stem): ONNX SpaceToDepth / DepthToSpace DCR
        from timm.layers.space_to_depth import DepthToSpace, SpaceToDepth
    except ImportError:
        return own
    own[SpaceToDepth] = ("timm.layers.SpaceToDepth", "space_to_depth",
                         lambda m: {"blocksize": int(m.bs), "mode": "DCR"})
    own[DepthToSpace] = ("timm.layers.DepthToSpace", "depth_to_space",
                         lambda m: {"blocksize": int(m.bs), "mode": "DCR"})
    return own


OWN_MODULES = _own_modules()


def _tup(v, n):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        v = [int(x) if x is not None else None for x in v]
        return v * n if len(v) == 1 else v
    return [int(v)] * n


def _shape(x) -> list:
    return [int(s) for s in x.shape]


def _bind(tg: Target, args, kwargs) -> dict:
    b = dict(tg.defaults)
    for name, v in zip(tg.params, args):
        b[name] = v
    for k, v in kwargs.items():
        b["dim" if k == "axis" else k] = v
    return b


def _attrs(tg: Target, b: dict, x) -> dict | None:
    """Normalised attributes of one call (None: a call that is not a census layer, e.g. a mean
    over other axes than the spatial ones)."""
    k, n = tg.kind, tg.rank
    if k.startswith("max_pool"):
        ks = _tup(b["kernel_size"], n)
        st = _tup(b["stride"], n) if b["stride"] not in (None, [], ()) else ks
        return {"kernel_size": ks, "stride": st, "padding": _tup(b["padding"], n),
                "dilation": _tup(b["dilation"], n), "ceil_mode": bool(b["ceil_mode"]),
                "return_indices": bool(b["return_indices"])}
    if k.startswith("avg_pool"):
        ks = _tup(b["kernel_size"], n)
        st = _tup(b["stride"], n) if b["stride"] not in (None, [], ()) else ks
        return {"kernel_size": ks, "stride": st, "padding": _tup(b["padding"], n),
                "ceil_mode": bool(b["ceil_mode"]), "count_include_pad": bool(b["count_include_pad"]),
                "divisor_override": b.get("divisor_override")}
    if k.startswith("adaptive"):
        out = _tup(b["output_size"], n)
        spatial = _shape(x)[-n:]
        out = [spatial[i] if o is None else o for i, o in enumerate(out)]
        a = {"output_size": out}
        if k.startswith("adaptive_max"):
            a["return_indices"] = bool(b.get("return_indices", False))
        return a
    if k.startswith("lp_pool"):
        ks = _tup(b["kernel_size"], n)
        st = _tup(b["stride"], n) if b["stride"] not in (None, [], ()) else ks
        return {"norm_type": float(b["norm_type"]), "kernel_size": ks, "stride": st,
                "ceil_mode": bool(b["ceil_mode"])}
    if k == "pixel_shuffle":
        return {"upscale_factor": int(b["upscale_factor"])}
    if k == "pixel_unshuffle":
        return {"downscale_factor": int(b["downscale_factor"])}
    if k == "roi_align":
        return {"output_size": [int(b["pooled_height"]), int(b["pooled_width"])],
                "spatial_scale": float(b["spatial_scale"]),
                "sampling_ratio": int(b["sampling_ratio"]), "aligned": bool(b["aligned"])}
    if k == "roi_pool":
        return {"output_size": [int(b["pooled_height"]), int(b["pooled_width"])],
                "spatial_scale": float(b["spatial_scale"])}
    if k in ("mean", "amax"):
        nd = x.dim()
        d = b.get("dim")
        if nd not in (4, 5) or d is None or d == () or d == []:
            return None
        dims = sorted({int(i) % nd for i in (d if isinstance(d, (list, tuple)) else [d])})
        if dims == list(range(2, nd)):
            layout = "NCHW" if nd == 4 else "NCDHW"
        elif dims == list(range(1, nd - 1)):
            layout = "NHWC" if nd == 4 else "NDHWC"
        else:
            return None
        return {"dim": dims, "keepdim": bool(b.get("keepdim", False)), "layout": layout}
    raise AssertionError(k)


class Recorder(TorchFunctionMode):
    """Records census layers during one forward pass.

    A torch function mode sees every call of the functions in TARGETS (F.max_pool2d, x.mean, the
    torchvision RoI ops...), however the model spells it; global module hooks keep the stack of
    modules being run, so a call knows its layer path and whether it is the forward of a pooling
    module (then the row is that module)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.names = {id(m): n for n, m in model.named_modules()}
        self.stack: list = []  # (module, path)
        self.rows: list = []
        self.pending: dict = {}
        self.seen: Counter = Counter()
        self.handles: list = []

    def _path(self, m) -> str:
        n = self.names.get(id(m))
        if n is None:
            parent = self.stack[-1][1] if self.stack else ""
            n = f"{parent}.<{type(m).__name__}>" if parent else f"<{type(m).__name__}>"
        return n or "<model>"

    def _layer(self, path: str) -> str:
        self.seen[path] += 1
        return path if self.seen[path] == 1 else f"{path}#{self.seen[path]}"

    def _pre(self, m, args):
        path = self._path(m)
        self.stack.append((m, path))
        own = OWN_MODULES.get(type(m))
        if own is not None:
            self.pending[id(m)] = (path, [_shape(a) for a in args if torch.is_tensor(a)])

    def _post(self, m, args, out):
        if self.stack and self.stack[-1][0] is m:
            self.stack.pop()
        own = OWN_MODULES.get(type(m))
        if own is not None and id(m) in self.pending:
            path, inputs = self.pending.pop(id(m))
            if torch.is_tensor(out):
                op, kind, attrs = own
                self.rows.append({"layer": self._layer(path), "op": op, "kind": kind,
                                  "mechanism": "module", "module_type": type(m).__name__,
                                  "attrs": attrs(m), "input": inputs, "output": _shape(out)})

    def __enter__(self):
        from torch.nn.modules import module as M
        self.handles = [M.register_module_forward_pre_hook(self._pre),
                        M.register_module_forward_hook(self._post, always_call=True)]
        return super().__enter__()

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        tg = TARGETS.get(func)
        if tg is None or not args or not torch.is_tensor(args[0]):
            return out
        try:
            self._record(tg, args, kwargs, out)
        except Exception as e:  # a census bug must not hide the model's own result
            self.rows.append({"layer": "<census-error>", "op": tg.name, "kind": tg.kind,
                              "error": f"{type(e).__name__}: {e}"})
        return out

    def _record(self, tg, args, kwargs, out):
        x = args[0]
        b = _bind(tg, args, kwargs)
        attrs = _attrs(tg, b, x)
        if attrs is None:
            return
        top = self.stack[-1] if self.stack else None
        if top is not None and type(top[0]) in OWN_MODULES:
            return  # the module is the layer; recorded by its hook
        y = out[0] if isinstance(out, (tuple, list)) else out
        inputs = [_shape(x)]
        if tg.kind in ("roi_align", "roi_pool"):
            inputs.append(_shape(b["rois"]))
        if top is not None and type(top[0]) in MERGE_MODULES:
            row = {"layer": self._layer(top[1]), "op": MERGE_MODULES[type(top[0])],
                   "mechanism": "module", "module_type": type(top[0]).__name__}
        else:
            path = top[1] if top is not None else "<model>"
            row = {"layer": self._layer(path), "op": tg.name, "mechanism": "function",
                   "module_type": type(top[0]).__name__ if top is not None else None}
        row.update({"kind": tg.kind, "attrs": attrs, "input": inputs, "output": _shape(y)})
        self.rows.append(row)


# --------------------------------------------------------------------------------------------------
# The models


@dataclasses.dataclass
class Spec:
    source: str  # torchvision | timm | ultralytics | spandrel | architecture
    task: str
    model: str
    build: Callable[[], nn.Module]  # builds on the current default device
    inputs: Callable[[str], tuple]  # device -> positional inputs
    call: Callable | None = None  # (model, inputs) -> output; default model(*inputs)
    data_dependent: bool = False  # shapes depend on values: run on the CPU only
    ref: str | None = None
    note: str | None = None


def _randn(*shape):
    return lambda dev: (torch.randn(*shape, device=dev),)


def torchvision_specs() -> list:
    from torchvision import models as M
    specs = []
    for name in M.list_models(module=M):
        w = M.get_model_weights(name).DEFAULT
        size = w.transforms().crop_size[0]
        kw = {"image_size": size} if name.startswith("vit_") else {}
        specs.append(Spec("torchvision", "classification", name,
                          (lambda n=name, kw=kw: M.get_model(n, weights=None, **kw)),
                          _randn(1, 3, size, size),
                          note=f"input from {w} crop size"))
    for name in M.list_models(module=M.segmentation):
        specs.append(Spec("torchvision", "segmentation", name,
                          (lambda n=name: M.get_model(n, weights=None, weights_backbone=None)),
                          _randn(1, 3, 520, 520), call=lambda m, a: m(*a)["out"],
                          note="520x520, the weights' resize size"))
    for name in M.list_models(module=M.video):
        w = M.get_model_weights(name).DEFAULT
        size = w.transforms().crop_size[0]
        mt = re.search(r"clip_len=(\d+)", w.meta.get("_docs", ""))
        frames = int(mt.group(1)) if mt else 16
        specs.append(Spec("torchvision", "video", name,
                          (lambda n=name: M.get_model(n, weights=None)),
                          _randn(1, 3, frames, size, size),
                          note=f"{frames} frames of {size}x{size} (the weights' clip_len and crop)"))
    for name in M.list_models(module=M.detection):
        kw = {"weights": None, "weights_backbone": None}
        if "rcnn" in name:
            # Random weights score every box below the default threshold 0.05; at 0 the mask and
            # keypoint heads get the per-image cap of 100 detections, as on a busy image.
            kw["box_score_thresh"] = 0.0
        specs.append(Spec("torchvision", "detection", name,
                          (lambda n=name, kw=kw: M.get_model(n, **kw)),
                          lambda dev: ([torch.rand(3, 480, 640, device=dev)],),
                          data_dependent=True,
                          note="one 640x480 image (the model's transform resizes it)"
                          + ("; box_score_thresh=0" if "rcnn" in name else "")))
    for name in M.list_models(module=M.optical_flow):
        specs.append(Spec("torchvision", "optical-flow", name,
                          (lambda n=name: M.get_model(n, weights=None)),
                          lambda dev: (torch.rand(1, 3, 520, 960, device=dev) * 2 - 1,
                                       torch.rand(1, 3, 520, 960, device=dev) * 2 - 1),
                          note="two 520x960 frames, as torchvision's optical-flow tutorial"))
    return specs


# One model per timm family: the models of the earlier census (191 timm models) and one model for
# each timm module it did not cover.
TIMM_MODELS = """
bat_resnext26ts botnet26t_256 botnet50ts_256 caformer_b36 coatnet_0_224 coatnext_nano_rw_224
convformer_b36 convmixer_768_32 convnext_atto convnextv2_atto cpubone_b0_bfrobust cs3darknet_focus_l
cs3edgenet_x cs3se_edgenet_x cs3sedarknet_l csatv2 cspdarknet53 cspresnet50 cspresnet50d
cspresnet50w cspresnext50 darknet17 darknetaa53 davit_base densenet121 densenet264d densenetblur121d
dla102x dla34 dla46x_c dla60x dm_nfnet_f0 dpn48b dpn68 dpn68b eca_botnext26ts_256 ecaresnet101d
ecaresnet200d ecaresnet269d ecaresnet26t ecaresnet50d ecaresnet50t ecaresnetlight ecaresnext26t_32x4d
ecaresnext50t_32x4d edgenext_base efficientformer_l1 efficientformerv2_l efficientnet_b0
efficientnetv2_l efficientvit_b0 ese_vovnet19b_dw fasternet_l fastvit_ma36 fbnetc_100 fbnetv3_b
focalnet_base_lrf gc_efficientnetv2_rw_t gcresnet33ts gcresnet50t gcresnext26ts gcresnext50ts
gcvit_base gernet_l ghostnet_050 ghostnetv2_100 halo2botnet50ts_256 halonet26t halonet50ts halonet_h1
haloregnetz_b hardcorenas_a hgnet_base hgnetv2_b0 hieradet_small hrnet_w18 inception_next_atto
lambda_resnet26rpt_256 lamhalobotnet50ts_256 lcnet_035 lcnetv2_base legacy_senet154 lowformer_b0
maxvit_base_tf_224 maxxvit_rmlp_nano_rw_256 maxxvitv2_nano_rw_256 mixnet_l mnasnet_050
mobilenet_edgetpu_100 mobilenetv1_100 mobileone_s0 mobilevit_s mobilevitv2_050 mvitv2_base
nasnetalarge nest_base nextvit_base nf_ecaresnet26 nfnet_f0 pnasnet5large poolformer_m36
poolformerv2_m36 rdnet_base regnetv_040 regnetx_002 regnety_002 regnetz_005 repghostnet_050 repvgg_a0
res2net101d res2net50_14w_8s res2net50d res2next50 resnest101e resnest14d resnest200e resnest269e
resnest26d resnest50d resnet101c resnet101d resnet101s resnet10t resnet14t resnet152c resnet152d
resnet152s resnet18 resnet18d resnet200d resnet26d resnet26t resnet32ts resnet33ts resnet34d
resnet50c resnet50d resnet50s resnet50t resnet50x4_clip resnet51q resnet61q resnetaa101d resnetaa34d
resnetaa50 resnetaa50d resnetblur101d resnetblur18 resnetblur50d resnetrs50 resnetv2_18 resnext26ts
resnext50_32x4d resnext50d_32x4d rexnet_100 rexnetr_100 sebotnet33ts_256 sedarknet21 sehalonet33ts
selecsls42 selecsls42b selecsls60b semnasnet_050 senet154 seresnet152d seresnet18 seresnet200d
seresnet269d seresnet33ts seresnet50t seresnetaa50d seresnext101d_32x8d seresnext26d_32x4d
seresnext26t_32x4d seresnext26ts seresnext50_32x4d seresnextaa101d_32x8d seresnextaa201d_32x8d
shvit_s1 skresnet18 skresnet50d skresnext50_32x4d spnasnet_100 starnet_s1 test_byobnet
tf_efficientnet_b0 tiny_vit_5m_224 tinynet_a tresnet_l vgg11 visformer_small
beit_base_patch16_224 cait_s24_224 coat_lite_small convit_small crossvit_15_240 cspnext_s
deepseek_vit_412m deit_base_patch16_224 efficientvim_m1 efficientvit_m0 eva02_base_patch14_224
gemma4_vit_167m hiera_base_224 iformer_m inception_resnet_v2 inception_v3 inception_v4 levit_128
mambaout_base mixer_b16_224 mobilenetv5_300m naflexvit_base_patch16_gap pit_s_224 pvt_v2_b2
qwen3_vit_88m repvit_m1_0 sequencer2d_s swiftformer_s swin_base_patch4_window7_224
swinv2_base_window8_256 swinv2_cr_base_224 tnt_s_patch16_224 twins_pcpvt_base vit_base_patch16_224
vit_base_r50_s16_224 vit_relpos_base_patch16_224 samvit_base_patch16 vitamin_base_224 volo_d1_224
legacy_xception xception65 xcit_small_12_p16_224
""".split()


def timm_specs() -> list:
    import timm
    specs = []
    for name in TIMM_MODELS:
        cfg = timm.models.get_pretrained_cfg(name) if hasattr(timm.models, "get_pretrained_cfg") else None
        size = tuple(getattr(cfg, "input_size", None) or (3, 224, 224)) if cfg else (3, 224, 224)
        specs.append(Spec("timm", "classification", name,
                          (lambda n=name: timm.create_model(n, pretrained=False)),
                          _randn(1, *size), note="input: the model's pretrained_cfg input_size"))
    return specs


ULTRALYTICS_MODELS = [
    # (name, yaml, task class, image size)
    ("yolov3-tiny", "yolov3-tiny.yaml", "detect", 640),
    ("yolov3-spp", "yolov3-spp.yaml", "detect", 640),
    ("yolov5n", "yolov5n.yaml", "detect", 640),
    ("yolov6n", "yolov6n.yaml", "detect", 640),
    ("yolov8n", "yolov8n.yaml", "detect", 640),
    ("yolov8x", "yolov8x.yaml", "detect", 640),
    ("yolov8n-seg", "yolov8n-seg.yaml", "segment", 640),
    ("yolov8n-pose", "yolov8n-pose.yaml", "pose", 640),
    ("yolov8n-cls", "yolov8n-cls.yaml", "classify", 224),
    ("yolov9c", "yolov9c.yaml", "detect", 640),
    ("yolov10n", "yolov10n.yaml", "detect", 640),
    ("yolo11n", "yolo11n.yaml", "detect", 640),
    ("yolo11n-cls", "yolo11n-cls.yaml", "classify", 224),
    ("yolo12n", "yolo12n.yaml", "detect", 640),
    ("yolo26n", "yolo26n.yaml", "detect", 640),
    ("rtdetr-l", "rtdetr-l.yaml", "rtdetr", 640),
]


def ultralytics_specs() -> list:
    def build(yaml, task):
        from ultralytics.nn import tasks as T
        cls = {"detect": T.DetectionModel, "segment": T.SegmentationModel, "pose": T.PoseModel,
               "classify": T.ClassificationModel, "rtdetr": T.RTDETRDetectionModel}[task]
        return cls(yaml, verbose=False)
    return [Spec("ultralytics", "yolo", name, (lambda y=yaml, t=task: build(y, t)),
                 _randn(1, 3, size, size), note=f"{yaml} at {size}x{size}, the default imgsz")
            for name, yaml, task, size in ULTRALYTICS_MODELS]


def spandrel_specs() -> list:
    """Super-resolution and restoration architectures as spandrel (the architecture library of
    chaiNNer and ComfyUI) builds them for the named public checkpoints; one 512x512 tile, the
    default tile of ComfyUI's model upscaler."""
    A = "spandrel.architectures."

    def arch(mod, cls, **kw):
        def build():
            import importlib
            return getattr(importlib.import_module(A + mod), cls)(**kw)
        return build

    swinir = dict(upscale=4, in_chans=3, img_size=64, window_size=8, img_range=1.0,
                  depths=[6] * 6, embed_dim=180, num_heads=[6] * 6, mlp_ratio=2,
                  upsampler="pixelshuffle", resi_connection="1conv")
    models = [
        ("RealESRGAN_x4plus", arch("ESRGAN.__arch.RRDB", "RRDBNet", in_nc=3, out_nc=3, scale=4)),
        ("RealESRGAN_x2plus", arch("ESRGAN.__arch.RRDB", "RRDBNet", in_nc=12, out_nc=3, scale=4,
                                   shuffle_factor=2)),
        ("realesr-general-x4v3", arch("Compact.__arch.SRVGG", "SRVGGNetCompact", num_feat=64,
                                      num_conv=32, upscale=4, act_type="prelu")),
        ("realesr-animevideov3", arch("Compact.__arch.SRVGG", "SRVGGNetCompact", num_feat=64,
                                      num_conv=16, upscale=4, act_type="prelu")),
        ("SwinIR-M_x4", arch("SwinIR.__arch.SwinIR", "SwinIR", **swinir)),
        ("RCAN_BIX4", arch("RCAN.__arch.rcan_arch", "RCAN", scale=4)),
        ("SPAN_x4", arch("SPAN.__arch.span", "SPAN", num_in_ch=3, num_out_ch=3, upscale=4)),
        ("OmniSR_x4", arch("OmniSR.__arch.OmniSR", "OmniSR", up_scale=4)),
        ("RealCUGAN_up2x", arch("RealCUGAN.__arch.upcunet_v3", "UpCunet2x")),
        ("NAFNet-GoPro-width64", arch("NAFNet.__arch.NAFNet_arch", "NAFNet", width=64,
                                      middle_blk_num=1, enc_blk_nums=[1, 1, 1, 28],
                                      dec_blk_nums=[1, 1, 1, 1])),
    ]
    return [Spec("spandrel", "super-resolution", name, build, _randn(1, 3, 512, 512),
                 note="one 512x512 tile") for name, build in models]


def architecture_specs() -> list:
    return [
        Spec("architecture", "super-resolution", "espcn_x3", lambda: archs.ESPCN(3),
             _randn(1, 1, 360, 640), ref="Shi et al., CVPR 2016 (arXiv:1609.05158)",
             note="x3 from 640x360 to 1920x1080, the paper's video setting"),
        Spec("architecture", "super-resolution", "pytorch_tutorial_superres_x3",
             lambda: archs.SuperResolutionNet(3), _randn(1, 1, 224, 224),
             ref="pytorch/tutorials advanced_source/super_resolution_with_onnxruntime.py"),
        Spec("architecture", "yolo", "yolov2", lambda: archs.YOLOv2(), _randn(1, 3, 608, 608),
             ref="Redmon and Farhadi, CVPR 2017 (arXiv:1612.08242); Darknet cfg/yolov2.cfg",
             note="608x608, yolov2.cfg; reorg written as SpaceToDepth (DCR)"),
        Spec("architecture", "detection", "fast_rcnn_vgg16", lambda: archs.FastRCNNVGG16(),
             lambda dev: (torch.randn(1, 3, 600, 800, device=dev),
                          archs.fast_rcnn_rois(300, 600, 800, dev)),
             ref="Girshick, ICCV 2015 (arXiv:1504.08083); rbgirshick/py-faster-rcnn VGG16 test.prototxt",
             note="600x800 image (test scale 600), 300 RoIs"),
    ]


FAMILIES = {
    "torchvision": torchvision_specs,
    "timm": timm_specs,
    "ultralytics": ultralytics_specs,
    "spandrel": spandrel_specs,
    "architecture": architecture_specs,
}


INPUTS = {
    "torchvision/classification": "1x3xSxS, S the crop size of the model's DEFAULT weights "
                                  "(ViTs built with image_size=S)",
    "torchvision/segmentation": "1x3x520x520, the DEFAULT weights' resize size",
    "torchvision/video": "1x3xTxSxS, T the clip_len the DEFAULT weights were evaluated with, "
                         "S their crop size",
    "torchvision/detection": "one 3x480x640 image, which the model's transform resizes (R-CNNs, "
                             "RetinaNet, FCOS to 800x1066, padded to 800x1088); R-CNNs built "
                             "with box_score_thresh=0 so that random weights still reach the "
                             "per-image cap of 100 detections",
    "torchvision/optical-flow": "two 1x3x520x960 frames, the size of torchvision's optical-flow "
                                "example",
    "timm/classification": "1x3xHxW, the input_size of the model's pretrained_cfg",
    "ultralytics/yolo": "1x3x640x640 (classifiers 1x3x224x224), the default imgsz, models built "
                        "from the package's yaml files",
    "spandrel/super-resolution": "one 1x3x512x512 tile (the default tile of ComfyUI's model "
                                 "upscaler), models built with the hyperparameters of the named "
                                 "public checkpoints",
    "architecture": "per model, see its note and ref",
}


def source_version(source: str) -> str | None:
    dist = {"torchvision": "torchvision", "timm": "timm", "ultralytics": "ultralytics-opencv-headless",
            "spandrel": "spandrel"}.get(source)
    if dist is None:
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------------------------------
# Running one model


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise Timeout(f"over {seconds} s")
    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def quiet():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        yield out


def _forward(spec: Spec, model, inputs, flops: bool):
    rec = Recorder(model)
    fc = FlopCounterMode(display=False) if flops else contextlib.nullcontext()
    with torch.no_grad(), fc, rec, quiet():
        if spec.call is not None:
            spec.call(model, inputs)
        else:
            model(*inputs)
    return rec.rows, (fc.get_total_flops() if flops else None)


def _build_meta(spec: Spec) -> nn.Module:
    """The model on the meta device: built there, or, where its constructor needs real values
    (e.g. `torch.linspace(...).item()`), built on the CPU and moved."""
    try:
        with torch.device("meta"), quiet():
            torch.manual_seed(0)
            return spec.build().eval()
    except Exception:
        with quiet():
            torch.manual_seed(0)
            return spec.build().eval().to("meta")


def run_spec(spec: Spec) -> tuple[dict, list]:
    """Returns (the model's record, its rows)."""
    info = {"source": spec.source, "version": source_version(spec.source), "task": spec.task,
            "model": spec.model}
    if spec.ref:
        info["ref"] = spec.ref
    if spec.note:
        info["note"] = spec.note
    t0 = time.time()
    meta_rows, gflops, meta_error = None, None, None
    if not spec.data_dependent:
        try:
            with time_limit(CPU_SECONDS_LIMIT):
                model = _build_meta(spec)
                inputs = spec.inputs("meta")
                meta_rows, flops = _forward(spec, model, inputs, flops=True)
            gflops = flops / 1e9
            info["input"] = [_shape(a) if torch.is_tensor(a) else None for a in inputs]
        except Exception as e:
            meta_error = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        finally:
            model = inputs = None
    if gflops is not None:
        info["gflops"] = round(gflops, 3)
    if gflops is not None and gflops > CPU_GFLOPS_LIMIT:
        info.update(status="ok", run="meta", seconds=round(time.time() - t0, 2))
        return info, meta_rows
    try:
        with time_limit(CPU_SECONDS_LIMIT):
            with quiet():
                torch.manual_seed(0)
                model = spec.build().eval()
            torch.manual_seed(0)
            inputs = spec.inputs("cpu")
            rows, _ = _forward(spec, model, inputs, flops=False)
        info["input"] = [_input_shape(a) for a in inputs]
        info.update(status="ok", run="cpu")
    except Exception as e:
        err = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        if meta_rows is not None:
            info.update(status="ok", run="meta", cpu_error=err)
            rows = meta_rows
        else:
            info.update(status="failed", error=err)
            if meta_error:
                info["meta_error"] = meta_error
            rows = []
    finally:
        model = inputs = None
    info["seconds"] = round(time.time() - t0, 2)
    return info, rows


def _input_shape(a):
    if torch.is_tensor(a):
        return _shape(a)
    if isinstance(a, (list, tuple)) and a and torch.is_tensor(a[0]):
        return [_shape(t) for t in a]
    return None


# --------------------------------------------------------------------------------------------------
# Exporting one distinct layer


class OneLayer(nn.Module):
    def __init__(self, kind: str, attrs: dict):
        super().__init__()
        self.kind, self.a = kind, attrs
        self.inner = None
        if kind == "max_pool2d_same":
            from timm.layers.pool2d_same import MaxPool2dSame
            self.inner = MaxPool2dSame(attrs["kernel_size"], attrs["stride"], 0,
                                       attrs["dilation"], attrs["ceil_mode"])
        elif kind == "avg_pool2d_same":
            from timm.layers.pool2d_same import AvgPool2dSame
            self.inner = AvgPool2dSame(attrs["kernel_size"], attrs["stride"], 0,
                                       attrs["ceil_mode"], attrs["count_include_pad"])
        elif kind == "space_to_depth":
            assert attrs["mode"] == "DCR"
            self.inner = archs.SpaceToDepth(attrs["blocksize"])
        elif kind == "depth_to_space":
            from timm.layers.space_to_depth import DepthToSpace
            assert attrs["mode"] == "DCR"
            self.inner = DepthToSpace(attrs["blocksize"])

    def forward(self, x, rois=None):
        k, a = self.kind, self.a
        if self.inner is not None:
            return self.inner(x)
        if k.startswith("max_pool"):
            f = getattr(F, k)
            return f(x, a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                     a["ceil_mode"], a["return_indices"])
        if k.startswith("avg_pool"):
            f = getattr(F, k)
            args = [x, a["kernel_size"], a["stride"], a["padding"], a["ceil_mode"],
                    a["count_include_pad"]]
            if k != "avg_pool1d":
                args.append(a["divisor_override"])
            return f(*args)
        if k.startswith("adaptive_max"):
            return getattr(F, k)(x, a["output_size"], a["return_indices"])
        if k.startswith("adaptive_avg"):
            return getattr(F, k)(x, a["output_size"])
        if k.startswith("lp_pool"):
            return getattr(F, k)(x, a["norm_type"], a["kernel_size"], a["stride"], a["ceil_mode"])
        if k == "pixel_shuffle":
            return F.pixel_shuffle(x, a["upscale_factor"])
        if k == "pixel_unshuffle":
            return F.pixel_unshuffle(x, a["downscale_factor"])
        if k == "mean":
            return x.mean(a["dim"], keepdim=a["keepdim"])
        if k == "amax":
            return x.amax(a["dim"], keepdim=a["keepdim"])
        if k == "roi_align":
            return torchvision.ops.roi_align(x, rois, a["output_size"], a["spatial_scale"],
                                             a["sampling_ratio"], a["aligned"])
        if k == "roi_pool":
            return torchvision.ops.roi_pool(x, rois, a["output_size"], a["spatial_scale"])
        raise AssertionError(k)


POOL_KINDS = ("max_pool", "avg_pool", "adaptive_", "lp_pool")
STANDIN_RULE = (
    "dynamo and TorchScript export each layer at a stand-in shape: pooling, mean and RoI layers at "
    "batch 1, 1 channel and 16 RoIs with the real spatial sizes (batch, channels and RoI count do "
    "not appear in their nodes); space/depth layers at their real shape (PixelShuffle over 2^25 "
    "elements at 64x64). The TorchScript exporter also exports each layer at its real shape (up to "
    "2^25 elements), which is the torchscript node recorded, and must match the stand-in's nodes.")


def standin(kind: str, attrs: dict, inputs: list) -> list:
    """The shapes a layer is exported at. Batch, channels and the number of RoIs do not appear in
    the nodes of pooling, mean and RoI layers (checked for every layer against a TorchScript export
    at the real shape): those export at batch 1, 1 channel, 16 RoIs, with the real spatial sizes.
    Space/depth layers export at their real shape (their Reshape constants name the channels),
    but PixelShuffle over 2^25 elements at 64x64 (DepthToSpace has no shape in it)."""
    x = list(inputs[0])
    if kind.startswith(POOL_KINDS) or kind.endswith("_same"):
        return [[1, 1] + x[2:]]
    if kind in ("mean", "amax"):
        return [[1, 1] + x[2:]] if attrs["layout"].startswith("NC") else [[1] + x[1:-1] + [1]]
    if kind in ("roi_align", "roi_pool"):
        return [[1, 1] + x[2:], [16, 5]]
    if kind == "pixel_shuffle" and math.prod(x) > EXPORT_MAX_ELEMENTS:
        return [[1, x[1], 64, 64]]
    return [[1] + x[1:]]


def export_inputs(kind: str, attrs: dict, shapes: list) -> tuple:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shapes[0], generator=g)
    if kind in ("roi_align", "roi_pool"):
        k = shapes[1][0]
        h, w = shapes[0][-2] / attrs["spatial_scale"], shapes[0][-1] / attrs["spatial_scale"]
        x1 = torch.rand(k, generator=g) * w * 0.5
        y1 = torch.rand(k, generator=g) * h * 0.5
        rois = torch.stack([torch.zeros(k), x1, y1, x1 + w * 0.4, y1 + h * 0.4], 1)
        return (x, rois)
    return (x,)


def _jsonable(v):
    import onnx
    if isinstance(v, onnx.TensorProto):
        from onnx import numpy_helper
        a = numpy_helper.to_array(v)
        return a.tolist() if a.size <= 64 else {"dims": list(a.shape)}
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def describe(model_proto) -> dict:
    import onnx
    from onnx import helper, numpy_helper
    g = model_proto.graph
    consts = {}
    for t in g.initializer:
        if math.prod(t.dims) <= 64:
            consts[t.name] = numpy_helper.to_array(t).tolist()
    nodes = []
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value" and math.prod(a.t.dims) <= 64:
                    consts[n.output[0]] = numpy_helper.to_array(a.t).tolist()
                elif a.name.startswith("value_"):
                    consts[n.output[0]] = _jsonable(helper.get_attribute_value(a))
            continue
        d = {"op": n.op_type}
        if n.domain not in ("", "ai.onnx"):
            d["domain"] = n.domain
        attrs = {a.name: _jsonable(helper.get_attribute_value(a)) for a in n.attribute}
        if attrs:
            d["attrs"] = dict(sorted(attrs.items()))
        ci = {str(i): consts[name] for i, name in enumerate(n.input) if name in consts}
        if ci:
            d["const_inputs"] = ci
        nodes.append(d)
    onnx.checker.check_model(model_proto)
    opset = {i.domain or "ai.onnx": i.version for i in model_proto.opset_import}
    return {"opset": opset.get("ai.onnx"), "nodes": nodes,
            **({"functions": len(model_proto.functions)} if model_proto.functions else {})}


def _error_text(e: Exception) -> str:
    """One line: the exporter's own summary of the cause where it gives one (the dynamo exporter
    puts it under '## Exception summary'), else the first line of the message."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    m = re.search(r"## Exception summary\s*\n\s*<class '([\w.]+)'>: ([^\n]+)", text)
    if m:
        return f"{type(e).__name__}: {m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}"[:400]
    lines = text.strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:400]


def export_layer(kind: str, attrs: dict, shapes: list, exporters=("dynamo", "torchscript")) -> dict:
    import onnx
    module = OneLayer(kind, attrs).eval()
    args = export_inputs(kind, attrs, shapes)
    res = {}
    for exporter in exporters:
        t = time.time()
        try:
            with quiet(), time_limit(120):
                if exporter == "dynamo":
                    prog = torch.onnx.export(module, args, dynamo=True, verbose=False)
                    proto = prog.model_proto
                else:
                    f = io.BytesIO()
                    torch.onnx.export(module, args, f, dynamo=False)
                    proto = onnx.load_from_string(f.getvalue())
            d = describe(proto)
        except Exception as e:
            d = {"error": _error_text(e)}
        d["seconds"] = round(time.time() - t, 2)
        res[exporter] = d
    return res


# --------------------------------------------------------------------------------------------------
# Stages


def _key(kind, attrs, inputs) -> str:
    return json.dumps([kind, attrs, inputs], sort_keys=True)


def _ckey(kind, attrs) -> str:
    return json.dumps([kind, attrs], sort_keys=True)


def stage_collect(work: Path, only: str | None, families: list, resume: bool, threads: int,
                  redo: str | None = None):
    work.mkdir(parents=True, exist_ok=True)
    rows_f, models_f = work / "rows.jsonl", work / "models.jsonl"
    done = set()
    if redo and resume:
        for f in (rows_f, models_f):
            keep = [line for line in f.read_text().splitlines()
                    if not re.search(redo, "{source}:{model}".format(**json.loads(line)))]
            f.write_text("".join(line + "\n" for line in keep))
    if resume and models_f.exists():
        for line in models_f.read_text().splitlines():
            m = json.loads(line)
            done.add((m["source"], m["model"]))
    else:
        rows_f.write_text("")
        models_f.write_text("")
    torch.set_num_threads(threads)
    specs = [s for fam in families for s in FAMILIES[fam]()]
    if only:
        specs = [s for s in specs if re.search(only, f"{s.source}:{s.model}")]
    t_all = time.time()
    for i, spec in enumerate(specs):
        if (spec.source, spec.model) in done:
            continue
        info, rows = run_spec(spec)
        info["layers"] = len(rows)
        if i % 20 == 19:
            gc.collect()
        with rows_f.open("a") as f:
            for r in rows:
                f.write(json.dumps({"source": spec.source, "model": spec.model, **r}) + "\n")
        with models_f.open("a") as f:
            f.write(json.dumps(info) + "\n")
        print(f"[{i + 1}/{len(specs)} {time.time() - t_all:7.1f}s] {spec.source}:{spec.model} "
              f"{info['status']} {info.get('run', '')} {info.get('gflops', '')} GFLOPs "
              f"{len(rows)} layers {info['seconds']}s {info.get('error', '')}", flush=True)


def _load_jsonl(p: Path) -> list:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def stage_export(work: Path):
    """Exports every distinct layer at its stand-in shapes with both exporters, and again with the
    TorchScript exporter at its real shape (up to EXPORT_MAX_ELEMENTS) to check the stand-in."""
    rows = _load_jsonl(work / "rows.jsonl")
    exp_f = work / "exports.jsonl"
    have = {e["key"] for e in _load_jsonl(exp_f)} if exp_f.exists() else set()
    jobs = {}
    for r in rows:
        if "kind" not in r or "error" in r:
            continue
        k, a, x = r["kind"], r["attrs"], r["input"]
        st = standin(k, a, x)
        jobs.setdefault("standin:" + _key(k, a, st), (k, a, st, ("dynamo", "torchscript")))
        if st != x and math.prod(x[0]) <= EXPORT_MAX_ELEMENTS:
            jobs.setdefault("real:" + _key(k, a, x), (k, a, x, ("torchscript",)))
    t0 = time.time()
    n = 0
    with exp_f.open("a") as f:
        for key, (k, a, shapes, exporters) in jobs.items():
            if key in have:
                continue
            res = export_layer(k, a, shapes, exporters)
            f.write(json.dumps({"key": key, **res}) + "\n")
            f.flush()
            n += 1
            if n % 50 == 0:
                print(f"exports: {n} ({time.time() - t0:.0f}s)", flush=True)
    print(f"exports: {n} new, {len(jobs)} in all, {time.time() - t0:.0f}s")


def _versions() -> dict:
    v = {"python": platform.python_version()}
    for d in ("torch", "torchvision", "timm", "onnx", "onnxscript", "spandrel",
              "ultralytics-opencv-headless"):
        try:
            v[d] = importlib.metadata.version(d)
        except importlib.metadata.PackageNotFoundError:
            pass
    return v


def _finite(v):
    """Strict JSON: infinities and NaN (a Pad's -inf value) as the strings "inf", "-inf", "nan"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return [_finite(x) for x in v]
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    return v


def _shrink(d: dict) -> dict:
    """Constant inputs over 16 elements (masks, index tables) recorded by their shape only."""
    import numpy as np
    if "nodes" not in d:
        return d
    nodes = []
    for n in d["nodes"]:
        n = dict(n)
        if "const_inputs" in n:
            n["const_inputs"] = {i: ({"dims": list(np.shape(v))} if np.size(v) > 16 else v)
                                 for i, v in n["const_inputs"].items()}
        nodes.append(_finite(n))
    return {**d, "nodes": nodes}


def _node_sig(d: dict) -> str:
    return json.dumps({k: d[k] for k in ("opset", "nodes", "error", "functions")
                       if k in d}, sort_keys=True)


def stage_write(work: Path, out: Path, run_info: dict):
    rows = _load_jsonl(work / "rows.jsonl")
    models = _load_jsonl(work / "models.jsonl")
    exports = {e["key"]: e for e in _load_jsonl(work / "exports.jsonl")} \
        if (work / "exports.jsonl").exists() else {}
    errors = [r for r in rows if "error" in r]
    if errors:
        raise SystemExit(f"census errors in rows: {errors[:3]}")
    by_model = {(m["source"], m["model"]): m for m in models}
    task_order = ["classification", "detection", "segmentation", "video", "optical-flow",
                  "super-resolution", "yolo"]

    # distinct layers and configurations
    layers, configs = {}, {}
    for r in rows:
        k = _key(r["kind"], r["attrs"], r["input"])
        if k not in layers:
            layers[k] = {"kind": r["kind"], "attrs": r["attrs"], "input": r["input"],
                         "output": r["output"], "ops": Counter(), "models": Counter(), "tasks": set()}
        L = layers[k]
        if L["output"] != r["output"]:
            raise SystemExit(f"one layer, two output shapes: {k} {L['output']} {r['output']}")
        mk = f"{r['source']}:{r['model']}"
        L["ops"][r["op"]] += 1
        L["models"][mk] += 1
        L["tasks"].add(by_model[(r["source"], r["model"])]["task"])
    order = sorted(layers, key=lambda k: (layers[k]["kind"], json.dumps(layers[k]["attrs"],
                                                                          sort_keys=True),
                                          layers[k]["input"]))
    ids = {k: f"L{i + 1:04d}" for i, k in enumerate(order)}
    corder = sorted({_ckey(layers[k]["kind"], layers[k]["attrs"]) for k in order})
    cids = {k: f"C{i + 1:03d}" for i, k in enumerate(corder)}

    export_table, export_ids = {}, {}

    def export_ref(d):
        sig = _node_sig(_shrink(d))
        if sig not in export_ids:
            export_ids[sig] = f"X{len(export_ids) + 1:03d}"
            export_table[export_ids[sig]] = json.loads(sig)
        return export_ids[sig]

    out_layers = []
    checked, unchecked, mismatches = 0, 0, []
    for k in order:
        L = layers[k]
        st = standin(L["kind"], L["attrs"], L["input"])
        e = exports.get("standin:" + _key(L["kind"], L["attrs"], st))
        if e is None:
            raise SystemExit(f"layer not exported (run --stage export): {k}")
        onnx_refs = {"dynamo": export_ref(e["dynamo"]), "torchscript": export_ref(e["torchscript"])}
        real = exports.get("real:" + k) if st != L["input"] else None
        if real is not None:
            checked += 1
            if _node_sig(real["torchscript"]) != _node_sig(e["torchscript"]):
                mismatches.append(ids[k])
            onnx_refs["torchscript"] = export_ref(real["torchscript"])
        elif st != L["input"]:
            unchecked += 1
        ck = _ckey(L["kind"], L["attrs"])
        entry = {"id": ids[k], "config": cids[ck], "input": L["input"], "output": L["output"],
                 "instances": sum(L["models"].values()),
                 "models": dict(sorted(L["models"].items())), "onnx": onnx_refs}
        out_layers.append(entry)
        c = configs.setdefault(ck, {"id": cids[ck], "kind": L["kind"], "attrs": L["attrs"],
                                    "instances": 0, "ops": Counter(), "tasks": set(),
                                    "models": Counter(), "layers": [],
                                    "onnx": {"dynamo": [], "torchscript": []}})
        c["instances"] += entry["instances"]
        c["ops"].update(L["ops"])
        c["tasks"].update(L["tasks"])
        c["models"].update(L["models"])
        c["layers"].append(entry["id"])
        for ex, ref in onnx_refs.items():
            if ref not in c["onnx"][ex]:
                c["onnx"][ex].append(ref)
    out_configs = []
    for ck in corder:
        c = configs[ck]
        c["ops"] = dict(sorted(c["ops"].items()))
        c["tasks"] = [t for t in task_order if t in c["tasks"]]
        c["models"] = dict(sorted(c["models"].items()))
        out_configs.append(c)

    out_models = sorted(models, key=lambda m: (task_order.index(m["task"]), m["source"],
                                                m["model"]))
    out_models = [{k: v for k, v in m.items()
                   if k not in ("version", "note") or m["source"] == "architecture"}
                  for m in out_models]
    census = {
        "format": FORMAT,
        "date": run_info.get("date"),
        "machine": run_info.get("machine"),
        "versions": _versions(),
        "exporters": {"dynamo": "torch.onnx.export(dynamo=True), torch's default",
                      "torchscript": "torch.onnx.export(dynamo=False)"},
        "inputs": INPUTS,
        "cpu_gflops_limit": CPU_GFLOPS_LIMIT,
        "export": {
            "rule": STANDIN_RULE,
            "torchscript_at_real_shape_up_to_elements": EXPORT_MAX_ELEMENTS,
            "standin_checked": checked, "standin_mismatches": mismatches,
            "standin_unchecked": unchecked},
        "seconds": run_info.get("seconds"),
    }
    out.mkdir(parents=True, exist_ok=True)
    data = {"census": census, "models": out_models, "configs": out_configs,
            "layers": out_layers, "exports": export_table}
    (out / "distinct.json").write_text(_dump(data))

    # every instance row, in model order
    mindex = {(m["source"], m["model"]): i for i, m in enumerate(out_models)}
    rows_sorted = sorted(enumerate(rows), key=lambda ir: (mindex[(ir[1]["source"],
                                                                  ir[1]["model"])], ir[0]))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        for _, r in rows_sorted:
            m = by_model[(r["source"], r["model"])]
            k = _key(r["kind"], r["attrs"], r["input"])
            row = {"source": r["source"], "version": m.get("version"), "task": m["task"],
                   "model": r["model"], "layer": r["layer"], "op": r["op"], "kind": r["kind"],
                   "mechanism": r["mechanism"], "module_type": r.get("module_type"),
                   "attrs": r["attrs"], "input": r["input"], "output": r["output"],
                   "run": m["run"], "id": ids[k]}
            if r["kind"] in ("roi_align", "roi_pool"):
                row["rois"] = r["input"][1][0]
            if m["source"] == "architecture":
                row["ref"] = m.get("ref")
            gz.write((json.dumps(row, separators=(",", ":")) + "\n").encode())
    (out / "layers.jsonl.gz").write_bytes(buf.getvalue())
    print(f"wrote {out / 'distinct.json'} ({(out / 'distinct.json').stat().st_size} bytes), "
          f"{out / 'layers.jsonl.gz'} ({len(buf.getvalue())} bytes): {len(rows)} rows, "
          f"{len(out_layers)} distinct layers, {len(out_configs)} configurations, "
          f"{len(export_table)} distinct exports")


def _dump(data: dict) -> str:
    """JSON with one layer / configuration / model / export per line: small and diffable."""
    parts = ["{"]
    keys = list(data)
    for i, k in enumerate(keys):
        v = data[k]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(v, list):
            parts.append(f' "{k}": [')
            parts.append(",\n".join("  " + json.dumps(x, separators=(",", ":")) for x in v))
            parts.append(f" ]{comma}")
        elif isinstance(v, dict) and k == "exports":
            parts.append(f' "{k}": {{')
            parts.append(",\n".join(f"  {json.dumps(a)}: {json.dumps(b, separators=(',', ':'))}"
                                    for a, b in v.items()))
            parts.append(f" }}{comma}")
        else:
            parts.append(f' "{k}": {json.dumps(v)}{comma}')
    parts.append("}")
    return "\n".join(parts) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", choices=["all", "collect", "export", "write"], default="all")
    p.add_argument("--work", type=Path, default=None,
                   help="work folder (default build/census, with --only build/census-only)")
    p.add_argument("--out", type=Path, default=REPO / "onnx_dml_bench" / "data" / "census")
    p.add_argument("--only", help="regex on SOURCE:MODEL; writes --work only")
    p.add_argument("--families", default=",".join(FAMILIES),
                   help=f"comma-separated, of {','.join(FAMILIES)}")
    p.add_argument("--resume", action="store_true", help="keep the models already in --work")
    p.add_argument("--redo", help="regex on SOURCE:MODEL: run these again, keep the others")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: the census shares the machine)")
    p.add_argument("--machine", default=None, help="how to describe this machine in the data")
    a = p.parse_args(argv)
    fams = [f for f in a.families.split(",") if f]
    a.work = a.work or REPO / "build" / ("census-only" if a.only else "census")
    t0 = time.time()
    info_f = a.work / "run.json"
    if a.stage in ("all", "collect"):
        stage_collect(a.work, a.only, fams, a.resume or bool(a.redo), a.threads, a.redo)
        a.work.mkdir(parents=True, exist_ok=True)
        info = {"date": datetime.date.today().isoformat(),
                "machine": a.machine or f"{platform.machine()}, {os.cpu_count()} cores, "
                                         f"{platform.system()}, CPU only",
                "collect_seconds": round(time.time() - t0)}
        if a.resume and info_f.exists():
            old = json.loads(info_f.read_text())
            info["collect_seconds"] += old.get("collect_seconds", 0)
        info_f.write_text(json.dumps(info))
    if a.stage in ("all", "export"):
        t1 = time.time()
        stage_export(a.work)
        info = json.loads(info_f.read_text()) if info_f.exists() else {}
        info["export_seconds"] = info.get("export_seconds", 0) + round(time.time() - t1)
        info_f.write_text(json.dumps(info))
    if a.stage in ("all", "write"):
        if a.only and a.stage == "all":
            print("--only: data files not written")
            return
        info = json.loads(info_f.read_text()) if info_f.exists() else {}
        info["seconds"] = {"collect": info.get("collect_seconds"),
                           "export": info.get("export_seconds")}
        stage_write(a.work, a.out, info)


if __name__ == "__main__":
    main()
