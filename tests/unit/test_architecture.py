"""The shape issue 26 asks for, kept by a test: no import circle anywhere in
`src/`, no module over ~400 lines and no class over ~300 unless it says at
its top why it must be one piece (the words "one piece" in the module's or
the class's docstring). import-linter's contracts (pyproject.toml) keep the
rooms' directions; this keeps the circles and the sizes."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

SRC = Path(__file__).resolve().parents[2] / "src" / "reclaim_tui"
#: "~400": a module may run a little over before it must be split or explained.
MODULE_LINES = 420
CLASS_LINES = 300


def test_no_import_circles_inside_src() -> None:
    graph = grimp.build_graph("reclaim_tui", exclude_type_checking_imports=True)
    circles = sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith("reclaim_tui")
        and graph.find_shortest_chain(importer=imported, imported=importer)
    )
    assert circles == []


def _says_one_piece(node: ast.AST) -> bool:
    doc = ast.get_docstring(node)  # type: ignore[arg-type]
    return bool(doc) and "one piece" in " ".join(doc.split())


def test_no_module_or_class_is_over_its_limit_without_saying_why() -> None:
    over: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        name = str(path.relative_to(SRC.parent))
        if lines > MODULE_LINES and not _says_one_piece(tree):
            over.append(f"{name}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > CLASS_LINES and not _says_one_piece(node):
                    over.append(f"{name}: class {node.name} {size} lines")
    assert over == []
