"""Every regular expression in src/ is linear: no quantified group whose
body holds another quantifier or alternatives that may begin with the same
character (the shapes that backtrack exponentially), found by reading each
pattern's parse tree; and the patterns that read text from the API, the
ledger or a file are fed adversarial input of a bounded size, counting what
they scan rather than timing it (issue 40 point 9)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

import pytest

from reclaim_tui.core.ledger import urls
from reclaim_tui.tui import format as fmt

SRC = Path(__file__).parents[2] / "src" / "reclaim_tui"
#: Characters a first-character set is sampled over.
SAMPLE = [chr(c) for c in range(128)] + ["é", "\u00a0", "\u2028", "\ufdd0", "٣"]
_CATEGORY = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (C.AT, C.ASSERT, C.ASSERT_NOT)


def _in_set(items: list[tuple[Any, Any]], ch: str, flags: int) -> bool:
    hit, negate = False, False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            hit |= ch == chr(av) or bool(flags & re.I and ch.lower() == chr(av).lower())
        elif op is C.RANGE:
            hit |= av[0] <= ord(ch) <= av[1]
        elif op is C.CATEGORY:
            hit |= re.fullmatch(_CATEGORY[av], ch) is not None
    return hit != negate


def _first(items: Any, flags: int) -> set[str] | None:
    """The sample characters `items` may begin with (None: it may match empty)."""
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op is C.LITERAL:
            return {
                c for c in SAMPLE if c == chr(av) or (flags & re.I and c.lower() == chr(av).lower())
            }
        if op is C.NOT_LITERAL:
            return {c for c in SAMPLE if c != chr(av)}
        if op is C.ANY:
            return set(SAMPLE) if flags & re.S else set(SAMPLE) - {"\n"}
        if op is C.IN:
            return {c for c in SAMPLE if _in_set(av, c, flags)}
        if op is C.SUBPATTERN:
            found = _first(av[3], flags)
            if found is not None:
                return found
            continue
        if op is C.BRANCH:
            sets = [_first(alt, flags) for alt in av[1]]
            if any(s is None for s in sets):
                return None
            return set().union(*sets)  # type: ignore[arg-type]
        if op in _REPEATS:
            if av[0] == 0:
                return None
            return _first(av[2], flags)
        if op is C.GROUPREF:
            return set(SAMPLE)
        return set(SAMPLE)
    return None


def _quantified(items: Any) -> bool:
    """`items` holds a quantifier that may repeat."""
    for op, av in items:
        if op in _REPEATS and av[1] > 1:
            return True
        if op is C.SUBPATTERN and _quantified(av[3]):
            return True
        if op is C.BRANCH and any(_quantified(alt) for alt in av[1]):
            return True
        if op in (C.ASSERT, C.ASSERT_NOT) and _quantified(av[1]):
            return True
    return False


def _ambiguous(items: Any, flags: int) -> bool:
    """Alternatives of `items` that may begin with the same character."""
    for op, av in items:
        if op is C.BRANCH:
            sets = [_first(alt, flags) for alt in av[1]]
            if any(s is None for s in sets):
                return True
            seen: set[str] = set()
            for s in sets:
                if seen & s:  # type: ignore[operator]
                    return True
                seen |= s  # type: ignore[operator]
        if op is C.SUBPATTERN and _ambiguous(av[3], flags):
            return True
    return False


def problems(pattern: str, flags: int = 0) -> list[str]:
    """The shapes of `pattern` that may backtrack exponentially."""
    tree = _parser.parse(pattern, flags)
    flags |= tree.state.flags
    found: list[str] = []

    def walk(items: Any) -> None:
        for op, av in items:
            if op in _REPEATS and av[1] > 1:
                body = av[2]
                if _quantified(body):
                    found.append("a quantifier inside a quantified group")
                if _ambiguous(body, flags):
                    found.append("a quantified choice whose alternatives overlap")
                walk(body)
            elif op is C.SUBPATTERN:
                walk(av[3])
            elif op is C.BRANCH:
                for alt in av[1]:
                    walk(alt)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                walk(av[1])

    walk(tree)
    return found


def _flags(call: ast.Call) -> int:
    value = 0
    for node in ast.walk(call):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "re" and node.attr in ("IGNORECASE", "I", "DOTALL", "S"):
                value |= getattr(re, node.attr)
    return value


def src_patterns() -> Iterator[tuple[str, str, int]]:
    """(where, pattern, flags) of every `re.…(pattern)` call written in src/."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.args
            ):
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield where, arg.value, _flags(node)
            elif node.func.attr != "escape":
                yield where, DYNAMIC, 0


DYNAMIC = "<built at run time>"
#: Patterns built at run time, as they are built (each from a fixed list of words).
BUILT = {
    # The nonce is hex (secrets.token_hex): no character of it is special.
    "core/result_json.py": [r'"\\u0000' + "0" * 32 + r':(\d+)\\u0000"'],
    "core/ledger/urls.py": [
        urls._keyword_dsn().pattern,
        *(rf"[?&]{key}=([^&]*)" for key in urls.SECRET_KEYWORDS),
        *(rf"(?:^|\s){key}\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)" for key in urls.SECRET_KEYWORDS),
    ],
}


def test_the_analysis_finds_the_shapes_that_backtrack() -> None:
    assert problems(r"(a+)+b")
    assert problems(r"(?:a|ab)*c")
    assert problems(r"(['\"])((?:\\.|(?!\1).)*)\1")  # the console's old API-message pattern
    assert problems(r"(?:\\.|\S)+")
    assert not problems(r"'((?:[^'\\]|\\.)*)'")
    assert not problems(r"[A-Za-z0-9._~-]{1,512}")


@pytest.mark.parametrize(
    ("where", "pattern", "flags"), list(src_patterns()), ids=lambda x: str(x)[:60]
)
def test_every_pattern_in_src_is_linear(where: str, pattern: str, flags: int) -> None:
    if pattern == DYNAMIC:
        built = BUILT.get(where.split(":")[0])
        assert built, f"{where}: a pattern built at run time must be listed in BUILT"
        for each in built:
            assert not problems(each), (where, each)
        return
    assert not problems(pattern, flags), (where, pattern, problems(pattern, flags))


def test_the_api_message_of_an_adversarial_error_is_read_from_a_bounded_prefix() -> None:
    """A last error holding `{'error': {'message': '` and a run of
    backslashes froze the console; the message read is bounded too."""
    for tail in ("\\" * 40, "\\" * 40 + "x", "\\" * 200_000, "'a\\'b" * 50_000):
        message = "ClientError: 400 INVALID_ARGUMENT. {'error': {'message': '" + tail
        line = fmt.shorten_error(message, 80)
        assert len(line) <= 80
        assert line.startswith("ClientError")
    whole = (
        "ClientError: 400. {'error': {'code': 400, 'message': 'bad model \\'x\\'',"
        " 'status': 'INVALID_ARGUMENT'}}"
    )
    assert fmt.shorten_error(whole, 200) == "ClientError: 400: INVALID_ARGUMENT: bad model \\'x\\'"
    huge = whole + " " + "y" * (2 * fmt.MAX_ERROR_SCANNED)
    assert fmt.shorten_error(huge, 200) == fmt.shorten_error(huge[: fmt.MAX_ERROR_SCANNED], 200)


def test_a_keyword_dsn_of_adversarial_blanks_is_read() -> None:
    assert urls.is_database_url(" " * 50_000 + "x=" + " " * 50_000) is False
    assert urls.is_database_url("  host=x   dbname=y") is True
