"""Running the emulator: in-process (`EmulatorServer`) or as a process (`run_forever`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

from aiohttp import web

from reclaim_tui.emulator.app import STORE_KEY, WEBHOOKS_KEY, make_app
from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.emulator.webhooks import WebhookService

__all__ = ["EmulatorServer", "run_forever", "serve"]


class EmulatorServer:
    """The emulator on a loopback port, for tests and the demo.

        async with EmulatorServer(EmulatorConfig(latency=0)) as emu:
            client = genai.Client(api_key=emu.api_key, http_options={"base_url": emu.base_url})

    `port=0` picks a free port. `store` gives direct access to the state.
    """

    def __init__(
        self, config: EmulatorConfig | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.config = config or EmulatorConfig()
        self.host = host
        self.port = port
        self.app = make_app(self.config)
        #: How long stop() waits for requests still running (slow-fault sleeps).
        self.shutdown_timeout = 1.0
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def api_key(self) -> str | None:
        return self.config.api_key

    @property
    def store(self) -> InteractionStore:
        return self.app[STORE_KEY]

    @property
    def webhooks(self) -> WebhookService:
        """Static webhooks, the delivery log and the signer (webhooks.py)."""
        return self.app[WEBHOOKS_KEY]

    async def start(self) -> None:
        # access_log=None: one log line per request would dominate the CPU
        # cost when benchmarks poll thousands of interactions.
        self._runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=self.shutdown_timeout
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        # TCPSite does not expose the bound port; port=0 needs it from the socket.
        sockets = getattr(site._server, "sockets", None) or ()
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self.webhooks.issuer = self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> EmulatorServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    config: EmulatorConfig | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until cancelled; `ready(base_url)` is called once the port is bound."""
    async with EmulatorServer(config, host, port) as server:
        if ready is not None:
            ready(server.base_url)
        await asyncio.Event().wait()


def run_forever(
    host: str = "127.0.0.1",
    port: int = 8765,
    config: EmulatorConfig | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Blocking entry point for `reclaim-tui emulator`; returns on Ctrl-C."""
    try:
        asyncio.run(serve(host, port, config, ready))
    except KeyboardInterrupt:
        pass
