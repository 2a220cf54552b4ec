"""A failure's signature: what a failure is, so that two records can be said to fail the same way.

A signature is (operator, verdict, attribution, set of failing outputs, labels of the failure): a
tie-order failure must stay a tie-order failure, not turn into a shape failure. The shrinker keeps
it while it reduces a case, the fuzzer groups its samples by it, triage takes one case of each,
and the reports link the failures that have one to their shrunk case and bundle.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .record import RERUN_LABEL, Verdict


@dataclass(frozen=True)
class Signature:
    """What a failure is: same operator, verdict, attribution, failing outputs and labels."""
    op: str
    verdict: str
    attribution: str | None
    outputs: tuple[str, ...]
    labels: tuple[str, ...]

    def text(self) -> str:
        s = f"{self.op} {self.verdict}"
        if self.attribution:
            s += f" {self.attribution}"
        if self.outputs:
            s += f" outputs={','.join(self.outputs)}"
        if self.labels:
            s += f" [{', '.join(self.labels)}]"
        return s

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Signature":
        return cls(d["op"], d["verdict"], d.get("attribution"), tuple(d.get("outputs") or ()),
                   tuple(d.get("labels") or ()))


def signature(rec) -> Signature | None:
    """The signature of a result record (record.CaseRecord); None for a PASS or a verdict that
    is no failure (never sent to an EP: ``Verdict.NOT_SENT``). Labels of the failure: the record's
    labels without the CPU side's and EP side's choice among allowed answers (``cpu-took:``,
    ``ep-took:``), which say how another side behaved, not what failed, and without
    ``batch-rerun`` (how the case came to be run, not how it failed)."""
    if rec.verdict == Verdict.PASS or rec.verdict in Verdict.NOT_SENT:
        return None
    failing = tuple(sorted(k for k, o in rec.outputs.items() if not o.match))
    labels = tuple(sorted({lab for lab in rec.labels if not lab.startswith(("cpu-took:", "ep-took:"))
                           and lab != RERUN_LABEL}))
    return Signature(rec.op, rec.verdict, rec.attribution, failing, labels)
