"""The order tests/helpers/slow_first.py gives an xdist run names tests that exist: a
renamed or moved long test would otherwise silently lose its place at the front."""

from __future__ import annotations

import re

from tests.helpers.procs import REPO_ROOT
from tests.helpers.slow_first import LONG_SECONDS


def test_every_long_test_named_for_the_front_exists() -> None:
    missing = []
    for path, names in LONG_SECONDS.items():
        source = (
            (REPO_ROOT / path).read_text(encoding="utf-8") if (REPO_ROOT / path).is_file() else ""
        )
        missing += [
            f"{path}::{name}"
            for name in names
            if not re.search(rf"^(async )?def {name}\(", source, re.MULTILINE)
        ]
    assert missing == []
