"""console_load.py with issue 27's two first-paint changes patched out (`old`) or
kept (`new`), in one tree with the same bytecode (benchmarks/README.md,
"the console's first paint"): a side-by-side of two folders also compares where
the garbage collector's counters stand after their imports, which decided
whether a full collection landed in the first paint.

    python benchmarks/investigations/first_paint_ab.py old|new [console_load.py's options]

`old`: the footer rebuilt on every change of the bindings (Textual's own
`recompose`) and no freeze of the imports when the app loads.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # benchmarks/
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # tests.helpers.postgres (console_load.py --pg auto)

from textual.widgets import Footer  # noqa: E402

from reclaim_tui.tui.gc_freeze import StartupFreeze  # noqa: E402
from reclaim_tui.tui.widgets.footer import ConsoleFooter  # noqa: E402


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("old", "new"):
        sys.exit(__doc__)
    if sys.argv[1] == "old":
        StartupFreeze.early = lambda self: None  # type: ignore[method-assign]
        ConsoleFooter.recompose = Footer.recompose  # type: ignore[method-assign]
    import console_load

    sys.argv = [str(HERE / "console_load.py"), *sys.argv[2:]]
    console_load.main()


if __name__ == "__main__":
    main()
