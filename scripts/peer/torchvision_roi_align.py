"""torchvision.ops.roi_align on seeded inputs, written as literals for the bench's peer check
(tests/ops/test_roi_align.py reads them; the bench itself never imports torch).

    python scripts/peer/torchvision_roi_align.py [OUT]     (default tests/ops/data/roi_align_torchvision.json)

Needs torch and torchvision (an optional dependency, in a virtual environment of its own), e.g.
``pip install torch==2.14.1 torchvision==0.29.1``. Each configuration: a 2x3x10x12 float32 input
(multiples of 1/8), regions [batch, x1, y1, x2, y2] of four kinds (inside, on and past the borders,
zero-size, under a pixel), output size, spatial scale, sampling ratio (-1: adaptive) and aligned;
the output as torchvision computes it on the CPU, float32 values written with 9 significant digits
(exact in float32).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torchvision
from torchvision.ops import roi_align

OUT = Path(__file__).resolve().parents[2] / "tests" / "ops" / "data" / "roi_align_torchvision.json"


def inputs(seed: int):
    g = np.random.default_rng(seed)
    x = (g.integers(-512, 512, size=(2, 3, 10, 12)) / 8.0).astype(np.float32)
    boxes = {
        "inside": [[0, 1.0, 2.0, 9.5, 8.25], [1, 0.0, 0.0, 12.0, 10.0], [0, 3.25, 1.5, 6.75, 4.0]],
        "border": [[0, -1.5, -0.5, 2.0, 3.0], [1, 10.0, 8.0, 13.0, 11.0], [0, -3.0, 4.0, 14.0, 5.0]],
        "empty": [[0, 4.25, 5.5, 4.25, 5.5], [1, 2.0, 3.0, 2.0, 7.0], [0, 6.0, 1.0, 9.0, 1.0]],
        "subpixel": [[0, 4.25, 5.5, 4.75, 5.75], [1, 1.0, 1.0, 1.5, 2.5], [0, 7.0, 2.0, 8.25, 2.25]],
    }
    return x, boxes


def main(out: Path) -> None:
    x, boxes = inputs(7)
    configs = []
    for kind, rois in boxes.items():
        for output in ((2, 2), (3, 4)):
            for scale in (1.0, 0.5):
                for sampling in (2, -1):
                    for aligned in (False, True):
                        r = np.array(rois, np.float32)
                        r[:, 1:] /= scale
                        y = roi_align(torch.from_numpy(x), torch.from_numpy(r), output_size=output,
                                      spatial_scale=scale, sampling_ratio=sampling, aligned=aligned)
                        configs.append({"kind": kind, "rois": r.tolist(), "output_size": list(output),
                                        "spatial_scale": scale, "sampling_ratio": sampling, "aligned": aligned,
                                        "y": [float(f"{v:.9g}") for v in y.numpy().ravel()]})
    data = {"provenance": {"what": "torchvision.ops.roi_align (CPU)", "torch": torch.__version__,
                           "torchvision": torchvision.__version__, "script": "scripts/peer/torchvision_roi_align.py"},
            "x_shape": list(x.shape), "x": x.ravel().tolist(), "configs": configs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{len(configs)} configurations -> {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
