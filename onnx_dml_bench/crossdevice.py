"""The devices of one model compared with each other: the odd device out.

Records of runs bound to one device each (``run --devices``: an environment with a
``device_unit``) are grouped into siblings: devices of the same model, driver and build (EP, its
package and options other than the device, ONNX Runtime, library versions, graph optimisation),
on one host or on several (``merge`` of several hosts' results). On every case that two or more
siblings ran, each device's answer — its verdict and a digest of each output of the EP under test
(``OutputStats.digest``: records hold no tensors) — is compared bit for bit. Where they differ, the
devices outside the strict majority get the finding DEVICE_DIFFERS, naming them and those they
differ from; where no answer has a strict majority (two devices, or a tie), every device of the case
gets it. Identical bits are the norm on these operators across devices of one model, so a device
that disagrees with its siblings is news: a faulty unit, a driver or firmware difference.

:func:`flag` is idempotent: it drops the finding it gave before and gives it again from the
records it is handed (a run, then a merge with other hosts' devices).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from .record import FINDINGS, CaseRecord, Environment, jsonable

FINDING = "DEVICE_DIFFERS"
LABEL = f"finding:{FINDING}"
#: what the finding's sentence in a record's reason starts with (dropped and written again by :func:`flag`)
REASON_MARK = f"finding {FINDING}: "
#: the EP options that only choose a device (not part of what makes two devices siblings)
DEVICE_OPTIONS = ("device_id", "deviceId", "device_index")
#: the environment fields that make devices siblings (with the EP options other than the device)
SIBLING_FIELDS = ("ep", "ep_key", "ep_package", "ort_package", "ort_version", "device", "driver", "optimization",
                  "versions")


@dataclass
class Difference:
    """One case on which sibling devices answered differently."""
    case_id: str
    op: str
    group: str                                        # the siblings' model, driver and build, in words
    answers: dict[str, str] = field(default_factory=dict)    # env_id -> its answer (verdict, digests)
    odd: list[str] = field(default_factory=list)      # env_ids outside the majority
    outputs: list[str] = field(default_factory=list)  # the outputs whose bits differ
    verdicts: dict[str, str] = field(default_factory=dict)   # env_id -> verdict


def device_name(env: Environment) -> str:
    """A device in words: ``device 1 (NVIDIA H200, GPU-…, 0000:19:00.0) on host``."""
    u = env.get("device_unit") or {}
    bits = [str(x) for x in (env.device, u.get("uuid"), u.get("pci_bus_id")) if x]
    host = f" on {env.machine}" if env.machine else ""
    return f"device {u.get('index', '?')} ({', '.join(bits)}){host}"


def sibling_key(env: Environment) -> str | None:
    """What devices must share to be compared bit for bit; None: the environment is not bound to a device."""
    if not env.get("device_unit"):
        return None
    flat = env.flat()
    key = {k: flat.get(k) for k in SIBLING_FIELDS}
    key["ep_options"] = {k: v for k, v in (env.ep_options or {}).items() if k not in DEVICE_OPTIONS}
    return json.dumps(jsonable(key), sort_keys=True)


def group_name(env: Environment) -> str:
    return f"{env.ep} on {env.device}, driver {env.driver or '?'}, {env.ort_package} {env.ort_version}"


def answer(rec: CaseRecord) -> tuple[str, tuple]:
    """What a device answered on a case: its verdict and the digest of each output."""
    return rec.verdict, tuple(sorted((k, o.digest or "") for k, o in rec.outputs.items()))


def differences(envs: list[Environment], recs: list[CaseRecord]) -> list[Difference]:
    """Every case on which sibling devices answered differently, the odd devices named."""
    keys = {e.env_id: sibling_key(e) for e in envs}
    names = {e.env_id: group_name(e) for e in envs}
    cases: dict[tuple[str, str], dict[str, CaseRecord]] = {}
    for r in recs:
        k = keys.get(r.env_id or "")
        if k is not None:
            cases.setdefault((k, r.case_id), {})[r.env_id] = r
    out = []
    for (_, case_id), by_env in sorted(cases.items(), key=lambda kv: kv[0][1]):
        if len(by_env) < 2:
            continue
        answers = {eid: answer(r) for eid, r in by_env.items()}
        counts = Counter(answers.values())
        if len(counts) == 1:
            continue
        (top, n), *rest = counts.most_common()
        majority = top if not rest or rest[0][1] < n else None
        odd = sorted(eid for eid, a in answers.items() if a != majority)
        first = next(iter(by_env.values()))
        outs = sorted({name for a in answers.values() for name, _ in a[1]
                       if len({dict(b[1]).get(name) for b in answers.values()}) > 1})
        out.append(Difference(case_id, first.op, names[first.env_id],
                              {eid: f"{a[0]} {dict(a[1])}" for eid, a in answers.items()}, odd, outs,
                              {eid: r.verdict for eid, r in by_env.items()}))
    return out


def flag(envs: list[Environment], recs: list[CaseRecord]) -> list[Difference]:
    """Give the finding DEVICE_DIFFERS to the records of the odd devices of every :func:`differences`
    (in place, dropping the finding given before), and return the differences."""
    for r in recs:
        if LABEL in r.labels:
            _drop(r)
    diffs = differences(envs, recs)
    by_id = {e.env_id: e for e in envs}
    index = {(r.case_id, r.env_id): r for r in recs}
    for d in diffs:
        for eid in d.odd:
            others = sorted((x for x in d.answers if x != eid), key=lambda x: device_name(by_id[x]))
            what = f"outputs {', '.join(d.outputs)} differ bit for bit" if d.outputs else \
                f"verdict {d.verdicts[eid]} where they answered {', '.join(sorted({d.verdicts[x] for x in others}))}"
            text = (f"{REASON_MARK}{device_name(by_id[eid])}: {what} from {len(others)} sibling device(s) "
                    f"({'; '.join(device_name(by_id[x]) for x in others)})"
                    + ("" if len(d.odd) < len(d.answers) else "; no majority: any of them may be the odd one"))
            _give(index[(d.case_id, eid)], text)
    return diffs


def _give(r: CaseRecord, text: str) -> None:
    r.labels = sorted(set(r.labels) | {LABEL})
    found = {lab[8:] for lab in r.labels if lab.startswith("finding:")} | {r.finding}
    r.finding = next(f for f in FINDINGS if f in found)
    r.reason = f"{r.reason}; {text}" if r.reason else text


def _drop(r: CaseRecord) -> None:
    r.labels = [lab for lab in r.labels if lab != LABEL]
    if REASON_MARK in r.reason:
        r.reason = r.reason[:r.reason.index(REASON_MARK)].rstrip("; ")
    found = {lab[8:] for lab in r.labels if lab.startswith("finding:")}
    r.finding = next((f for f in FINDINGS if f in found), None) if r.finding == FINDING else r.finding


def summary(envs: list[Environment], diffs: list[Difference]) -> list[str]:
    """One line per device with differences: how many cases set it apart."""
    by_id = {e.env_id: e for e in envs}
    n = Counter(eid for d in diffs for eid in d.odd)
    return [f"{FINDING}: {device_name(by_id[eid])} differs from its siblings on {k} case(s)"
            for eid, k in sorted(n.items(), key=lambda kv: -kv[1])]
