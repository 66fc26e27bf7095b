"""Start-up CPU of the commands cron and operators run most (issue 27, item 1).

Each measured run is a fresh process: `reclaim-tui tick` with nothing due (an
existing empty ledger, no jobs file; `--base-url` of a closed port: nothing is
called), `reclaim-tui status`, and `python -c pass` for scale. CPU is the child's
user + system time (RUSAGE_CHILDREN). With `--src DIR` given more than once, the
same commands run against each source tree (e.g. a `git worktree` of the commit
before), alternating run by run, so both see the same load. Bytecode is compiled
once before the measured runs (a private PYTHONPYCACHEPREFIX), as for an
installed package, even where PYTHONDONTWRITEBYTECODE is set.

    python benchmarks/startup.py [--runs 9] [--src src --src /tmp/before/src]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, median, table

COMMANDS = {
    "tick, nothing due": ["tick", "--base-url", "http://127.0.0.1:9", "--api-key", "k"],
    "status": ["status"],
}


def _cpu(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {done.returncode}: {done.stderr[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(tree: str, pycache: Path) -> dict[str, str]:
    """The tree on the path, its bytecode written and read (as an installed package's
    is) under a private `PYTHONPYCACHEPREFIX`, even where PYTHONDONTWRITEBYTECODE is set."""
    env = {**os.environ, "PYTHONPATH": tree, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--src", action="append", default=[], help="a source tree (default: src)")
    a = ap.parse_args()
    trees = [str(Path(s).resolve()) for s in a.src] or [str(ROOT / "src")]
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as work:
        envs = {tree: _env(tree, Path(work) / f"pycache-{i}") for i, tree in enumerate(trees)}
        # A ledger per tree: a newer tree's schema is refused by an older one.
        dbs = {tree: str(Path(work) / f"ledger-{i}.db") for i, tree in enumerate(trees)}
        for tree in trees:  # each tree makes its ledger and its bytecode once, unmeasured
            env, db = envs[tree], dbs[tree]
            _cpu(
                [sys.executable, "-m", "reclaim_tui", *COMMANDS["tick, nothing due"], "--db", db],
                env,
                work,
            )
        for _ in range(a.runs):
            for tree in trees:
                env, db = envs[tree], dbs[tree]
                cpu.setdefault(("python -c pass", tree), []).append(
                    _cpu([sys.executable, "-c", "pass"], env, work)
                )
                for name, args in COMMANDS.items():
                    cmd = [sys.executable, "-m", "reclaim_tui", *args, "--db", db]
                    cpu.setdefault((name, tree), []).append(_cpu(cmd, env, work))
    rows = []
    for (name, tree), values in cpu.items():
        rows.append(
            [name, tree, f"{median(values):.3f}", f"{min(values):.3f}", f"{max(values):.3f}"]
        )
    print(f"\nCPU seconds per process, {a.runs} runs each, alternating")
    print(table(["command", "source", "median", "min", "max"], rows))
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
