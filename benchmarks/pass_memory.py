"""A pass's memory against its results' size: N jobs completed with an M MB
text each (the emulator's admin `finish`), then one `reclaim-tui tick`
process; its Python allocations' peak (tracemalloc) and its RSS high-water
mark (VmHWM), less those of the same pass with 1 kB results.

    python benchmarks/pass_memory.py [--mb 50] [--results 2] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _emulator import API_KEY, EmulatorProcess

PROBE = """
import json, sys, tracemalloc
tracemalloc.start()
from reclaim_tui.cli import cli
try:
    cli.main(sys.argv[1:], standalone_mode=False)
finally:
    status = open("/proc/self/status").read().split("\\n")
    hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    counts = {"traced_peak": tracemalloc.get_traced_memory()[1], "rss_peak": hwm * 1024}
    print(json.dumps(counts), file=sys.stderr)
"""


def one_pass(root: Path, size: int, results: int, concurrency: int) -> dict[str, int]:
    root.mkdir()
    with EmulatorProcess("--latency", "3600") as emu:
        jobs = root / "jobs.jsonl"
        jobs.write_text("".join(json.dumps({"input": f"big {i}"}) + "\n" for i in range(results)))
        flags = ["--db", str(root / "ledger.db"), "--base-url", emu.base_url, "--api-key", API_KEY]
        flags += ["--first-poll", "0"]
        cmd = [sys.executable, "-m", "reclaim_tui", "submit", str(jobs), *flags]
        subprocess.run(cmd, check=True, capture_output=True)
        for n, create in enumerate(emu.admin.creates()):
            emu.admin.finish(create["id"], "completed", str(n % 10) * size)
        cmd = [sys.executable, "-c", PROBE, "tick", *flags, "--out", str(root / "out")]
        cmd += ["--concurrency", str(concurrency)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    counts: dict[str, int] = json.loads(done.stderr.strip().splitlines()[-1])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--results", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        small = one_pass(Path(tmp) / "small", 1_000, args.results, args.concurrency)
        large = one_pass(Path(tmp) / "large", size, args.results, args.concurrency)
    for key, what in (("traced_peak", "Python allocations' peak"), ("rss_peak", "RSS peak")):
        grown = (large[key] - small[key]) / 1e6
        print(
            f"{args.results} results of {args.mb:g} MB: {what} +{grown:,.0f} MB"
            f" ({grown / args.mb:.1f}x one result; {large[key] / 1e6:,.0f} MB in all)"
        )


if __name__ == "__main__":
    main()
