"""A `--db` starting with `~` from somewhere no shell expands it (RECLAIM_DB in
a unit file, `--db-file`, a quoted argument): SQLite opens `./~/…`, a folder
of that name. The check for another ledger beside a new one looked in the
home folder instead, so a mistyped name beside `./~/ledger.db` was made a
new ledger without `--create`; the console's files went to the home folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.ledger.sqlite.new_ledger import other_ledgers


def test_a_ledger_in_a_folder_named_tilde_is_seen_beside_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    (work / "~").mkdir(parents=True)
    (work / "~" / "ledger.db").write_bytes(b"SQLite format 3\x00")
    (work / "~" / "ledger.db.ledger-id").write_text("abc\n")
    monkeypatch.chdir(work)
    found = other_ledgers("~/ledgr.db")
    assert [p.resolve() for p in found] == [(work / "~" / "ledger.db").resolve()]
