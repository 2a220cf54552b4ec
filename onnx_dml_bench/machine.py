"""Facts of the machine a run records: the CPU's name, an NVIDIA GPU (nvidia-smi) and the versions
of the Python libraries results depend on. A values-level module: it imports nothing of the bench."""
from __future__ import annotations

import contextlib
import importlib.metadata as md
import os
import platform
import shutil
import subprocess


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia() -> dict:
    if not shutil.which("nvidia-smi"):
        return {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    name, driver, mem = [s.strip() for s in out[0].split(",")][:3]
    return {"device": name, "driver": driver, "device_memory": mem}


def nvidia_gpus() -> list[dict]:
    """Every NVIDIA GPU of the host (nvidia-smi, in its order: the PCI bus order, CUDA's with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``): index, name, uuid, pci_bus_id, driver, device_memory; [] without one."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6 or not parts[0].isdigit():
            continue
        gpus.append({"index": int(parts[0]), "name": parts[1], "uuid": parts[2], "pci_bus_id": parts[3],
                     "driver": parts[4], "device_memory": parts[5]})
    return gpus


def versions() -> dict:
    out = {}
    for name in ("onnx", "numpy", "onnxruntime-ep-webgpu"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


#: the share of the memory available at a run's start that the bench's estimates
#: (``Operator.memory_bytes``) may take: one case, and the batches in flight together. The rest is
#: headroom for what the estimate leaves out (the runtime's own buffers, allocator slack) and for the
#: machine's other users: a 2^28-element case estimated within the memory available peaked at 22.4 of
#: 23.5 GiB (docs/profiles.md)
MEMORY_SHARE = 0.6
#: the memory budget of a run's batches per worker process by default (``execute.memory_budget``):
#: the estimated memory of the batches in flight and what the workers keep for their next arrays,
#: together, at most this times the workers (and at most ``MEMORY_SHARE`` of the memory available),
#: so that a run's peak grows with the workers asked for, not with the machine's memory
WORKER_MEMORY = 7 << 28


def memory() -> dict:
    """The machine's memory in bytes: ``total`` (physical) and ``available`` (what can be allocated
    now without swapping: MemAvailable on Linux, else the total); {} where neither can be read."""
    out = {}
    try:
        out["total"] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    out["available"] = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if "total" in out:
        out.setdefault("available", out["total"])
    return out


#: threads the reference may use in this process (None: :func:`reference_threads`'s default); a
#: bench worker takes its share of the cores (:func:`share_cores`)
_REFERENCE_THREADS: int | None = None


def reference_threads() -> int:
    """How many threads the reference's work may use in this process: this process's share of the
    cores where it is one of several workers, else every core (at most 8)."""
    return _REFERENCE_THREADS or min(8, os.cpu_count() or 1)


def share_cores(jobs: int) -> int:
    """Make this process one of ``jobs`` workers: the reference uses its share of the cores (at
    least one thread), so that the workers' threads together do not outnumber the cores (with
    more, they only take turns: each pays the handing over of its tiles and none goes faster)."""
    global _REFERENCE_THREADS
    _REFERENCE_THREADS = max(1, min(8, (os.cpu_count() or 1) // max(1, int(jobs))))
    return _REFERENCE_THREADS


def alone_threads(jobs: int, host_workers: int | None = None) -> int:
    """The reference's threads of a batch that runs alone among a pool's ``jobs`` workers (the others
    idle): their shares of the cores together (``host_workers``: the workers of every pool on the
    host, whose shares the others keep), at most every core and 8."""
    cores = os.cpu_count() or 1
    share = max(1, cores // max(1, int(host_workers or jobs)))
    return max(1, min(8, cores, share * max(1, int(jobs))))


@contextlib.contextmanager
def threads_for(n: int | None):
    """The reference's threads set to ``n`` for the ``with`` block (None: left as they are), then
    back."""
    global _REFERENCE_THREADS
    if not n:
        yield
        return
    before, _REFERENCE_THREADS = _REFERENCE_THREADS, max(1, min(8, int(n)))
    try:
        yield
    finally:
        _REFERENCE_THREADS = before
