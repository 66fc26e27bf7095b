"""The one door to the google-genai fast path.

fastpath.py and fastcalls.py touch the SDK's private names (the table in
fastpath.py); nothing else in the product may import them (an import-linter
contract in pyproject.toml holds it). GeminiBackend calls `attach_fast_path`
once, when it builds its client, and gets a `FastPath`: the calls it may use
instead of the stock ones, and the scope inside which the memoized SDK helpers
are on. Every part is off (None, a scope that changes nothing) unless the
installed SDK is a verified one (`FAST_PATH_SDK_VERSIONS`) with every internal
where it was; then the stock SDK path runs, with the same results.

tests/contract/test_fast_path_versions.py proves, for each verified version
present, that the stock path and the fast path give identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from reclaim_tui.core.gemini.fastcalls import _FastCreate, _FastGet
from reclaim_tui.core.gemini.fastpath import (
    FAST_PATH_SDK_VERSIONS,
    _fast_path,
    install_fast_path,
)

__all__ = ["FAST_PATH_SDK_VERSIONS", "FastCreate", "FastGet", "FastPath", "attach_fast_path"]

#: The fast get and create (`ready`, `accepts`, `get`; `ready`, `body`, `create`).
FastGet = _FastGet
FastCreate = _FastCreate


@dataclass(frozen=True, slots=True)
class FastPath:
    """What the backend may use: `on` says whether any of it is active."""

    on: bool
    get: FastGet | None
    create: FastCreate | None
    #: the memoized SDK helpers are active inside `scope(True)` (this task only)
    scope: Callable[[bool], AbstractContextManager[None]]


def attach_fast_path(interactions: Any, wanted: bool) -> FastPath:
    """The fast path for this SDK client's `aio.interactions`, when `wanted`
    and the installed SDK is verified; its parts are None otherwise."""
    on = wanted and install_fast_path()
    if not on:
        return FastPath(False, None, None, _fast_path)
    return FastPath(True, FastGet.attach(interactions), FastCreate.attach(interactions), _fast_path)
