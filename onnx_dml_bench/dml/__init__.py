"""DirectML execution provider of ONNX Runtime, run under Wine on lavapipe.

``stack.setup()`` installs the stack (Wine, private Mesa lavapipe >= 23,
Windows Node.js, onnxruntime-node with DirectML.dll, a Wine prefix);
``client.run_jobs()`` runs ONNX models on it; ``client.canary()`` checks it.
"""

from .client import (
    CanaryResult,
    Job,
    JobResult,
    adapter_info,
    canary,
    canary_model_bytes,
    run_jobs,
    shutdown,
    win_path,
)
from .pe import pe_version
from .stack import (
    NODE_WIN_VERSION,
    ORT_NODE_VERSION,
    StackError,
    StackInfo,
    default_cache_dir,
    find_stack,
    setup,
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
