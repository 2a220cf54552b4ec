"""The placement of each case of a shared session, read once per session (``batch._Shared``),
against ``verdict.placement`` of the case's renamed assignment as the runner first computed it:
the same Placement on any recorded assignment, names that renaming would merge included."""

from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_dml_bench import verdict as V
from onnx_dml_bench.execute import batch
from onnx_dml_bench.outcome import Outcome

EP = "DmlExecutionProvider"


class _Node:
    def __init__(self, name):
        self.name = name


class _Frag:
    def __init__(self, names):
        self.nodes = [_Node(n) for n in names]


def _item(k: int, local: list[str]):
    p = f"c{k}_"
    return batch.Item(case=None, prefix=p, frag=_Frag([p + n for n in local]), inputs={}, feeds={}, outs={})


def _exact(it, group, raw):
    others = [n.name for other in group if other is not it for n in other.frag.nodes]
    return V.placement(it.node_names(), it.local(Outcome(False, "done", assignment=raw)).assignment, EP, False,
                       others)


_LOCAL = st.sampled_from(["MaxPool", "Pad", "Cast", "c1_MaxPool", "X"])
_EPS = st.sampled_from([EP, "CPUExecutionProvider"])


@st.composite
def _sessions(draw):
    n = draw(st.integers(1, 4))
    group = [_item(k, draw(st.lists(_LOCAL, min_size=0, max_size=3, unique=True))) for k in range(n)]
    names = [nd.name for it in group for nd in it.frag.nodes]
    kept = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    extra = draw(st.lists(st.sampled_from(["<unnamed #1>", "MaxPool", "c0_MaxPool_nhwc", "c1_c0_Pad", "c0_X",
                                           "c2_MaxPool", "X", "c1_MaxPool"]), unique=True))
    keys = draw(st.permutations(list(dict.fromkeys(kept + extra))))
    raw = {k: draw(_EPS) for k in keys} if draw(st.booleans()) or not keys else None
    if raw is None and draw(st.booleans()):
        raw = {}
    return group, raw


@settings(max_examples=400, deadline=None)
@given(_sessions())
def test_shared_placement_is_the_placement_of_the_renamed_assignment(session):
    group, raw = session
    shared = batch._Shared(group, Outcome(True, "done", assignment=raw))
    for it in group:
        assert shared.placement(it, EP, False) == _exact(it, group, raw)


def test_a_batch_of_a_thousand_cases_reads_each_recorded_node_a_bounded_number_of_times():
    """The point of reading once: 1,000 cases of one session, each placed from its own entries."""
    group = [_item(k, ["MaxPool"]) for k in range(1000)]
    raw = {nd.name: EP for it in group for nd in it.frag.nodes}
    shared = batch._Shared(group, Outcome(True, "done", assignment=raw))
    for it in group[:5] + group[-5:]:
        assert shared.placement(it, EP, False) == _exact(it, group, raw)
    assert shared.stray == []
