"""House figures for a package: module sizes, long functions, import cycles, mypy --strict.

    python scripts/house_figures.py [--src PATH] [--no-mypy]

PATH is the package directory (default: src/reclaim_tui beside this script).
Prints the number of .py files, the median and largest module (lines), every
function or method longer than 50 lines, the import cycles among the package's
own modules (strongly connected components of more than one module; imports
inside functions count, `if TYPE_CHECKING:` blocks do not) and the number of
`mypy --strict` errors over the directory holding the package. mypy runs from
the nearest directory with a pyproject.toml, so that project's settings apply.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

LONG_FUNCTION = 50
DEFAULT_SRC = Path(__file__).resolve().parent.parent / "src" / "reclaim_tui"


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int
    imports: set[str] = field(default_factory=set)


def module_name(package_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def load_modules(package_dir: Path) -> dict[str, Module]:
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = module_name(package_dir, path)
        tree = ast.parse(text, filename=str(path))
        modules[name] = Module(name, path, tree, len(text.splitlines()))
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(module: Module) -> Iterator[str]:
    """Every module name an import statement may load, anywhere in the file
    except under `if TYPE_CHECKING:` (its `else:` still counts)."""
    is_package = module.path.name == "__init__.py"
    stack: list[ast.AST] = [module.tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.name.split(".")
                if not is_package:
                    package.pop()
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            # `from X import Y` loads X.Y if that is a module, else X.
            yield from (f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))


def resolve_imports(modules: dict[str, Module]) -> None:
    """Edges to the most specific module of the package each import names."""
    for module in modules.values():
        for name in imported_names(module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module.name:
                module.imports.add(name)


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in sorted(modules[name].imports):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(modules):
        if name not in index:
            visit(name)
    return sorted(found, key=lambda c: (-len(c), c))


def long_functions(module: Module) -> Iterator[tuple[int, str, int]]:
    """(line, qualified name, length) of every function longer than LONG_FUNCTION."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[int, str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > LONG_FUNCTION:
                        yield child.lineno, name, length
                yield from walk(child, name + ".")
            else:
                yield from walk(child, prefix)

    yield from walk(module.tree, "")


def mypy_errors(package_dir: Path) -> str:
    if importlib.util.find_spec("mypy") is None:
        return "mypy is not installed"
    target = package_dir.parent
    with_config = [d for d in [target, *target.parents] if (d / "pyproject.toml").exists()]
    project = with_config[0] if with_config else target
    argv = [sys.executable, "-m", "mypy", "--strict", str(target.relative_to(project))]
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)
    summary = re.search(r"Found (\d+) errors?", done.stdout)
    if summary:
        return f"{summary.group(1)} errors"
    if "Success" in done.stdout:
        return "0 errors"
    return f"mypy did not finish (exit {done.returncode}): {(done.stderr or done.stdout)[-300:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description="House figures for a package.")
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="the package directory")
    parser.add_argument("--no-mypy", action="store_true", help="skip the mypy --strict count")
    args = parser.parse_args()
    package_dir: Path = args.src.resolve()
    modules = load_modules(package_dir)
    if not modules:
        sys.exit(f"no .py files under {package_dir}")
    resolve_imports(modules)

    def shown(module: Module) -> str:
        return str(module.path.relative_to(package_dir.parent))

    largest = max(modules.values(), key=lambda m: m.lines)
    median = statistics.median(m.lines for m in modules.values())
    print(f"package: {package_dir}")
    print(f"python files: {len(modules)}")
    print(f"module lines: median {median:g}, largest {shown(largest)} ({largest.lines})")

    long = [(shown(m), *f) for m in modules.values() for f in long_functions(m)]
    long.sort(key=lambda f: (-f[3], f[0], f[1]))
    print(f"functions over {LONG_FUNCTION} lines: {len(long)}")
    for path, line, name, length in long:
        print(f"  {path}:{line} {name} {length}")

    found = cycles(modules)
    print(f"import cycles: {len(found)}")
    for component in found:
        print(f"  {len(component)} modules: {', '.join(component)}")

    if not args.no_mypy:
        print(f"mypy --strict {package_dir.parent.name}/: {mypy_errors(package_dir)}")


if __name__ == "__main__":
    main()
