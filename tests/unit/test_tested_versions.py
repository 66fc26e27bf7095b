"""What pyproject.toml promises is what CI tests.

- Each runtime dependency's range starts at the version the oldest run installs
  (`./dev test-oldest`: the lock, constraints.txt, with google-genai at its lower
  bound) and admits no major series above the lock's (for a 0.x package, a minor
  series is a major one): a lower bound below it, or a major never installed by a
  required run, would promise what no test has seen.
- Each google-genai version the fast path is verified on (`FAST_PATH_SDK_VERSIONS`)
  is one a required run of .ci/run installs, where
  tests/contract/test_fast_path_versions.py proves it.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from reclaim_tui.core.gemini.fastpath import FAST_PATH_SDK_VERSIONS

ROOT = Path(__file__).resolve().parents[2]
SDK = "google-genai"


def _runtime_requirements() -> list[Requirement]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return [Requirement(line) for line in tomllib.load(f)["project"]["dependencies"]]


def _lower_bound(req: Requirement) -> Version:
    lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(lower) == 1, f"{req}: one `>=` lower bound"
    return lower[0]


def _upper_bound(req: Requirement) -> Version:
    upper = [Version(s.version) for s in req.specifier if s.operator == "<"]
    assert len(upper) == 1, f"{req}: one `<` upper bound"
    return upper[0]


def _lock() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        found = re.match(r"([A-Za-z0-9._-]+)==([^ ;]+)", line)
        if found:
            pins[canonicalize_name(found[1])] = Version(found[2])
    return pins


def _oldest_run_pins() -> dict[str, Version]:
    """The versions `./dev test-oldest` installs: the lock's, and google-genai's lower bound."""
    # That is how ./dev installs a pinned SDK; if it changes, this must follow.
    assert """grep -v '^google-genai==' "$LOCK" """ in (ROOT / "dev").read_text()
    sdk = next(r for r in _runtime_requirements() if canonicalize_name(r.name) == SDK)
    return {**_lock(), SDK: _lower_bound(sdk)}


def _next_series(version: Version) -> Version:
    """The first version of the series after `version`'s (a 0.x package's minors break)."""
    major, minor = (*version.release, 0)[:2]
    return Version(f"0.{minor + 1}") if major == 0 else Version(f"{major + 1}")


def test_each_runtime_dependency_starts_at_the_version_the_oldest_run_installs() -> None:
    oldest = _oldest_run_pins()
    wrong = {
        str(req): f"the oldest run installs {oldest.get(canonicalize_name(req.name))}"
        for req in _runtime_requirements()
        if oldest.get(canonicalize_name(req.name)) != _lower_bound(req)
    }
    assert wrong == {}, "raise the lower bound to what CI tests, or test the lower bound"


def test_no_runtime_dependency_admits_a_major_series_no_run_installs() -> None:
    lock = _lock()
    wrong = {
        str(req): f"the lock has {lock[canonicalize_name(req.name)]}"
        for req in _runtime_requirements()
        if _upper_bound(req) > _next_series(lock[canonicalize_name(req.name)])
    }
    assert wrong == {}


def _required_runs() -> list[list[str]]:
    """The words of each required `run …` line of .ci/run."""
    text = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")
    runs = [shlex.split(line) for line in text.splitlines() if line.startswith("run ")]
    return [words for words in runs if words[3] == "required"]


def _sdks_installed_by_ci() -> set[Version]:
    sdk = next(r for r in _runtime_requirements() if canonicalize_name(r.name) == SDK)
    versions: set[Version] = set()
    for words in _required_runs():
        command = words[words.index("--") + 1]
        pinned = [w.split("=", 1)[1] for w in words if w.startswith("RECLAIM_SDK=")]
        if command == "test-oldest" or pinned == ["oldest"]:
            versions.add(_lower_bound(sdk))
        elif pinned and pinned[0][0].isdigit():
            versions.add(Version(pinned[0]))
        elif not pinned:
            versions.add(_lock()[SDK])
    return versions


def test_ci_installs_the_lowest_and_the_locked_sdk() -> None:
    sdk = next(r for r in _runtime_requirements() if canonicalize_name(r.name) == SDK)
    assert {_lower_bound(sdk), _lock()[SDK]} <= _sdks_installed_by_ci()


def test_each_sdk_the_fast_path_is_verified_on_is_installed_by_a_required_ci_run() -> None:
    tested = _sdks_installed_by_ci()
    untested = [v for v in FAST_PATH_SDK_VERSIONS if Version(v) not in tested]
    assert untested == [], (
        f"listed as verified but installed by no required run of .ci/run ({sorted(tested)}):"
        " add a run for it, or take it off the list"
    )
