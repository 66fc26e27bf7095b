"""The SQLite ledger uses aiosqlite's public API but for the two private
names kept in one module (core/ledger/sqlite/aiosqlite_private.py); they
fail here, loudly, when an aiosqlite release changes them: what the ledger
relies on is pinned, not just that the names exist.

Checked over the source (AST): no other module of src that imports
aiosqlite names those private attributes.
"""

from __future__ import annotations

import ast
import asyncio
import sqlite3
import threading
from pathlib import Path

import aiosqlite

from reclaim_tui.core.ledger.sqlite import aiosqlite_private
from reclaim_tui.core.ledger.sqlite.aiosqlite_private import (
    awaited_in_thread,
    in_thread,
    raw,
    settled,
)

SRC = Path(__file__).resolve().parents[2] / "src"
PRIVATE_MODULE = Path(aiosqlite_private.__file__).resolve()
KEPT = {"_execute", "_conn"}


async def test_a_call_runs_in_the_connections_thread_in_the_order_given(
    tmp_path: Path,
) -> None:
    db = await aiosqlite.connect(tmp_path / "x.db", isolation_level=None)
    try:
        seen: list[tuple[str, int]] = []

        def step(name: str) -> str:
            conn = raw(db)
            assert isinstance(conn, sqlite3.Connection)
            conn.execute(f"CREATE TABLE {name}(x)")
            seen.append((name, threading.get_ident()))
            return name

        first = in_thread(db, step, "a")
        # a public call, queued after it
        second = asyncio.ensure_future(db.execute("CREATE TABLE b(x)"))
        third = in_thread(db, step, "c")
        assert await first == "a"
        await second
        assert await third == "c"
        assert [name for name, _ in seen] == ["a", "c"]
        assert {ident for _, ident in seen} == {db._thread.ident}
        assert threading.get_ident() not in {ident for _, ident in seen}
        tables = await db.execute_fetchall("SELECT name FROM sqlite_master ORDER BY rowid")
        assert [t[0] for t in tables] == ["a", "b", "c"]
    finally:
        await db.close()


async def test_a_call_its_caller_stops_waiting_for_still_runs(tmp_path: Path) -> None:
    db = await aiosqlite.connect(tmp_path / "x.db", isolation_level=None)
    try:
        gate = threading.Event()
        blocked = in_thread(db, gate.wait)
        task = in_thread(db, lambda: raw(db).execute("CREATE TABLE t(x)"))
        waiter = asyncio.ensure_future(asyncio.shield(task))
        await asyncio.sleep(0)
        waiter.cancel()
        gate.set()
        await settled(task)
        assert await blocked is True
        assert task.done() and not task.cancelled()
        assert await db.execute_fetchall("SELECT name FROM sqlite_master") == [("t",)]
    finally:
        await db.close()


def test_no_other_module_names_aiosqlites_private_attributes() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.resolve() == PRIVATE_MODULE or not _imports_aiosqlite(tree):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in KEPT:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} .{node.attr}")
    assert found == []


def _imports_aiosqlite(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "aiosqlite" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiosqlite"):
            return True
    return False


def test_the_module_uses_only_the_names_it_keeps() -> None:
    tree = ast.parse(PRIVATE_MODULE.read_text(encoding="utf-8"))
    private = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_")
    }
    assert private == KEPT


async def test_an_awaited_call_runs_in_the_connections_thread_without_a_task(
    tmp_path: Path,
) -> None:
    db = await aiosqlite.connect(tmp_path / "x.db", isolation_level=None)
    try:

        def read(value: int) -> tuple[int, int]:
            row = raw(db).execute("SELECT ?", (value,)).fetchone()
            return row[0], threading.get_ident()

        call = awaited_in_thread(db, read, 7)
        assert asyncio.iscoroutine(call)  # awaited by the caller: no task of its own
        assert await call == (7, db._thread.ident)
    finally:
        await db.close()
