"""The same job as the baseline and reclaim-tui, written as DBOS durable workflows.

DBOS (https://docs.dbos.dev) is the nearest well-kept library: durable
workflows whose steps are checkpointed in a system database (SQLite here).
One workflow per job, keyed by the job's idempotency key as its workflow id
(so a restart resumes it instead of paying twice): a `create` step
(background=True, the stock google-genai client), `get` steps with a durable
sleep that doubles from --first-poll, and a `deliver` step writing `<key>.md`
and `<key>.json` atomically (temp file, fsync, rename, directory fsync) —
what the baseline's sink and ours do. A queue runs 16 workflows at a time
(reclaim-tui's default concurrency).

It marks each delivered job in a small `jobs` table of --db (status
'consumed'), so the benchmark's runner counts progress the same way for
every design.

Run by benchmarks/service.py with a Python that has dbos installed
(`--dbos-python`, default ./.venv-dbos/bin/python); not a dependency of
reclaim-tui.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, SetWorkflowID
from google import genai
from google.genai import types

TERMINAL = {"completed", "failed", "cancelled", "incomplete", "budget_exceeded"}

ap = argparse.ArgumentParser()
ap.add_argument("--base-url", required=True)
ap.add_argument("--db", required=True)
ap.add_argument("--jobs", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--first-poll", type=float, default=2.0)
ap.add_argument("--concurrency", type=int, default=16)
args = ap.parse_args()

client = genai.Client(
    api_key=os.environ["GEMINI_API_KEY"],
    http_options=types.HttpOptions(base_url=args.base_url),
)
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
_progress_lock = threading.Lock()
_progress = sqlite3.connect(args.db, check_same_thread=False, isolation_level=None)
_progress.execute("PRAGMA journal_mode=WAL")
_progress.execute("CREATE TABLE IF NOT EXISTS jobs (idem TEXT PRIMARY KEY, status TEXT)")

config: DBOSConfig = {
    "name": "reclaim-bench",
    "system_database_url": f"sqlite:///{args.db}.dbos",
    "log_level": "WARNING",
}
DBOS(config=config)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@DBOS.step()
def create(job: dict[str, Any], key: str) -> str:
    op = client.interactions.create(
        model=job["model"], input=job["input"], background=True, labels={"idem": key}
    )
    return str(op.id)


@DBOS.step()
def poll(handle: str) -> dict[str, Any] | None:
    op = client.interactions.get(handle)
    if op.status not in TERMINAL:
        return None
    dumped: dict[str, Any] = op.model_dump(mode="json", exclude_none=True)
    return dumped


@DBOS.step()
def deliver(key: str, interaction: dict[str, Any]) -> None:
    text = str(interaction.get("output_text") or "")
    _atomic_write(out / f"{key}.md", text.encode())
    _atomic_write(out / f"{key}.json", json.dumps(interaction, indent=2).encode())
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    with _progress_lock:
        _progress.execute("INSERT OR REPLACE INTO jobs VALUES (?, 'consumed')", (key,))


@DBOS.workflow()
def run_job(key: str, job: dict[str, Any]) -> str:
    handle = create(job, key)
    delay = args.first_poll
    while True:
        if delay > 0:
            DBOS.sleep(delay)
        interaction = poll(handle)
        if interaction is not None:
            break
        delay = max(delay * 2, 0.05)
    deliver(key, interaction)
    return str(interaction.get("status"))


def main() -> None:
    DBOS.launch()
    # Polled every 50 ms, as `reclaim-tui run --idle-sleep 0.05` is in the same run
    # (DBOS's default is 1 s, which would only make it look slower).
    queue = DBOS.register_queue(
        "jobs", worker_concurrency=args.concurrency, polling_interval_sec=0.05
    )
    handles = []
    with open(args.jobs, encoding="utf-8") as f:
        jobs = [json.loads(line) for line in f if line.strip()]
    for job in jobs:
        key = hashlib.sha256(json.dumps(job, sort_keys=True).encode()).hexdigest()[:32]
        with SetWorkflowID(key):
            handles.append(queue.enqueue(run_job, key, job))
    for h in handles:
        h.get_result()
    DBOS.destroy()


if __name__ == "__main__":
    main()
