"""The attached console's link to its service (`console --attach`).

Replaces the console's own reclaim loop: every `REFRESH` s it asks the
service for its state (service_view.py turns it into the loop bar's words
and the log's lines), and the loop's keys act on the service through its
control socket — `P` pauses or resumes the service, `+`/`-` step its pass
interval, `:interval S` and `:concurrency N` set them; what the service
refuses is said in red, and nothing changed.
"""

from __future__ import annotations

import asyncio

from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.commands import ServiceState
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.screens.main import MainScreen
from reclaim_tui.tui.service_view import ANSWER_WITHIN, REFRESH, ServiceView, stepped
from reclaim_tui.tui.widgets.loop_log import LoopLog

__all__ = ["ServiceLink"]


class ServiceLink:
    def __init__(self, host: AttachedHost, main: MainScreen, pace: LoopPace) -> None:
        self.host = host
        self.main = main
        self.pace = pace
        self.view = ServiceView()
        self.refresh = REFRESH
        pace.mode = self.view.mode

    async def watch(self) -> None:
        """Until the console quits: the service's state, every `refresh` s."""
        while True:
            await self.look()
            await asyncio.sleep(self.refresh)

    async def look(self) -> None:
        try:
            state = await asyncio.wait_for(self.host.status(), ANSWER_WITHIN)
        except TimeoutError:
            self.view.lost(f"no answer in {ANSWER_WITHIN:g} s")
        except ReclaimError as exc:
            self.view.lost(str(exc))
        except Exception as exc:  # a reply this console cannot read: gone to it all the same
            self.view.lost(f"{type(exc).__name__}: {exc}")
        else:
            if self.view.seen(state):
                self.main.feed.watch(force=True)  # its passes changed rows
        self.show()

    def show(self) -> None:
        main, view = self.main, self.view
        self.pace.mode = view.mode
        if view.state is not None:
            self.pace.interval = view.state.interval
        main.bar.calls = view.calls_text()
        main.bar.last, main.bar.api = view.last_text(), view.api_text()
        now = main.config.clock.now()
        for line in view.take_lines():
            for log in main.query(LoopLog):
                log.line(now, line.text, error=line.error)
        main.show_bar()

    # -- the loop's keys, on the service ------------------------------------------------------
    def toggle_pause(self) -> None:
        paused = self.view.paused
        if paused is None:
            self._refuse()
            return
        self.main.run_worker(self._set(paused=not paused), group="service")

    def step_interval(self, longer: bool) -> None:
        state = self.view.state
        if state is None:
            self._refuse()
            return
        self.main.run_worker(self._set(interval=stepped(state.interval, longer)), group="service")

    def set(self, *, interval: float | None = None, concurrency: int | None = None) -> None:
        self.main.run_worker(self._set(interval=interval, concurrency=concurrency), group="service")

    def _refuse(self) -> None:
        why = f"the service is gone ({self.view.gone})" if self.view.gone else "not attached yet"
        self.main.notify(f"{why}: nothing changed", severity="error")

    async def _set(
        self,
        *,
        paused: bool | None = None,
        interval: float | None = None,
        concurrency: int | None = None,
    ) -> None:
        try:
            state = await asyncio.wait_for(
                self.host.set_pace(paused=paused, interval=interval, concurrency=concurrency),
                ANSWER_WITHIN,
            )
        except (ReclaimError, TimeoutError) as exc:
            said = str(exc) or f"no answer in {ANSWER_WITHIN:g} s"
            self.main.notify(f"service: {said}; nothing changed", severity="error")
            return
        if self.view.seen(state):
            self.main.feed.watch(force=True)
        self.show()
        self.main.notify(f"service: {_said(state, paused, interval, concurrency)}")


def _said(
    state: ServiceState, paused: bool | None, interval: float | None, concurrency: int | None
) -> str:
    parts = []
    if paused is not None:
        parts.append("paused" if state.state == "paused" else state.state)
    if interval is not None:
        parts.append(f"a pass at least every {state.interval:g}s")
    if concurrency is not None:
        parts.append(f"concurrency {state.concurrency}")
    return ", ".join(parts)
