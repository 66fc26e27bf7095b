"""screenshots/demo.svg: an animated capture of the demo console — a dozen
frames of `./dev demo` over a minute or so (the seeded jobs moving from
reserving to consumed, the trickle adding rows, one job followed with `f`
until it is consumed, the `:` command line, the failed tab, costs), shown
one after another, ~1.5 s each, looping.

Each frame is Textual's own SVG export (120×36, smaller than the stills to
keep the file light), nested in one SVG whose CSS animation shows one frame
at a time; the window title of each frame says what is happening. No
JavaScript; GitHub and browsers play it as an <img>. A viewer without CSS
animations shows the first frame.

    python scripts/animate.py [--out screenshots/demo.svg] [--frames-dir DIR]

(`python scripts/screenshots.py demo` runs it too, after the stills.)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from screenshots import demo_app, fresh_run_dir, is_agent, settle, shutdown_race, type_keys

from reclaim_tui.core.models import Status
from reclaim_tui.tui.app import ReclaimApp

SIZE = (120, 36)
#: How long each frame is shown in the animation.
FRAME_SECONDS = 1.5

_FONT_FACE = re.compile(r"\s*@font-face\s*\{[^}]*\}", re.S)
_VIEWBOX = re.compile(r'<svg class="rich-terminal" viewBox="0 0 ([\d.]+) ([\d.]+)"')


class Recorder:
    def __init__(self, app: ReclaimApp, pilot, frames: list[str]) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        self.pilot = pilot
        self.frames = frames
        self.started = time.monotonic()

    async def frame(self, caption: str, wait: float = 0.3) -> None:
        await settle(self.app, self.pilot, wait)
        at = time.monotonic() - self.started
        title = f"reclaim-tui demo · {at:.0f}s · {caption}"
        self.frames.append(self.app.export_screenshot(title=title))
        print(f"frame {len(self.frames)}: {title}", flush=True)


async def record() -> list[str]:
    """Run the demo and take the frames (Textual SVGs)."""
    run = fresh_run_dir("animation")
    app = demo_app(run)
    frames: list[str] = []
    with shutdown_race(frames):
        await _record(app, frames)
    return frames


async def _record(app: ReclaimApp, frames: list[str]) -> None:
    async with app.run_test(size=SIZE) as pilot:
        rec = Recorder(app, pilot, frames)
        await pilot.pause(2.5)
        await rec.frame("48 seeded jobs, reserving: the loop sends them")
        for caption in (
            "submitted: the emulator runs them",
            "done → consumed: results written by the sink",
            "a trickle of new jobs keeps coming",
        ):
            await pilot.pause(4.0)
            await rec.frame(caption)

        # One new model job, followed until it is consumed.
        await settle(app, pilot, 0.1)
        rows = app.table.rows_shown
        pick = next(
            (i for i, r in enumerate(rows) if r.status == Status.SUBMITTED and not is_agent(r)),
            0,
        )
        app.table.move_cursor(row=pick, animate=False)
        await rec.frame("the cursor on a job in flight: its detail on the right")
        await pilot.press("f")
        seen: list[str] = []
        for _ in range(30):
            await pilot.pause(1.0)
            row = app.screen.job_row() if hasattr(app.screen, "job_row") else None
            status = row.status.value if row is not None else "?"
            if status not in seen:
                seen.append(status)
                await rec.frame(f"f: follow it live · {status}", wait=0.5)
            if status == Status.CONSUMED.value:
                break
        await pilot.press("escape")

        await pilot.press("colon")
        await type_keys(pilot, "failed")
        await rec.frame(":failed — the command line (k9s style)")
        await pilot.press("enter")
        await rec.frame("the failed tab: r retries (the confirmation says the cost)", wait=0.6)
        await pilot.press("dollar_sign")
        await rec.frame("$: what the failed rows cost", wait=0.8)
        await pilot.press("escape")
        await pilot.press("1")
        await rec.frame("1: back to All; the trickle goes on", wait=0.6)


def animated_svg(frames: list[str], seconds: float = FRAME_SECONDS) -> str:
    """One SVG showing `frames` (Textual SVG exports of one terminal size) in
    turn, `seconds` each, looping: frame i is visible from i·d to (i+1)·d of a
    cycle of n·d (CSS keyframes, a negative delay per frame)."""
    size = _VIEWBOX.search(frames[0])
    assert size is not None, "not a Textual SVG export"
    width, height = size.group(1), size.group(2)
    fonts = _FONT_FACE.findall(frames[0])
    n = len(frames)
    cycle = n * seconds
    share = 100.0 / n
    style = [
        *fonts,
        f"@keyframes show {{ 0% {{ visibility: visible }} {share:.4f}% {{ visibility: hidden }}"
        " 100% { visibility: hidden } }",
        f".frame {{ visibility: hidden; animation: show {cycle:g}s step-end infinite; }}",
        ".f0 { visibility: visible; }",
        *(f".f{i} {{ animation-delay: -{((n - i) % n) * seconds:g}s; }}" for i in range(n)),
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}">',
        "<style>",
        *style,
        "</style>",
    ]
    for i, frame in enumerate(frames):
        body = _FONT_FACE.sub("", frame)
        body = _VIEWBOX.sub(
            lambda m: (
                f'<svg class="rich-terminal" width="{m.group(1)}" height="{m.group(2)}"'
                f' viewBox="0 0 {m.group(1)} {m.group(2)}"'
            ),
            body,
            count=1,
        )
        parts.append(f'<g class="frame f{i}">{body}</g>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def still(svg: str, index: int) -> str:
    """The animated SVG with frame `index` shown and no animation (to look at it)."""
    return svg.replace(
        "<style>",
        f"<style>.frame {{ animation: none !important; visibility: hidden !important; }}"
        f" .f{index} {{ visibility: visible !important; }}",
        1,
    )


async def main(out: Path, frames_dir: Path | None = None) -> None:
    frames = await record()
    svg = animated_svg(frames)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg)
    print(f"wrote {out}: {len(frames)} frames, {len(svg) / 1e6:.2f} MB", flush=True)
    if frames_dir is not None:
        frames_dir.mkdir(parents=True, exist_ok=True)
        for i in range(len(frames)):
            (frames_dir / f"frame-{i:02d}.svg").write_text(still(svg, i))
        print(f"stills of each frame in {frames_dir}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent.parent / "screenshots" / "demo.svg"
    )
    parser.add_argument("--frames-dir", type=Path, help="also write each frame, still, here")
    args = parser.parse_args()
    asyncio.run(main(args.out, args.frames_dir))
