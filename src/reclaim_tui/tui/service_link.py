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
from collections.abc import Callable

from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.commands import ServiceState
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.screens.confirm import ConfirmScreen
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
        #: This console paused the service (and has not resumed it since).
        self.paused_here = False
        self._asked_at_quit = False

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
        if paused is not None:
            self.paused_here = paused and state.state == "paused"
            self._asked_at_quit = False
        self.show()
        self.main.notify(f"service: {_said(state, paused, interval, concurrency)}")

    # -- quitting -------------------------------------------------------------------------
    def asks_before_quit(self, quit: Callable[[], None]) -> bool:
        """This console paused the service, which is still paused: ask whether
        to resume it before quitting (once; `q` again quits and leaves it
        paused). False when there is nothing to ask."""
        state = self.view.state
        if not self.paused_here or state is None or state.state != "paused":
            return False
        if self._asked_at_quit:
            return False
        self._asked_at_quit = True
        question = (
            f"This console paused the service (pid {state.pid}) and it is still paused:"
            " no pass runs, nothing is sent or reclaimed, until someone resumes it."
            "\n\ny resumes it, then quits; n stays here. (q again quits and leaves it"
            f" paused; to resume it later: P in a console started with --attach {self.host.path}.)"
        )

        def answered(resume: bool | None) -> None:
            if resume:
                self.main.run_worker(self._resume_then(quit), group="service")
            else:
                self.main.notify("the service stays paused; q again quits and leaves it so")

        self.main.app.push_screen(ConfirmScreen("quit", question, "Resume, then quit"), answered)
        return True

    async def _resume_then(self, quit: Callable[[], None]) -> None:
        await self._set(paused=False)
        if self.view.paused is False:
            quit()  # else _set said why it could not, and the console stays


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
