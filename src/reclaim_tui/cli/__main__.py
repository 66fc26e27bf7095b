"""`python -m reclaim_tui.cli` runs the CLI (as `python -m reclaim_tui` does)."""

from reclaim_tui.cli import main

if __name__ == "__main__":
    main()
