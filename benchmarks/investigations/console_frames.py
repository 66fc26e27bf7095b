"""What the console's slow keys do: console_load.py's key run, each key's
UI-thread CPU broken down by what ran during it.

    python benchmarks/investigations/console_frames.py [console_load.py's options]

Wraps (by monkeypatching, in this process only) the screen's reactions to
its workers' messages, the table's and the detail's drawing, Textual's
compositor pass and the garbage collector, and sums each one's thread CPU
(time.thread_time, inclusive of what it calls) between a key's post and its
effect shown. Prints the keys above the 90th percentile of UI CPU with what
ran in them, and per kind of key the mean of each part in the slow keys
against the others. Uses Textual's private names: an investigation, not the
console.

Then, per kind of key, each key's UI CPU split into exclusive parts (each
CPU moment charged to the innermost part running: the table's rows built
and drawn, the detail, CSS styles applied, layout, the compositor and the
driver's write, the other widgets' drawing, the garbage collector, and the
rest: message dispatch, handlers, the event loop), as the mean ms per key,
its share, and the mean at the keys of the top 1 % (the p99's keys); with
counts per key (frames, layouts, widgets restyled, table rows built).
A name missing in the tree measured (an older one) is left unpatched.
"""

from __future__ import annotations

import functools
import gc
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import console_load
from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from reclaim_tui.tui import feed
from reclaim_tui.tui.actions import updates
from reclaim_tui.tui.widgets import ledger_table, line_rows
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.loop_log import LoopLog
from reclaim_tui.tui.widgets.throughput import Throughput

#: Exclusive CPU of the current key by group, and counts by name.
GROUPS: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)
#: One record per key: (kind, CPU seconds, groups, counts).
SPLITS: list[tuple[str, float, dict[str, float], dict[str, int]]] = []
_stack: list[str] = []
_mark: list[float] = [0.0]


def _charge(now: float) -> None:
    GROUPS[_stack[-1] if _stack else "rest"] += now - _mark[0]
    _mark[0] = now


def enter(group: str) -> None:
    _charge(time.thread_time())
    _stack.append(group)


def leave() -> None:
    _charge(time.thread_time())
    _stack.pop()


def grouped(group: str, fn: Callable[..., Any], count: str | None = None) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if count:
            COUNTS[count] += 1
        enter(group)
        try:
            return fn(*args, **kwargs)
        finally:
            leave()

    return wrapper


def group(owner: Any, attr: str, name: str, count: str | None = None) -> None:
    fn = getattr(owner, attr, None)
    if fn is not None:
        setattr(owner, attr, grouped(name, fn, count))


#: The current key's parts: name → [CPU seconds, calls].
PARTS: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
#: One record per key: (kind, key, CPU seconds, parts).
KEYS: list[tuple[str, str, float, dict[str, list[float]]]] = []
_depth: dict[str, int] = defaultdict(int)


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _depth[name]:
            return fn(*args, **kwargs)
        _depth[name] += 1
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            part = PARTS[name]
            part[0] += time.thread_time() - t0
            part[1] += 1
            _depth[name] -= 1

    return wrapper


def patch(owner: Any, attr: str, name: str | None = None) -> None:
    setattr(
        owner,
        attr,
        timed(name or f"{getattr(owner, '__name__', owner)}.{attr}", getattr(owner, attr)),
    )


def render_lines_by_class() -> None:
    real = Widget.render_lines

    def render_lines(self: Widget, crop: Any) -> Any:
        kind = type(self).__name__
        if kind in ("DetailBody", "DetailPane"):
            enter("detail")
        elif isinstance(self, line_rows.LineRows):
            enter("table rows")
        else:
            enter("other widgets drawn")
        try:
            return _render_lines(self, crop)
        finally:
            leave()

    def _render_lines(self: Widget, crop: Any) -> Any:
        name = f"render_lines {type(self).__name__}"
        if type(self).__name__ == "ScrollBar":
            owner = self.parent
            name += f" of {type(owner).__name__}#{getattr(owner, 'id', None)}"
        t0 = time.thread_time()
        try:
            return real(self, crop)
        finally:
            part = PARTS[name]
            part[0] += time.thread_time() - t0
            part[1] += crop.height

    Widget.render_lines = render_lines  # type: ignore[method-assign]
    real_lr = line_rows.LineRows.render_lines

    def lr(self: Any, crop: Any) -> Any:
        enter("table rows")
        try:
            return _lr(self, crop)
        finally:
            leave()

    def _lr(self: Any, crop: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real_lr(self, crop)
        finally:
            part = PARTS["render_lines LedgerTable"]
            part[0] += time.thread_time() - t0
            part[1] += crop.height

    line_rows.LineRows.render_lines = lr  # type: ignore[method-assign]


_gc_start: list[float] = [0.0]


def gc_callback(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        enter("gc")
        _gc_start[0] = time.thread_time()
    else:
        leave()
        part = PARTS[f"gc gen{info['generation']}"]
        part[0] += time.thread_time() - _gc_start[0]
        part[1] += 1


def causes() -> None:
    """Which widgets asked for a layout, a scroll reflow or a repaint; which timers ran."""
    from textual import messages
    from textual.timer import Timer

    real_post = Screen.post_message

    def post_message(self: Screen[Any], message: Any) -> bool:
        if isinstance(message, messages.Layout):
            widget = message.widget
            PARTS[f"asks layout: {type(widget).__name__}#{widget.id}"][1] += 1
        elif isinstance(message, messages.UpdateScroll):
            PARTS["asks scroll reflow"][1] += 1
        elif isinstance(message, messages.Update):
            PARTS[f"asks repaint: {type(message.widget).__name__}"][1] += 1
        return real_post(self, message)

    Screen.post_message = post_message  # type: ignore[method-assign]
    real_tick = Timer._tick

    async def tick(self: Timer, *, next_timer: float, count: int) -> None:
        callback = self._callback
        name = getattr(callback, "__qualname__", None) or type(callback).__name__
        t0 = time.thread_time()
        try:
            await real_tick(self, next_timer=next_timer, count=count)
        finally:
            part = PARTS[f"timer {name}"]
            part[0] += time.thread_time() - t0
            part[1] += 1

    Timer._tick = tick  # type: ignore[method-assign]


def install() -> None:
    for name in (
        "rerender", "rows_changed", "counts_changed", "tick_finished",
        "detail_loaded", "highlighted", "action_finished", "show_bar",
    ):  # fmt: skip
        patch(updates, name, f"updates.{name}")
    patch(feed.LedgerFeed, "watch", "feed.watch")
    patch(feed.LedgerFeed, "load_page", "feed.load_page")
    patch(DetailPane, "redraw", "DetailPane.redraw")
    patch(DetailPane, "show", "DetailPane.show")
    patch(LoopLog, "tick", "LoopLog.tick")
    patch(Throughput, "record", "Throughput.record")
    patch(ledger_table.LedgerTable, "show_rows", "LedgerTable.show_rows")
    patch(ledger_table.LedgerTable, "_update_cells", "LedgerTable._update_cells")
    patch(Screen, "_on_timer_update", "Screen._on_timer_update")
    patch(Screen, "_refresh_layout", "Screen._refresh_layout")
    patch(Screen, "_compositor_refresh", "Screen._compositor_refresh")
    patch(App, "_display", "App._display")
    render_lines_by_class()
    install_groups()
    gc.callbacks.append(gc_callback)
    causes()

    real_press = console_load.press_and_wait

    async def press_and_wait(app: Any, key: str, kind: str) -> float:
        PARTS.clear()
        GROUPS.clear()
        COUNTS.clear()
        t0 = _mark[0] = time.thread_time()
        spent = await real_press(app, key, kind)
        cpu = time.thread_time() - t0
        KEYS.append((kind, key, cpu, {k: list(v) for k, v in PARTS.items()}))
        GROUPS["rest"] += cpu - sum(GROUPS.values())
        SPLITS.append((kind, cpu, dict(GROUPS), dict(COUNTS)))
        return spent

    console_load.press_and_wait = press_and_wait


def install_groups() -> None:
    """The exclusive parts (module docstring), outermost patches last."""
    from textual._compositor import Compositor
    from textual.css.stylesheet import Stylesheet

    group(Stylesheet, "apply", "styles", "widgets restyled")
    group(Compositor, "reflow", "layout", "layouts")
    group(Compositor, "reflow_visible", "layout", "scroll reflows")
    group(Compositor, "render_update", "compositor", "frames")
    group(App, "_display", "compositor")
    group(ledger_table, "row_cells", "table rows", "table rows built")
    group(ledger_table.LedgerTable, "show_rows", "table rows", "windows shown")
    group(DetailPane, "show", "detail", "details shown")
    group(DetailPane, "redraw", "detail", "details redrawn")


def split_summary() -> None:
    """Per kind: the mean of each exclusive part, its share, and at the p99's keys."""
    kinds: dict[str, list[tuple[str, float, dict[str, float], dict[str, int]]]] = defaultdict(list)
    for record in SPLITS:
        kinds[record[0]].append(record)
    for kind, records in kinds.items():
        cpus = sorted(r[1] for r in records)
        p99 = console_load.pct(cpus, 0.99)
        top = [r for r in records if r[1] >= p99]
        total = sum(cpus) / len(cpus)
        print(
            f"\n== {kind}: {len(records)} keys; UI CPU p50 {console_load.pct(cpus, 0.5) * 1e3:.1f}"
            f" ms, p99 {p99 * 1e3:.1f} ms, mean {total * 1e3:.1f} ms"
        )
        print(f"  {'part':<22} {'mean ms':>8} {'share':>6} {'p99 keys ms':>12}")
        names = sorted(
            {n for r in records for n in r[2]}, key=lambda n: -sum(r[2].get(n, 0) for r in records)
        )
        for name in names:
            mean = sum(r[2].get(name, 0.0) for r in records) / len(records)
            at_top = sum(r[2].get(name, 0.0) for r in top) / len(top)
            print(f"  {name:<22} {mean * 1e3:>8.2f} {mean / total:>6.0%} {at_top * 1e3:>12.2f}")
        counted = sorted({n for r in records for n in r[3]})
        said = ", ".join(
            f"{n} {sum(r[3].get(n, 0) for r in records) / len(records):.1f}" for n in counted
        )
        print(f"  per key (mean): {said}")


def summary() -> None:
    by_kind: dict[str, list[tuple[str, str, float, dict[str, list[float]]]]] = defaultdict(list)
    for record in KEYS:
        by_kind[record[0]].append(record)
    for kind, records in by_kind.items():
        cpus = sorted(r[2] for r in records)
        p90 = cpus[int(0.9 * (len(cpus) - 1))]
        slow = [r for r in records if r[2] > p90]
        rest = [r for r in records if r[2] <= p90]
        print(
            f"\n== {kind}: {len(records)} keys, p50 {cpus[len(cpus) // 2] * 1e3:.1f} ms,"
            f" p90 {p90 * 1e3:.1f} ms; slow keys (> p90): {len(slow)}"
        )
        names = sorted({n for r in records for n in r[3]})
        print(f"  {'part':<40} {'slow ms':>8} {'calls':>6} {'others ms':>9} {'calls':>6}")
        for name in names:

            def mean(rs: list[Any], i: int, name: str = name) -> float:
                return sum(r[3].get(name, [0.0, 0.0])[i] for r in rs) / max(1, len(rs))

            print(
                f"  {name:<40} {mean(slow, 0) * 1e3:>8.2f} {mean(slow, 1):>6.1f}"
                f" {mean(rest, 0) * 1e3:>9.2f} {mean(rest, 1):>6.1f}"
            )
        for kind_, key, cpu, parts in sorted(slow, key=lambda r: -r[2])[:6]:
            top = sorted(parts.items(), key=lambda kv: -kv[1][0])[:9]
            said = ", ".join(f"{n} {v[0] * 1e3:.1f}/{int(v[1])}" for n, v in top)
            print(f"  {kind_} {key!r} {cpu * 1e3:.1f} ms: {said}")


if __name__ == "__main__":
    install()
    try:
        console_load.main()
    finally:
        summary()
        split_summary()
