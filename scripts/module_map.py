"""Write the "Every module" section of docs/design.md from src/reclaim_tui/.

Each module, by room (its package), with the first paragraph of its docstring,
between the two markers of that section. Run it after adding, moving or
re-describing a module:

    python scripts/module_map.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "reclaim_tui"
DESIGN = ROOT / "docs" / "design.md"
BEGIN = "<!-- every module: written by scripts/module_map.py -->"
END = "<!-- end of every module -->"
LONGEST = 160


def first_paragraph(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    if len(text) > LONGEST:
        text = text[:LONGEST].rsplit(" ", 1)[0] + " …"
    return text.replace("|", "\\|")


def section() -> str:
    rooms: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        room = "" if rel.parent == Path(".") else str(rel.parent)
        rooms.setdefault(room, []).append(f"| `{rel}` | {first_paragraph(path)} |")
    lines = []
    for room, rows in rooms.items():
        title = f"### `{room}/`" if room else "### the package's top level"
        lines += ["", title, "", "| module | what it is |", "| --- | --- |", *rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + section() + "\n" + text[end:]
    if new != text:
        DESIGN.write_text(new, encoding="utf-8")
        print(f"wrote {DESIGN.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
