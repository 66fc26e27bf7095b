"""The Textual bindings of the app and of each view, built from keymap.py's
table, and which of them a read-only console turns off."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from reclaim_tui.tui.keymap import APP_ACTIONS, KEYS, MUTATING

__all__ = ["action_enabled", "bindings"]


def bindings(*, on_app: bool, view: str = "main") -> list[BindingType]:
    """The app's bindings (`on_app`) or the bindings of the screen of `view`.

    Each mutating key gets a hidden twin bound to `refuse`: in read-only mode
    `check_action` disables the real one (hidden from the footer) and the key
    falls through to the twin, which says why."""
    out: list[BindingType] = []
    for spec in KEYS:
        if spec.action in ("noop", "command_palette"):
            continue  # handled by the table / the app's defaults
        if (spec.action in APP_ACTIONS) != on_app:
            continue
        if not on_app and view not in spec.views:
            continue
        show = spec.footer if view == "main" else view in spec.footer_in
        out.append(Binding(spec.key, spec.action, spec.title, show=show))
        if spec.mutating:
            out.append(Binding(spec.key, f"refuse('{spec.title}')", spec.title, show=False))
    return out


def action_enabled(action: str, *, readonly: bool) -> bool:
    """`check_action` for both binding owners: a read-only console disables
    the mutating actions and enables their refusals."""
    if action == "refuse":
        return readonly
    if action in MUTATING:
        return not readonly
    return True
