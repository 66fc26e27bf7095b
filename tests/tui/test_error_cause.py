"""The error column keeps an OSError's cause (issue 25, item 8: "Not a
directory" was lost, the file's name — said twice — kept instead)."""

from __future__ import annotations

import pytest

from reclaim_tui.tui.format import shorten_error

MESSAGE = (
    "SinkError: directory sink: cannot write /srv/articles/2026/12/report.md:"
    " [Errno 20] Not a directory: '/srv/articles/2026/12/report.md'"
)


@pytest.mark.parametrize("limit", [30, 40, 60])
def test_the_cause_of_an_os_error_survives_a_narrow_column(limit: int) -> None:
    short = shorten_error(MESSAGE, limit)
    assert len(short) <= limit
    assert "Not a directory" in short, short
    assert short.startswith("SinkError"), short
