"""Result records: streamed JSONL (one environment line, then one line per case), resume,
sharding, merging of shards and summaries. Nothing here decides a verdict."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

SCHEMA = "onnx-dml-bench/result/1"
VERDICTS = ("PASS", "FAIL", "NOT_OFFLOADED", "EP_REJECTED", "ERROR", "CRASH", "TIMEOUT", "SKIPPED", "NOT_EXPRESSIBLE")
DEFAULT_FAIL_ON = ("FAIL", "CRASH", "TIMEOUT")


def env_id(env: dict) -> str:
    keys = ("machine", "os", "cpu", "ort_package", "ort_version", "ep", "device", "driver")
    return hashlib.sha256(json.dumps([env.get(k) for k in keys]).encode()).hexdigest()[:12]


class ResultWriter:
    """Appends records to a JSONL file, flushing after every batch."""

    def __init__(self, path: Path, env: dict, resume: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.env = dict(env)
        self.env.setdefault("record", "environment")
        self.env["schema"] = SCHEMA
        self.env["env_id"] = env_id(env)
        mode = "a" if resume and self.path.exists() else "w"
        if mode == "a":
            _drop_partial_line(self.path)
        self.f = open(self.path, mode, encoding="utf-8")
        self.f.write(json.dumps(self.env, sort_keys=True) + "\n")
        self.f.flush()

    def write(self, records: list[dict]) -> None:
        for r in records:
            r["env_id"] = self.env["env_id"]
            self.f.write(json.dumps(r, sort_keys=True, allow_nan=True) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def _drop_partial_line(path: Path) -> None:
    """An interrupted run may leave a half-written last line: cut it before appending."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def read(path: Path) -> tuple[list[dict], list[dict]]:
    """(environment records, case records) of a JSONL results file. A truncated last line (an
    interrupted run) is ignored; any other malformed line is an error naming the line."""
    envs, recs = [], []
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines):
                break
            raise ValueError(f"{path}:{i}: not a JSON record: {e}") from None
        (envs if r.get("record") == "environment" else recs).append(r)
    return envs, latest(recs)


def latest(recs: list[dict]) -> list[dict]:
    """Keep the last record per (case, EP) (a resumed run may repeat a case)."""
    by = {}
    for r in recs:
        by[(r["case_id"], r.get("ep"))] = r
    return list(by.values())


def done_ids(path: Path) -> set[str]:
    if not Path(path).exists():
        return set()
    _, recs = read(path)
    return {r["case_id"] for r in recs if r.get("verdict")}


def in_shard(case_id: str, k: int, n: int) -> bool:
    """Deterministic slice K of N (1-based), by a hash of the case id."""
    h = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "little")
    return h % n == k - 1


def merge(paths: list[Path], out: Path) -> tuple[int, int]:
    envs, recs = [], []
    for p in paths:
        e, r = read(p)
        envs += e
        recs += r
    seen_env = {}
    for e in envs:
        seen_env.setdefault(e.get("env_id"), e)
    recs = latest(recs)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for e in seen_env.values():
            f.write(json.dumps(e, sort_keys=True) + "\n")
        for r in sorted(recs, key=lambda r: (r.get("ep", ""), r["case_id"])):
            f.write(json.dumps(r, sort_keys=True) + "\n")
    return len(seen_env), len(recs)


def counts(recs: list[dict]) -> Counter:
    return Counter(r["verdict"] for r in recs)


def matrix(recs: list[dict]) -> dict:
    """{(ep, op, dtype): Counter(verdict)}"""
    out: dict = {}
    for r in recs:
        out.setdefault((r.get("ep"), r["op"], r["dtype"]), Counter())[r["verdict"]] += 1
    return out


def failing(recs: list[dict], fail_on=DEFAULT_FAIL_ON) -> list[dict]:
    return [r for r in recs if r["verdict"] in fail_on]
