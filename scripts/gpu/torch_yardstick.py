"""PyTorch's own kernels on the census layers of reports/h200-perf/, float32 against float16, timed
the way `perf` times ONNX Runtime's CUDA EP (CUDA events around each call on one stream, the median
of RUNS calls after warm-up) with the same copy yardstick (a 64 MiB device-to-device copy): what a
bandwidth-bound kernel gains from half the bytes on this GPU, beside what the CUDA EP's kernels gain
(reports/h200-perf/README.md). Needs torch with CUDA; prints a table and writes JSON.

    python scripts/gpu/torch_yardstick.py [--runs 60] [--out torch-yardstick.json]
"""
from __future__ import annotations

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

#: the four layers of perf-cuda-f16.json / perf-cuda-f32.json: (name, input shape, the call)
LAYERS = [
    ("DepthToSpace CRD b2 4x256x256x256", (4, 256, 256, 256), lambda x: F.pixel_shuffle(x, 2).contiguous()),
    ("MaxPool 2x2/2 ceil 2x64x600x800", (2, 64, 600, 800), lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True)),
    ("AveragePool 2x2/2 7800x1x65x120", (7800, 1, 65, 120),
     lambda x: F.avg_pool2d(x, 2, 2, count_include_pad=True)),
    ("ReduceMean 512x512 4x64x512x512", (4, 64, 512, 512), lambda x: x.mean(dim=(-2, -1), keepdim=True)),
]


def timed(fn, runs: int) -> list[float]:
    """Milliseconds of each of ``runs`` calls, CUDA events on the current stream."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--out", default="torch-yardstick.json")
    args = ap.parse_args()
    dev = torch.device("cuda")
    src = torch.empty(64 << 20, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    copy_ms = statistics.median(timed(lambda: dst.copy_(src), args.runs))
    bandwidth = 2 * (64 << 20) / copy_ms / 1e6                   # GB/s: read and write
    doc = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "runs": args.runs, "copy_ms": copy_ms, "bandwidth_gbs": bandwidth, "layers": []}
    print(f"{doc['device']}, torch {doc['torch']} (CUDA {doc['cuda']}): copy of 64 MiB {copy_ms:.4f} ms, "
          f"{bandwidth:.0f} GB/s")
    g = torch.Generator(device=dev).manual_seed(1)
    for name, shape, call in LAYERS:
        row = {"layer": name}
        for dt, key in ((torch.float32, "f32"), (torch.float16, "f16")):
            x = torch.randn(shape, generator=g, device=dev).to(dt)
            y = call(x)
            nbytes = x.numel() * x.element_size() + y.numel() * y.element_size()
            samples = timed(lambda: call(x), args.runs)
            ms = statistics.median(samples)
            row[key] = {"ms": ms, "bytes": nbytes, "gbs": nbytes / ms / 1e6, "share": nbytes / ms / 1e6 / bandwidth,
                        "samples_ms": samples}
            del x, y
        row["f16_over_f32"] = row["f16"]["ms"] / row["f32"]["ms"]
        doc["layers"].append(row)
        print(f"  {name:36s} f32 {row['f32']['ms']:.4f} ms ({row['f32']['gbs']:.0f} GB/s, share "
              f"{row['f32']['share']:.2f})  f16 {row['f16']['ms']:.4f} ms ({row['f16']['gbs']:.0f} GB/s, share "
              f"{row['f16']['share']:.2f})  f16/f32 {row['f16_over_f32']:.3f}")
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
