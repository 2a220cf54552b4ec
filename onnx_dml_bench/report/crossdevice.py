"""The report's cross-device section: the devices of one model, driver and build that ran the same
cases (``run --devices ... --same-cases``, or several hosts' results merged), and the cases on which
one device's outputs differ bit for bit from its siblings' (``crossdevice``: the finding
DEVICE_DIFFERS). Its own template, ``crossdevice.html.j2``."""
from __future__ import annotations

from collections import Counter

from .. import crossdevice as X
from . import data as D

#: the difference rows the page lists (the records hold every one)
MAX_ROWS = 200


def view(res: D.Results) -> dict | None:
    """What the section shows; None when no environment of ``res`` is bound to a device."""
    bound = list({e.env_id: e for e in res.envs if X.sibling_key(e) is not None}.values())   # once each
    if not bound:
        return None
    diffs = X.differences(res.envs, res.records)
    ran = Counter(r.env_id for r in res.records)
    odd = Counter(eid for d in diffs for eid in d.odd)
    groups: dict[str, list] = {}
    for e in bound:
        groups.setdefault(X.sibling_key(e), []).append(e)
    names = {e.env_id: X.device_name(e) for e in bound}
    return {
        "groups": [{"name": X.group_name(es[0]),
                    "devices": [{"name": names[e.env_id], "env_id": e.env_id, "cases": ran[e.env_id],
                                 "odd": odd[e.env_id]} for e in sorted(es, key=lambda e: (e.machine, str(
                                     (e.get("device_unit") or {}).get("index"))))]}
                   for es in groups.values()],
        "total": len(diffs),
        "rows": [{"case_id": d.case_id, "op": d.op, "group": d.group, "outputs": ", ".join(d.outputs) or "(verdict)",
                  "odd": [names[eid] for eid in d.odd], "no_majority": len(d.odd) == len(d.answers),
                  "verdicts": ", ".join(f"{names[eid].split(' (')[0]}: {v}" for eid, v in sorted(d.verdicts.items(), key=lambda kv: names[kv[0]]))}
                 for d in diffs[:MAX_ROWS]],
        "more": max(0, len(diffs) - MAX_ROWS),
        "text": D.FINDING_TEXT[X.FINDING],
    }
