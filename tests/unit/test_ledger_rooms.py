"""The ledger's rooms (docs/design.md, "The ledger's rooms"): every module at
the top of core/ledger/ but the two doors is kept, by import-linter, from
importing either engine's room or the console's reads. A module added there
later is held to it too: this fails until the contract names it (or it moves
into a room)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEDGER = ROOT / "src" / "reclaim_tui" / "core" / "ledger"
CONTRACT = "what the engines share beside the port imports neither engine nor the console's reads"
#: the doors: they open an engine, so they import one (their own layer in pyproject.toml)
DOORS = {"opening", "upgrade"}
ROOMS = {"sqlite", "postgres", "console"}


def _contract() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"] == CONTRACT)


def test_every_shared_module_is_held_by_the_contract() -> None:
    shared = {
        f"reclaim_tui.core.ledger.{path.stem}"
        for path in LEDGER.glob("*.py")
        if path.stem != "__init__" and path.stem not in DOORS
    }
    assert set(_contract()["source_modules"]) == shared


def test_the_rooms_are_the_packages_the_contracts_name() -> None:
    packages = {path.parent.name for path in LEDGER.glob("*/__init__.py")}
    assert packages == ROOMS
    forbidden = {name.rsplit(".", 1)[1] for name in _contract()["forbidden_modules"]}
    assert forbidden == ROOMS
