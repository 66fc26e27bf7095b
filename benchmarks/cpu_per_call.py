"""Benchmark 3: client CPU per API call, through our backend and through the stock SDK.

The emulator runs in its own process, so `time.process_time()` in the client process
counts only the client's work: building the request, the HTTP exchange on the client
side, parsing, mapping. Each variant runs in a fresh process (--runs of them); a run
does --calls creates, --calls gets of pending interactions and --calls gets of
completed ones (after 20 unmeasured warm-up calls), and reports the mean per call;
the table shows medians over runs.

  reclaim-tui          GeminiBackend (fast path: memoized SDK helpers + fast get)
  … on DefaultAioHttpClient   the same with `HttpOptions(httpx_async_client=…)` set to
                       google-genai's `DefaultAioHttpClient` (httpx over aiohttp, the
                       httpx-aiohttp package); `aiohttp2`: httpx-aiohttp's httpx2 client
                       (the SDK's own httpx2 over aiohttp; what `--transport aiohttp`
                       sends through). Both need httpx-aiohttp installed (the `aiohttp`
                       extra): `--variants` picks what to run.
  … httpx2 variants    `plain`: a plain httpx2.AsyncClient (without the SDK's wrapper
                       that keeps a pool per event loop); `keepalive`: the same with
                       100 kept connections, kept 60 s; `http2`: with http2=True
                       (over plain http still HTTP/1.1: HTTP/2 is negotiated in TLS).
  GeminiBackend stock  GeminiBackend(fast_path=False): the same backend on the stock SDK
  SDK aio              genai.Client().aio.interactions.create / get (default options)
  SDK sync             genai.Client().interactions.create / get, as the baseline calls it

    python benchmarks/cpu_per_call.py [--calls 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, median, table
from _emulator import API_KEY, EmulatorProcess

VARIANTS = {
    "ours": "reclaim-tui (fast path)",
    "aiohttp": "reclaim-tui on DefaultAioHttpClient",
    "aiohttp2": "reclaim-tui on Httpx2AiohttpClient",
    "plain": "reclaim-tui on a plain httpx2 client",
    "keepalive": "reclaim-tui, httpx2 pool 100 kept 60 s",
    "http2": "reclaim-tui, httpx2 http2=True",
    "stock": "GeminiBackend stock",
    "aio": "SDK aio",
    "sync": "SDK sync (baseline's calls)",
}
WARMUP = 20
MODEL = "gemini-flash-latest"


def _finish_all(base_url: str, ids: list[str]) -> None:
    for interaction_id in ids:
        request = urllib.request.Request(
            f"{base_url}/_emulator/interactions/{interaction_id}/finish",
            data=json.dumps({"status": "completed"}).encode(),
            method="POST",
            headers={"content-type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=30).close()


def _aiohttp() -> Any:
    """google-genai's own `DefaultAioHttpClient`: httpx over aiohttp (httpx-aiohttp)."""
    from google.genai._interactions import DefaultAioHttpClient

    return DefaultAioHttpClient()


def _aiohttp2() -> Any:
    """httpx-aiohttp's client for httpx2, the SDK's own stack, over aiohttp."""
    from httpx_aiohttp.httpx2 import Httpx2AiohttpClient

    return Httpx2AiohttpClient()


def _httpx2(**kwargs: Any) -> Callable[[], Any]:
    """An httpx2 client with `kwargs`, as `HttpOptions.async_client_args` would build
    one, without the SDK's per-event-loop wrapper around it."""

    def make() -> Any:
        import httpx2

        return httpx2.AsyncClient(**kwargs)

    return make


def _limits() -> Any:
    import httpx2

    return httpx2.Limits(max_connections=100, max_keepalive_connections=100, keepalive_expiry=60)


_CLIENTS: dict[str, Callable[[], Any]] = {
    "aiohttp": _aiohttp,
    "aiohttp2": _aiohttp2,
    "plain": _httpx2(),
    "keepalive": lambda: _httpx2(limits=_limits())(),
    # Over plain http an httpx client speaks HTTP/1.1 even with http2 on (HTTP/2 is
    # negotiated in TLS); the row shows what the setting costs, not HTTP/2 itself.
    "http2": _httpx2(http2=True),
}


def _calls(which: str, base_url: str) -> tuple[Any, Any, Any]:
    """(create(i) -> id, get(id), close) for one variant, all awaitable."""
    from google import genai
    from google.genai import types

    from reclaim_tui.core.gemini import GeminiBackend
    from reclaim_tui.core.models import JobSpec

    if which in ("ours", "stock", *_CLIENTS):
        http_client: Any = _CLIENTS[which]() if which in _CLIENTS else None
        # No http_client argument unless one is set: older trees (PYTHONPATH) lack it.
        extra = {"http_client": http_client} if http_client is not None else {}
        backend = GeminiBackend(API_KEY, base_url, fast_path=which != "stock", **extra)

        async def create(i: int) -> str:
            spec = JobSpec(input=f"Summarise report #{i} in one line.", model=MODEL)
            return (await backend.create(spec, f"{i:032x}")).id

        return create, backend.get, backend.aclose
    client = genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=base_url))
    if which == "aio":
        sdk = client.aio.interactions

        async def create(i: int) -> str:
            made = await sdk.create(
                model=MODEL,
                input=f"Summarise report #{i} in one line.",
                background=True,
                labels={"idem": f"{i:032x}"},
            )
            return str(made.id)

        return create, sdk.get, client.aio.aclose
    sync = client.interactions

    async def create_sync(i: int) -> str:
        made = sync.create(
            model=MODEL,
            input=f"Summarise report #{i} in one line.",
            background=True,
            labels={"idem": f"{i:032x}"},
        )
        return str(made.id)

    async def get_sync(handle: str) -> Any:
        return sync.get(handle)

    async def close() -> None:
        client.close()

    return create_sync, get_sync, close


async def _per_call(fn: Callable[[int], Awaitable[Any]], n: int) -> float:
    for i in range(WARMUP):
        await fn(i)
    start = time.process_time()
    for i in range(n):
        await fn(i)
    return (time.process_time() - start) / n * 1000


async def child(which: str, base_url: str, n: int) -> dict[str, float]:
    create, get, close = _calls(which, base_url)
    ids: list[str] = []

    async def create_one(i: int) -> None:
        ids.append(await create(len(ids)))

    try:
        out = {"create": await _per_call(create_one, n)}
        out["get_pending"] = await _per_call(lambda i: get(ids[i % len(ids)]), n)
        await asyncio.to_thread(_finish_all, base_url, ids)
        out["get_completed"] = await _per_call(lambda i: get(ids[i % len(ids)]), n)
    finally:
        await close()
    return out


def _measure(which: str, base_url: str, n: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, "--base-url", base_url, "--calls", str(n)],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), **dict(__import__("os").environ)},
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--child", choices=list(VARIANTS), help=argparse.SUPPRESS)
    ap.add_argument("--base-url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(asyncio.run(child(a.child, a.base_url, a.calls))))
        return
    chosen = [v for v in a.variants.split(",") if v]
    # The aiohttp variants need httpx-aiohttp, not a dependency: left out (and said)
    # where it is missing, rather than failing the whole run in its first child.
    if importlib.util.find_spec("httpx_aiohttp") is None:
        missing = [v for v in chosen if v.startswith("aiohttp")]
        if missing:
            print(f"left out (httpx-aiohttp not installed): {', '.join(missing)}")
        chosen = [v for v in chosen if v not in missing]
    from google.genai import __version__ as sdk

    print(f"google-genai {sdk}; load before: {Path('/proc/loadavg').read_text().strip()}")
    results: dict[str, list[dict[str, float]]] = {v: [] for v in chosen}
    # Interactions never finish by themselves: the child completes them via the admin API.
    with EmulatorProcess("--latency", "1000000") as emu:
        for _ in range(a.runs):
            for which in chosen:
                emu.reset()
                results[which].append(_measure(which, emu.base_url, a.calls))
    keys = ("create", "get_pending", "get_completed")
    rows = [[VARIANTS[v], *(median([r[k] for r in results[v]]) for k in keys)] for v in chosen]
    print(
        f"Client CPU per call (ms), {a.calls} calls each, {a.runs} runs in fresh processes,"
        " medians; emulator in its own process"
    )
    rows = [[*r, r[1] + r[3]] for r in rows]  # a job: its create and its completed get
    print(table(["client", "create", "get (pending)", "get (completed)", "job"], rows))
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")
    if "ours" in results:
        ours = rows[chosen.index("ours")]
        for v in chosen:
            if v != "ours":
                other = rows[chosen.index(v)]
                ratios = ", ".join(
                    f"{k} {other[i + 1] / ours[i + 1]:.1f}x" for i, k in enumerate(keys)
                )
                print(f"{VARIANTS[v]} / reclaim-tui: {ratios}")


if __name__ == "__main__":
    main()
