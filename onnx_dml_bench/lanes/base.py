"""The EP lane as an object, and the backend it makes inside a worker process.

A :class:`Lane` is one way of running cases: an EP of the installed ONNX Runtime (``ort.py``),
the DirectML EP under Wine (``dml_wine.py``) or the direct DirectML lane (``dml_direct.py``). It
answers everything that depends on which lane it is — its preflight and known-answer canary, the
facts a run records about it, whether the three-way comparison has a CPU side, the cases only it
adds, and the :class:`Backend` that runs cases in a worker — so that no code outside ``lanes/``
asks a lane what kind it is. A lane is a small dataclass: it pickles to the spawned worker, which
calls :meth:`Lane.make_backend`.

A backend has one of two shapes, declared below: ONNX graphs (:class:`GraphBackend`, a batch of
models per call, the ``cpu`` side of the three-way comparison included) or DirectML descriptors
(:class:`DescriptorBackend`, one case per call, no ONNX Runtime and no CPU side).

A lane whose EP does not run in this process (the DirectML lanes under Wine) times cases for the
performance lens through a :class:`Timer` (:meth:`Lane.make_timer`): a case's run repeated on the
device, the time of each repeat, the outputs of the last for the verdict.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata as md
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Protocol, runtime_checkable

from ..errors import ProviderError
from ..machine import cpu_name, versions
from ..outcome import Outcome
from ..record import Placement


@dataclass
class RunConfig:
    """How a backend runs its cases (handed to :meth:`Lane.make_backend` in the worker)."""
    optimization: str = "disabled"
    batch_size: int = 64
    timeout_s: float = 300.0
    jobs: int = 1
    threads: int = 1
    three_way: bool = True
    #: runs of each session of the EP under test (``--repeat``): nondeterministic outputs, flaky verdicts
    repeat: int = 1
    #: re-run alone (its own model and session) a case that failed in a session shared with others
    confirm: bool = True
    #: the largest tensor a case may have, in elements (None: ``ops.base.MAX_TENSOR_ELEMENTS``)
    max_elements: int | None = None
    #: a batch holds at most this much of its cases' estimated memory (``execute.case_bytes``)
    batch_bytes: int = 256 << 20
    #: the estimated memory of the batches in flight at once, over every worker (None: 60% of the
    #: memory available when the run starts); a batch larger than it still runs, alone
    memory_budget: int | None = None
    #: the worker processes on this host over every device of the run (``run --devices``; None: jobs):
    #: a worker's reference takes its share of the cores by it (``machine.share_cores``)
    host_workers: int | None = None
    #: keep the EP's outputs of each case judged in this folder (``run --save-outputs``, ``saved``)
    save_outputs: str | None = None


#: test hook: "N" or "N:HOST": the CPU EP's lane lists N devices of the host (:meth:`Lane.host_devices`),
#: each this CPU (UUIDs ``HOST-cpu-K``, default ``fake-cpu-K``), so that a run over several devices
#: (``run --devices``) can be tested without a GPU, and several hosts' runs on one machine
FAKE_DEVICES_ENV = "ONNX_DML_BENCH_FAKE_DEVICES"
#: test hook: "INDEX": the device of that index answers with the lowest bit of the first byte of each
#: output of the EP under test flipped (a device that silently corrupts data)
DEVICE_FAULT_ENV = "ONNX_DML_BENCH_DEVICE_FAULT"


class PreflightError(RuntimeError):
    """The lane's preflight (its known-answer canary) failed: no verdicts from a broken stack. The
    message says why; the command line turns it into exit code 3."""


# ----------------------------------------------------------------------------------------------
# Backends (inside the worker)
# ----------------------------------------------------------------------------------------------

class Backend(Protocol):
    """What every backend has: the EP's name in records, whether it is the CPU EP, the words for
    its CPU side (the three-way comparison), the run configuration, and ``close()`` (give back
    what it holds in this process: a harness process, a Wine prefix slot)."""
    ep_name: str
    is_cpu: bool
    cpu_build: str
    cfg: RunConfig

    def close(self) -> None: ...


class GraphBackend(Backend, Protocol):
    """Runs ONNX graphs: ``jobs`` are (model bytes, feeds, output names, side[, repeat]), side
    ``"ep"`` (the EP under test, CPU fallback disabled) or ``"cpu"`` (the CPU EP of the same
    build); ``repeat`` (default 1): runs of the one session, the outputs of runs 2..N in
    ``Outcome.runs``."""

    def run_many(self, jobs: list[tuple]) -> list[Outcome]: ...

    # Optional: ``known_refusals(model) -> set[str]``, the node-name prefixes (``c3_``) of the cases
    # of a model (of the EP side) that the backend already knows a session refuses (what a failed
    # session taught it, e.g. the DirectML EP's placement probe): the runner then sends those alone
    # (each refused by run_many without a session) and the rest of the group together.


class DescriptorBackend(Backend, Protocol):
    """Runs a case's DirectML descriptor itself (no ONNX graph, no CPU side); the runner calls
    ``run`` once per repeat."""

    def run(self, case, inputs: dict) -> Outcome: ...

    def unsupported(self, case) -> str | None:
        """The device's own reason not to run the case (NOT_SUPPORTED), or None."""

    def placement(self) -> Placement:
        """The placement proof of every case this backend runs."""


@runtime_checkable
class _DescriptorShape(Protocol):
    def run(self, case, inputs: dict) -> Outcome: ...

    def unsupported(self, case) -> str | None: ...

    def placement(self) -> Placement: ...


def runs_descriptors(backend) -> bool:
    """Whether ``backend`` has the descriptor shape (:class:`DescriptorBackend`) rather than the
    graph shape (:class:`GraphBackend`)."""
    return isinstance(backend, _DescriptorShape)


# ----------------------------------------------------------------------------------------------
# Timers (the performance lens, in this process)
# ----------------------------------------------------------------------------------------------

@dataclass
class Timed:
    """One case timed on a lane's device: the outcome of the last timed run (its outputs, judged as
    in a conformance run), the time of each timed run in ms, and what else the timer measured."""
    outcome: Outcome
    samples_ms: list[float] = field(default_factory=list)
    placement: Placement | None = None
    extra: dict = field(default_factory=dict)


class Timer(Protocol):
    """Times cases on a lane's device (:meth:`Lane.make_timer`). ``clock`` says what a sample
    measures; ``semantics`` which document judges the outputs (``"dml"``: the descriptor,
    ``"onnx"``: the ONNX graph); ``warmup`` untimed runs precede the ``repeats`` timed ones."""
    ep_name: str
    clock: str
    semantics: str

    def time(self, case, inputs: dict, warmup: int, repeats: int) -> Timed: ...

    def unsupported(self, case) -> str | None:
        """The device's own reason not to run the case (NOT_SUPPORTED), or None."""

    def yardstick(self, nbytes: int, warmup: int, repeats: int) -> dict | None:
        """The device's copy bandwidth measured the way cases are timed (None: this timer has none)."""

    def close(self) -> None: ...


# ----------------------------------------------------------------------------------------------
# Descriptor lanes: a case as the descriptor it was derived from
# ----------------------------------------------------------------------------------------------

#: ONNX-side options at their default: the graph is then the direct image of the descriptor
NEUTRAL = {("form", "native"), ("form", "pool"), ("ceil_mode", 0), ("auto_pad", "NOTSET"), ("storage_order", 0)}
#: the label of a descriptor lane's record of a case with ONNX-side options (:func:`onnx_side_variant`)
VARIANT_LABEL = "onnx-side-variant"
#: what the label says (the report's legend)
VARIANT_LABEL_TEXT = ("A descriptor lane's record of a case with ONNX-side options (ceil_mode, auto_pad, storage_order, "
                      "a decomposed form): the lane ran the descriptor the case was derived from, on the case's own "
                      "inputs, so the four-way join can pair it with the DML EP's record of the same case.")


def onnx_side_variant(case) -> dict:
    """The case's ONNX-side options that make its graph more than the image of its descriptor."""
    return {k: v for k, v in case.variant if (k, v) not in NEUTRAL}


def descriptor_case(case):
    """The case as the descriptor a descriptor lane runs: same descriptor, inputs and seed, no
    ONNX-side options."""
    return dataclasses.replace(case, variant=()) if case.variant else case


# ----------------------------------------------------------------------------------------------
# The lane, and its row in the catalog
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shipped:
    """The expectations shipped for a lane (``expectations/<file>``, checked by the main job), and
    the environments they are for: ``applies(envs, device)`` over the environments of a lane's
    results and their devices' names (lower case, joined); ``what`` says it in words."""
    file: str
    what: str
    applies: Callable[[list, str], bool]


def device_named(*names: str) -> Callable[[list, str], bool]:
    """:attr:`Shipped.applies` for expectations of a device whose name holds one of ``names``."""
    return lambda envs, device: any(n in device for n in names)


@dataclass(frozen=True)
class Entry:
    """One EP the bench knows by a key (``--ep KEY``): its provider name, what provides it, the
    command that makes it available here, and the lane class that runs it on this platform
    (``lane.resolve(entry, options)``). ``setup``: the ``onnx-dml-bench setup`` target that installs
    it (``dml``), if the bench installs it itself. The lane catalog (``catalog.py``) lists them."""
    key: str
    ep_name: str
    package: str
    howto: str
    lane: type
    setup: str = ""


ORT_PACKAGES = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml")


def ort_package() -> tuple[str, str]:
    """(distribution name, version) of the ONNX Runtime flavour actually imported: the
    distribution that owns the imported onnxruntime module (several may be installed side by
    side, e.g. a system one and one on PYTHONPATH)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return ("none", "")
    here = Path(ort.__file__).resolve()
    owners, installed = [], []
    for name in ORT_PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        installed.append(name)
        try:
            if Path(dist.locate_file("onnxruntime/__init__.py")).resolve() == here:
                owners.append((name, dist.version))
        except Exception:  # noqa: BLE001 - unusual installs: fall through
            pass
    if len(owners) == 1:
        return owners[0]
    if len(installed) > 1:
        return (" + ".join(installed) + " (conflicting: install only one)", ort.__version__)
    return (installed[0] if installed else "onnxruntime (unknown distribution)", ort.__version__)


@dataclass
class Lane:
    """One EP lane, resolved from a user's EP name (``lanes.resolve``)."""
    key: str                      # the catalog's key (catalog.keys()), plugin, or another built-in EP's provider name
    ep_name: str                  # e.g. CUDAExecutionProvider; DirectML for the direct lane
    package: str                  # what provides it
    options: dict = field(default_factory=dict)
    howto: str = ""               # the command that makes it available
    #: the one device of the host this lane runs on (:meth:`on_device`): index, name, uuid, pci_bus_id;
    #: None: the EP's default device
    unit: dict | None = None

    #: whether the three-way comparison has a CPU side on this lane
    has_cpu_side: ClassVar[bool] = True
    #: whether its backend runs descriptors (:class:`DescriptorBackend`) rather than ONNX graphs
    runs_descriptors: ClassVar[bool] = False
    #: whether its EP runs in this Python process, through the installed onnxruntime
    #: (:meth:`make_session`: the performance lens, the repro script)
    in_process: ClassVar[bool] = False
    #: what its preflight checks, in a message that says it failed
    canary_name: ClassVar[str] = "preflight"
    #: cases per model and session unless the user says (``run --batch-size``): a lane whose
    #: sessions cost more to create takes larger batches
    batch_size: ClassVar[int] = 64
    #: the expectations shipped for it (the main job checks its results against them), if any
    shipped: ClassVar[Shipped | None] = None

    @classmethod
    def resolve(cls, entry: Entry, options: dict) -> "Lane":
        """The lane of the catalog's ``entry`` with EP ``options``, checked to run here
        (``errors.ProviderError`` saying why not)."""
        raise NotImplementedError

    @property
    def is_cpu(self) -> bool:
        return self.ep_name == "CPUExecutionProvider"

    def preflight(self) -> dict:
        """Before any verdict: the lane's known-answer canary, and what it adds to the environment
        record. Raises :class:`PreflightError` when the lane cannot give verdicts here."""
        return {}

    def environment(self) -> dict:
        """What a result must record to be reproducible: machine, ORT package and version, EP,
        device, driver (before :meth:`preflight`, which may add to it and override it)."""
        pkg, ver = ort_package()
        return {
            "os": f"{platform.system()} {platform.release()}",
            "platform": platform.platform(),
            "machine": platform.node(),
            "cpu": cpu_name(),
            "python": platform.python_version(),
            "ort_package": pkg,
            "ort_version": ver,
            "ep": self.ep_name,
            "ep_key": self.key,
            "ep_package": self.package,
            "ep_options": self.options,
            "versions": versions(),
            "device": cpu_name(),
            "driver": "",
            **({"device_unit": dict(self.unit)} if self.unit is not None else {}),
        }

    def host_devices(self) -> list[dict]:
        """The devices of this host the lane can be bound to (``run --devices``), in the order of their
        index: each {index, name, uuid, pci_bus_id} (and what else the lane knows of it, e.g. driver);
        empty: the lane has no choice of device here. The test hook :data:`FAKE_DEVICES_ENV` makes the
        CPU EP's lane list that many devices, all this CPU."""
        if self.is_cpu and os.environ.get(FAKE_DEVICES_ENV):
            n, _, host = os.environ[FAKE_DEVICES_ENV].partition(":")
            return [{"index": i, "name": cpu_name(), "uuid": f"{host or 'fake'}-cpu-{i}", "pci_bus_id": ""}
                    for i in range(int(n))]
        return []

    def on_device(self, unit: dict) -> "Lane":
        """This lane bound to ``unit`` (one of :meth:`host_devices`): a copy; a lane whose EP picks its
        device by an option sets it (``device_id``)."""
        return dataclasses.replace(self, options=dict(self.options), unit=dict(unit))

    def device_fault(self) -> bool:
        """The test hook :data:`DEVICE_FAULT_ENV`: whether this lane's device answers with a bit flipped
        in each output of the EP under test."""
        spec = os.environ.get(DEVICE_FAULT_ENV, "").strip()
        return bool(spec) and self.unit is not None and int(spec) == int(self.unit.get("index", -1))

    def in_run_folder(self, out: Path) -> "Lane":
        """This lane writing what its EP keeps between sessions (TensorRT's engine cache) into the run
        folder ``out``; the lane itself where its EP keeps nothing."""
        return self

    def ep_argument(self) -> str:
        """How ``--ep`` names this lane again (the commands the bench hands out: triage's rows, the
        main job's runs)."""
        return self.key

    def make_backend(self, cfg: RunConfig) -> Backend:
        """The backend that runs this lane's cases, made inside the worker process."""
        raise NotImplementedError

    def extra_cases(self, sweep: Callable[[], list], profile: str) -> list:
        """Cases only this lane adds to a profile's run; ``sweep()`` gives the profile's cases of
        the selected operators (all data types)."""
        return []

    def make_timer(self) -> Timer | None:
        """The performance lens's timer of this lane, in this process (None: the lens times the lane's
        sessions itself, :meth:`make_session`)."""
        return None

    def make_session(self, model: bytes, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        """An ONNX Runtime session of ``model`` in this process (lanes that are :attr:`in_process`)."""
        raise ProviderError(f"{self.ep_name} ({self.package}) runs through the bench only: "
                            "no ONNX Runtime session of it in this process")

    def io_device(self) -> tuple[str, int] | None:
        """(OrtValue device type, device id) to bind inputs and outputs to the EP's memory, when
        one is known."""
        return None

    def device_memory_info(self):
        """The OrtMemoryInfo of the EP's device memory, when the lane's EP lists a device."""
        return None


@dataclass
class StatedLane(Lane):
    """Outputs produced outside the bench and judged by it (``judge``): no lane of the bench ran
    them; the EP, its device and driver are as the user states them (``ep_name``, ``device``,
    ``driver``), and nothing is known of the machine, the package or the libraries that ran them."""
    device: str = ""
    driver: str = ""

    def environment(self) -> dict:
        return {"ep": self.ep_name, "ep_key": self.key, "ep_package": self.package,
                "ort_package": "unknown (outputs produced outside the bench)", "ort_version": "",
                "device": self.device or "unknown (not stated)", "driver": self.driver, "os": "", "machine": "",
                "cpu": "", "versions": {}}

    def judged_on(self) -> dict:
        """The machine that judges the outputs (not the one that produced them)."""
        return {"machine": platform.node(), "os": f"{platform.system()} {platform.release()}", "cpu": cpu_name(),
                "python": platform.python_version(), "versions": versions()}

