""" "A file or a server?" is asked of the ledger's opening module only
(core/ledger/opening.py: `ledger_file`, `same_ledger`), never decided again
by the CLI, the console or the runner from the `--db` text."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from reclaim_tui.core.ledger.opening import ledger_file, same_ledger

SRC = Path(__file__).resolve().parents[2] / "src" / "reclaim_tui"
SERVERS = [
    "postgresql://app@db.example/ledger",
    "postgres://app:secret@db.example:6432/ledger?sslmode=require",
    "host=db.example dbname=ledger user=app",
    "dbname=ledger",
]


@pytest.mark.parametrize("db", SERVERS)
def test_a_ledger_on_a_server_has_no_file(db: str) -> None:
    assert ledger_file(db) is None


@pytest.mark.parametrize("db", ["ledger.db", "state/ledger.db", "/var/lib/reclaim/ledger.db"])
def test_a_ledger_file_is_the_path_as_given(db: str) -> None:
    assert ledger_file(db) == Path(db)
    assert ledger_file(Path(db)) == Path(db)


def test_the_same_file_however_reached_is_the_same_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert same_ledger("ledger.db", str(tmp_path / "a" / "ledger.db"))
    assert same_ledger("../a/ledger.db", "ledger.db")
    assert not same_ledger("ledger.db", str(tmp_path / "ledger.db"))
    os.symlink(tmp_path / "a" / "ledger.db", tmp_path / "link.db")
    assert same_ledger(str(tmp_path / "link.db"), "ledger.db")


def test_server_ledgers_are_the_same_only_when_said_the_same() -> None:
    assert same_ledger(SERVERS[0], SERVERS[0])
    assert not same_ledger(SERVERS[0], SERVERS[2])
    # A file named like a DSN's database is not that database.
    assert not same_ledger("ledger", "dbname=ledger")


def test_only_the_ledger_tells_a_file_from_a_server() -> None:
    asked = []
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(SRC / "core" / "ledger"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.alias) and "is_database_url" in (
                node.id if isinstance(node, ast.Name) else node.name
            ):
                asked.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert asked == []
