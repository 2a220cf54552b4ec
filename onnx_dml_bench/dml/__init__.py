"""DirectML under Wine: the Windows DirectML (through onnxruntime-node, or straight through
DirectML.dll) run on Linux, on a software Vulkan device (Mesa lavapipe) or a GPU host's driver.

A one-way stack; each layer imports only the layers below it::

    __main__.py   the GPU-host command line (python -m onnx_dml_bench.dml)
    probe.py      adapter, shader model, record identity, GPU evidence
    select.py     readers: find_stack, find_named, select_stack, apply_gpu
    install/      writers: default (wine8-sm51, setup), sm6 (wine10-sm6), variants, bundle
    node/         the onnxruntime-node driver (run_jobs, canary)
    direct/       the descriptor driver (harness.c, DirectRunner)
    wine/         host plumbing: stackinfo, proc, versions, session, prefix, root, icd, pe

``setup()`` installs the default stack, ``find_stack()`` loads it, ``run_jobs()`` runs ONNX
models on it and ``canary()`` checks it.
"""

from .install.default import setup
from .node.client import (
    CanaryResult,
    Job,
    JobResult,
    canary,
    canary_model_bytes,
    run_jobs,
    shutdown,
)
from .probe import adapter_info
from .select import find_stack
from .wine.pe import pe_version
from .wine.session import win_path
from .wine.stackinfo import (
    NODE_WIN_VERSION,
    ORT_NODE_VERSION,
    StackError,
    StackInfo,
    default_cache_dir,
    setup_command,
)

__all__ = [
    "CanaryResult",
    "Job",
    "JobResult",
    "NODE_WIN_VERSION",
    "ORT_NODE_VERSION",
    "StackError",
    "StackInfo",
    "adapter_info",
    "canary",
    "canary_model_bytes",
    "default_cache_dir",
    "find_stack",
    "pe_version",
    "run_jobs",
    "setup",
    "setup_command",
    "shutdown",
    "win_path",
]
