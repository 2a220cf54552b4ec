"""What the commands print: one line for a person (rich markup on a terminal, plain text in a file
or a CI log), verdict tables, and the run's progress."""
from __future__ import annotations

import sys
import time
from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ..record import Verdict

console = Console(stderr=True)
out_console = Console()


def say(msg: str, err: bool = True) -> None:
    """One line for a person: rich markup on a terminal, plain text (no colour, no cursor control,
    no wrapping) when the stream is a file or a CI log."""
    con = console if err else out_console
    if con.is_terminal:
        con.print(msg)
    else:
        print(Text.from_markup(msg).plain, file=sys.stderr if err else sys.stdout, flush=True)


def plain(msg: str, err: bool = False) -> None:
    """A line printed as it is (no markup)."""
    con = console if err else out_console
    if con.is_terminal:
        con.print(msg, markup=False, highlight=False)
    else:
        print(msg, file=sys.stderr if err else sys.stdout, flush=True)


def log(msg: str) -> None:
    """Progress of the triage commands, printed as it is (signature labels are in brackets)."""
    plain(msg, err=True)


def summary_table(recs: list, title: str) -> Table:
    t = Table(title=title or None)
    t.add_column("operator")
    t.add_column("dtype")
    verdicts = [v for v in Verdict if any(r.verdict == v for r in recs)]
    for v in verdicts:
        t.add_column(v.value, justify="right", style=v.style)
    rows: dict = {}
    for r in recs:
        rows.setdefault((r.op, r.dtype), Counter())[r.verdict] += 1
    for (op, dt), cnt in sorted(rows.items()):
        t.add_row(op, dt, *[str(cnt.get(v, "")) for v in verdicts])
    return t


def print_summary(recs: list, title: str) -> None:
    """Verdict counts per operator and data type: a table fitted to the terminal, or one plain line
    per row in a log."""
    if out_console.is_terminal:
        # the title on its own line: a table narrower than it would wrap it mid-phrase
        out_console.print(title, style="bold", markup=False, highlight=False)
        out_console.print(summary_table(recs, ""))
        return
    print(title)
    rows: dict = {}
    for r in recs:
        rows.setdefault((r.op, r.dtype), Counter())[r.verdict] += 1
    for (op, dt), cnt in sorted(rows.items()):
        print(f"  {op} {dt}: " + ", ".join(f"{v} {cnt[v]}" for v in Verdict if cnt.get(v)))
    sys.stdout.flush()


class Progress:
    """A progress bar laid out for the terminal, or plain lines (at most one per 5 % or 10 s) in
    a log: no cursor control, no line broken mid-phrase."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done = name, total, 0
        self.bar = None
        self.last_t, self.last_n = time.monotonic(), 0
        self.t0 = time.monotonic()
        if console.is_terminal:
            self.bar = RichProgress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                    MofNCompleteColumn(), TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                    TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)
            self.task = self.bar.add_task(name, total=total, counts="")

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            return self.bar.__exit__(*exc)
        return False

    def advance(self, n: int, counts: Counter) -> None:
        self.done += n
        text = " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))
        if self.bar is not None:
            self.bar.update(self.task, advance=n, counts=text)
            return
        now = time.monotonic()
        step = max(1, self.total // 20)
        if self.done >= self.total or self.done - self.last_n >= step or now - self.last_t >= 10:
            self.last_t, self.last_n = now, self.done
            print(f"{self.name}: {self.done}/{self.total} cases, {now - self.t0:.0f} s, {text}",
                  file=sys.stderr, flush=True)
