"""The console uses Textual's public API only, but for the few private names
kept in one module (tui/widgets/textual_private.py); and those fail here,
loudly, when a Textual release changes them.

Checked over the source (AST): no import of a private Textual module
(`textual._x`, `textual.widgets._x`) outside that module; no class of ours
deriving from a Textual class sets, reads or overrides a private name of
its Textual ancestors (`self._row_locations`, `def _render_line`); no
private Textual name read off any other object (`footer._bindings_ready`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.widget import Widget
from textual.widgets import Footer, Tab, Tabs

from reclaim_tui.tui.event_clock import event_time
from reclaim_tui.tui.widgets import textual_private

SRC = Path(__file__).resolve().parents[2] / "src"
PRIVATE_MODULE = SRC / "reclaim_tui" / "tui" / "widgets" / "textual_private.py"
#: The private names that module uses, each said why in its docstring.
KEPT = {
    "_bindings_ready",
    "_border_title",
    "_highlight_active",
    "_scroll_active_tab",
    "_footer",
    "_forward_event",
    "_scroll_update",
}


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def private_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "textual" and any(p.startswith("_") for p in parts)


def test_no_private_textual_module_is_imported() -> None:
    found = []
    for path, tree in sources():
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if private_module(name) and path != PRIVATE_MODULE:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {name}")
    assert found == []


@functools.cache
def _private_names_of(cls: type) -> frozenset[str]:
    """The private names Textual's class `cls` defines or sets on itself (cached:
    inspect.getsource parses the class's whole module, and each Textual base is
    the ancestor of dozens of our classes)."""
    names = {n for n in vars(cls) if n.startswith("_") and not n.endswith("__")}
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return frozenset(names)
    return frozenset(names | set(re.findall(r"self\.(_[A-Za-z]\w*)", source)))


def _textual_private_names(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] == "textual":
            names |= _private_names_of(base)
    return names


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _textual_classes() -> Iterator[tuple[Path, ast.ClassDef, type]]:
    for path, tree in sources():
        if path.name == "__main__.py":
            continue
        module = None
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            module = module or importlib.import_module(_module_name(path))
            cls = getattr(module, node.name, None)
            if inspect.isclass(cls) and any(
                b.__module__.split(".")[0] == "textual" for b in cls.__mro__
            ):
                yield path, node, cls


def _self_privates(node: ast.ClassDef) -> Iterator[tuple[int, str]]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and inner.name.startswith("_"):
            if not inner.name.endswith("__"):
                yield inner.lineno, inner.name
        if (
            isinstance(inner, ast.Attribute)
            and isinstance(inner.value, ast.Name)
            and inner.value.id in ("self", "cls")
            and inner.attr.startswith("_")
            and not inner.attr.endswith("__")
        ):
            yield inner.lineno, inner.attr


def test_no_class_of_ours_touches_a_private_name_of_its_textual_ancestors() -> None:
    found, checked = [], 0
    for path, node, cls in _textual_classes():
        checked += 1
        theirs = _textual_private_names(cls)
        for line, name in _self_privates(node):
            if name in theirs and not (path == PRIVATE_MODULE and name in KEPT):
                found.append(f"{path.relative_to(SRC)}:{line} {node.name}.{name}")
    assert checked > 40  # the console's widgets and screens were all seen
    assert found == []


def test_no_private_textual_name_is_read_off_another_object() -> None:
    ours: set[str] = set()
    textual: set[str] = set()
    trees = list(sources())
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                ours.add(node.name)
    for _, _, cls in _textual_classes():
        textual |= _textual_private_names(cls)
    found = []
    for path, tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue  # the class test's
            name = node.attr
            if name in textual and name not in ours and path != PRIVATE_MODULE:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} .{name}")
    assert found == []


# -- what textual_private.py relies on ----------------------------------------------------
def test_the_footer_keys_are_still_what_the_footer_measures() -> None:
    key = textual_private.FooterKey("ctrl+q", "^q", "Quit", "quit")
    assert isinstance(key, Widget)
    assert (key.key_display, key.description, key.action) == ("^q", "Quit", "quit")
    assert "_bindings_ready" in vars(Footer), "Footer no longer says when it read the bindings"
    assert textual_private.bindings_ready(Footer()) is False


def test_a_forwarded_key_is_still_marked_so() -> None:
    key = events.Key("a", "a")
    widget = Widget()
    assert not key.is_forwarded
    textual_private.forward_key(widget, key)
    assert key.is_forwarded


class _TabsApp(App[None]):
    def compose(self) -> ComposeResult:
        yield textual_private.StillTabs(Tab("one", id="one"), Tab("two", id="two"))


async def test_the_tabs_underline_still_moves_without_sliding() -> None:
    assert "animate" in inspect.signature(Tabs._highlight_active).parameters
    # Textual's relabel and resize still move the underline, and scroll, through these.
    assert {"_highlight_active", "_scroll_active_tab"} <= set(vars(Tabs))
    assert "_highlight_active" in inspect.getsource(Tabs._on_tab_relabelled)
    assert "_scroll_active_tab" in inspect.getsource(Tabs._on_resize)
    app = _TabsApp()
    async with app.run_test() as pilot:
        tabs = app.query_one(Tabs)
        await pilot.pause()
        tabs.active = "two"
        await pilot.pause()
        underline = tabs.query_one("Underline")
        assert not app.animator.is_being_animated(underline, "highlight_start")
        two = tabs.query_one("#two")
        start = two.virtual_region.shrink(two.styles.gutter).column_span[0]
        assert underline.highlight_start == start  # type: ignore[attr-defined]


def test_a_scroll_view_still_updates_its_scrollbars_through_scroll_update() -> None:
    """Textual's scroll view hands every new size to `_scroll_update`, which
    is what draws the scrollbars again: `SteadyScrollbars` skips it."""
    assert "virtual_size" in inspect.signature(ScrollView._scroll_update).parameters
    assert "self._scroll_update(" in inspect.getsource(ScrollView._size_updated)
    assert "vertical_scrollbar.refresh()" in inspect.getsource(ScrollView._scroll_update)
    assert issubclass(textual_private.SteadyScrollbars, ScrollView)


@pytest.mark.parametrize("_round", range(3))
def test_event_clock_is_the_clock_of_textuals_stamps(_round: int) -> None:
    before = event_time()
    stamped = Message().time
    after = event_time()
    assert before <= stamped <= after
