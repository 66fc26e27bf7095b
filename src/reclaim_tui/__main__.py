"""`python -m reclaim_tui` runs the CLI."""

from reclaim_tui.cli import main

if __name__ == "__main__":
    main()
