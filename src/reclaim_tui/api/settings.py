"""The Python API's settings: the CLI's `Settings`, from the arguments a
caller passes and otherwise from the CLI's environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from reclaim_tui.config import DEFAULT_DB, Settings
from reclaim_tui.core.models import Actor, GonePolicy, OrphanPolicy
from reclaim_tui.errors import ConfigError

__all__ = ["settings_for"]

#: The CLI's environment variables for the settings a `connect` did not name.
_ENVIRONMENT = {
    "db": "RECLAIM_DB",
    "base_url": "RECLAIM_BASE_URL",
    "webhook_url": "RECLAIM_WEBHOOK_URL",
    "emulator_lookup": "RECLAIM_EMULATOR_LOOKUP",
    "transport": "RECLAIM_TRANSPORT",
}
#: click's spelling of a true boolean environment variable.
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_ENUMS: dict[str, type[Any]] = {
    "orphan_policy": OrphanPolicy,
    "on_gone": GonePolicy,
    "actor": Actor,
}


def settings_for(given: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from `given` (Settings field names; None: not given), the
    environment for the rest, checked as the CLI checks its flags."""
    env = os.environ if environ is None else environ
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    values = {name: value for name, value in given.items() if value is not None}
    for name, var in _ENVIRONMENT.items():
        if name not in values and env.get(var):
            raw = env[var]
            values[name] = raw.strip().lower() in _TRUE if name == "emulator_lookup" else raw
    values.setdefault("db", DEFAULT_DB)
    for name, kind in _ENUMS.items():
        if name in values:
            try:
                values[name] = kind(values[name])
            except ValueError:
                choices = ", ".join(str(member.value) for member in kind)
                raise ConfigError(f"{name}: {values[name]!r} is not one of {choices}") from None
    values["db"] = os.fspath(values["db"])
    try:
        settings = Settings(**values)
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    return settings.validate()
