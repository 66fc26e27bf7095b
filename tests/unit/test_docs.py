"""The product's face stays true: the README's shape, the manual builds without a
warning or a broken link, every section a comment cites exists, the performance
page is what its results files say, and `--help`, `--version` and shell
completion are what the docs say."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SRC = ROOT / "src" / "reclaim_tui"
#: A picture in Markdown, or an <img> tag.
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)|<img\b")
#: "DESIGN.md §6", "docs/design.md §2", "DESIGN §3", "DESIGN.md §1/§6".
CITED = re.compile(r"DESIGN(?:\.md)?\s+((?:§\d+[/, ]*)+)", re.IGNORECASE)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reclaim_tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_the_readme_is_short_and_shows_the_console_early() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines (at most 250)"
    first = next((n for n, line in enumerate(lines, 1) if IMAGE.search(line)), None)
    assert first is not None and first <= 25, f"the README's first image is at line {first}"


def test_the_readme_keeps_the_two_set_up_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert re.search(r"^\./dev demo\b", text, re.MULTILINE)
    assert re.search(r"^\./dev test\b", text, re.MULTILINE)
    dev = (ROOT / "dev").read_text(encoding="utf-8")
    assert "\n  demo)" in dev and "\n  test | test-oldest)" in dev


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "benchmarks/README.md"])
def test_every_relative_link_outside_the_site_resolves(page: str) -> None:
    """The pages the forge shows but MkDocs does not build: every relative link
    names a file or folder that exists (a link into docs/ with an #anchor is
    checked by the site's build)."""
    path = ROOT / page
    links = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    relative = [link.split("#", 1)[0] for link in links if "://" not in link]
    missing = [link for link in relative if link and not (path.parent / link).exists()]
    assert relative and not missing, missing


def _design_sections() -> set[str]:
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    return set(re.findall(r"^## (\d+)\. ", text, re.MULTILINE))


def test_every_design_section_a_comment_cites_exists() -> None:
    have = _design_sections()
    missing = []
    for path in [*sorted(SRC.rglob("*.py")), ROOT / "pyproject.toml"]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for cited in CITED.finditer(line):
                for section in re.findall(r"§(\d+)", cited[1]):
                    if section not in have:
                        missing.append(f"{path.relative_to(ROOT)}:{number}: §{section}")
    assert have >= {str(n) for n in range(1, 9)}
    assert not missing, "cited sections docs/design.md does not have:\n" + "\n".join(missing)


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a module."""
    source = path.read_text(encoding="utf-8")
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            is_text = isinstance(statement, ast.Expr) and isinstance(
                getattr(statement, "value", None), ast.Constant
            )
            if not is_text or not isinstance(statement.value.value, str):
                continue
            if index == 0 or isinstance(body[index - 1], (ast.Assign, ast.AnnAssign)):
                found.append((statement.lineno, statement.value.value))
    return found


def test_source_comments_name_no_issue_of_a_tracker() -> None:
    """Comments explain the code: the reason stays, in words; an issue number of a
    tracker that is not in the repository does not (a commit body may carry it)."""
    cited = [
        f"{path.relative_to(ROOT)}:{line}: {match[0]}"
        for path in sorted(SRC.rglob("*.py"))
        for line, text in _comments_and_docstrings(path)
        for match in re.finditer(r"\bissues?\s+\d+", text, re.IGNORECASE)
    ]
    assert not cited, "\n".join(cited)


def _perf_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perf_page", ROOT / "scripts" / "perf_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_performance_page_is_what_the_results_files_say() -> None:
    perf = _perf_page()
    results = perf.load()
    assert len(results) >= 10
    for name, result in results:
        for key in ("command", "date", "machine", "load"):
            assert result[key], f"benchmarks/results/{name}.json: no {key}"
    committed = (DOCS / "performance.md").read_text(encoding="utf-8")
    assert perf.page(results) == committed, "run: python scripts/perf_page.py"
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert perf.readme(results, bench) == bench, "run: python scripts/perf_page.py"


def test_a_figure_in_the_performance_page_comes_from_a_results_file() -> None:
    """The page follows its source: change a figure in a copy of a results file and
    the page written from it changes with it."""
    perf = _perf_page()
    results = perf.load()
    result = next(r for n, r in results if n == "startup")
    assert "0.108 s" in perf.page(results)
    result["rows"][0]["reclaim_tui"] = "**0.099 s**"
    page = perf.page(results)
    assert "**0.099 s**" in page and "0.108 s" not in page


def test_the_manual_builds_strict_without_a_warning(tmp_path: Path) -> None:
    """mkdocs --strict: a warning, a link to a missing page or picture, or a missing
    anchor fails the build (mkdocs.yml's `validation`)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "screenshots" / "main.svg").exists()


def test_every_page_is_in_the_site_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_version_is_the_package_version() -> None:
    done = _cli("--version")
    assert done.returncode == 0, done.stderr
    version = importlib.metadata.version("reclaim-tui")
    assert done.stdout.strip() == f"reclaim-tui, version {version}"


def test_every_command_of_the_help_is_in_the_cli_reference_and_back() -> None:
    done = _cli("--help")
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("Commands:", 1)[1]
    commands = set(re.findall(r"^  ([a-z]+)\s", listed, re.MULTILINE))
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    table = reference.split("## Commands", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z]+)\b", table, re.MULTILINE))
    documented |= set(re.findall(r"` / `([a-z]+)`", table))
    assert commands == documented


def test_the_exit_status_of_the_help_is_the_cli_references() -> None:
    """`reclaim-tui --help` ends as a manual page does, with the exit status: the
    same codes as the reference's table, and the completion it documents."""
    done = _cli("--help")
    assert done.returncode == 0, done.stderr
    status = done.stdout.split("Exit status:", 1)[1].split("\n\n", 1)[0]
    in_help = re.findall(r"^\s+(\d)  ", status, re.MULTILINE)
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    table = reference.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    assert in_help == re.findall(r"^\| (\d) \|", table, re.MULTILINE)
    assert "_RECLAIM_TUI_COMPLETE=bash_source reclaim-tui" in done.stdout


def test_bash_completion_is_clicks_and_completes_the_lazy_commands() -> None:
    script = _cli(env={"_RECLAIM_TUI_COMPLETE": "bash_source"})
    assert script.returncode == 0, script.stderr
    assert "complete -o nosort -F _reclaim_tui_completion reclaim-tui" in script.stdout
    words = _cli(
        env={
            "_RECLAIM_TUI_COMPLETE": "bash_complete",
            "COMP_WORDS": "reclaim-tui ti",
            "COMP_CWORD": "1",
        }
    )
    assert words.returncode == 0, words.stderr
    assert words.stdout.split() == ["plain,tick"]
    flags = _cli(
        env={
            "_RECLAIM_TUI_COMPLETE": "bash_complete",
            "COMP_WORDS": "reclaim-tui tick --fail-on",
            "COMP_CWORD": "2",
        }
    )
    assert flags.stdout.split() == ["plain,--fail-on-errors"]
    cli_md = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "_RECLAIM_TUI_COMPLETE=bash_source reclaim-tui" in cli_md
