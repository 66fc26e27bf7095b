"""The result outside the console: the stored interaction as indented JSON,
and $PAGER / $EDITOR run on a private temporary file (screens/viewer.py hands
them the terminal)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

__all__ = ["VIEWER_DEFAULTS", "pretty_json", "run_viewer", "viewer_argv", "write_viewing_file"]

#: What runs when $PAGER / $EDITOR is unset or empty.
VIEWER_DEFAULTS = {"PAGER": "less", "EDITOR": "vi"}


def pretty_json(raw_json: str) -> str:
    """The stored interaction, indented (as stored when it is not JSON after all)."""
    try:
        return json.dumps(json.loads(raw_json), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return raw_json


def viewer_argv(variable: str) -> list[str]:
    """$PAGER or $EDITOR as a command line (they may carry flags: `less -R`)."""
    value = os.environ.get(variable, "").strip() or VIEWER_DEFAULTS[variable]
    try:
        return shlex.split(value)
    except ValueError:
        return [value]


def write_viewing_file(text: str, name: str) -> Path:
    """A private temporary file holding `text`, its name ending in `name`
    (`<key>.md`); the caller removes it."""
    handle, path = tempfile.mkstemp(prefix="reclaim-", suffix=f"-{name}")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    return Path(path)


def run_viewer(variable: str, path: Path) -> str | None:
    """Run $PAGER / $EDITOR on `path` and wait for it (it has the terminal);
    what went wrong, or None."""
    argv = viewer_argv(variable)
    try:
        code = subprocess.run([*argv, str(path)], check=False).returncode
    except OSError as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else str(exc)
        return f"${variable} ({argv[0]}) could not run: {reason}"
    return f"${variable} ({argv[0]}) exited with status {code}" if code else None
