"""Other clients of the emulator, installed by the tests themselves, cached per machine.

The official JavaScript SDK (`npm ci` from tests/contract/js_client's
package.json and package-lock.json) and google-genai 2.x (a virtualenv of
its own: it cannot live next to the suite's 3.x). Each is installed once
into a cache folder (`RECLAIM_TEST_CACHE`, else `$XDG_CACHE_HOME` or
`~/.cache`, under `reclaim-tui-tests/`), keyed by what it installs, under a
file lock so parallel workers install it once. Without node/npm, or when
the install fails: the test is skipped with a warning, except under CI
(env `CI`), where that is a failure (CI installs node and npm itself).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["GENAI2_VERSION", "JS_CLIENT", "genai2_python", "js_client_dir", "missing"]

JS_CLIENT = Path(__file__).resolve().parents[1] / "contract" / "js_client"
#: The newest google-genai 2.x; pydantic-ai-slim 2.68 pins `google-genai>=2.30.0,<3`.
GENAI2_VERSION = "2.34.0"
_INSTALL_TIMEOUT = 900


def _cache_root() -> Path:
    chosen = os.environ.get("RECLAIM_TEST_CACHE")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reclaim-tui-tests"


#: Read once, at import: tests change XDG variables of their own.
CACHE = _cache_root()


def missing(what: str) -> None:
    """Skip loudly for want of `what`, or fail under CI."""
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{what} (CI is set: CI must run the other clients)", pytrace=False)
    warnings.warn(f"SKIPPED, other clients not tested: {what}", stacklevel=2)
    pytest.skip(what)


@contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(argv: list[str], cwd: Path | None = None) -> None:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        missing(f"{' '.join(argv[:3])} did not run: {exc}")
        return
    if done.returncode != 0:
        missing(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")


def js_client_dir() -> Path:
    """A copy of the samples in a folder whose parent has node_modules (the SDK, tsx)
    installed from the lock file."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            missing(f"`{tool}` is not installed (Debian: apt-get install nodejs npm)")
    lock = (JS_CLIENT / "package-lock.json").read_bytes()
    target = CACHE / f"js-client-{hashlib.sha256(lock).hexdigest()[:12]}"
    with _locked(target.name):
        stamp = target / ".installed"
        if not stamp.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy2(JS_CLIENT / name, target / name)
            _run(["npm", "ci", "--no-audit", "--no-fund"], cwd=target)
            stamp.write_text("ok\n")
        # One folder per content of the samples, never replaced: a parallel
        # worker may be running a sample in it.
        samples = target / f"samples-{_digest(JS_CLIENT / 'samples')}"
        if not samples.exists():
            partial = target / f"{samples.name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(JS_CLIENT / "samples", partial)
            partial.rename(samples)
    return samples


def _digest(folder: Path) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    parts = [(str(p.relative_to(folder)), p.read_bytes()) for p in files]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def genai2_python() -> Path:
    """The python of a virtualenv with google-genai GENAI2_VERSION, made once per machine."""
    target = CACHE / f"genai2-{GENAI2_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
    python = target / "bin" / "python"
    with _locked(target.name):
        stamp = target / ".installed"
        if not stamp.exists():
            shutil.rmtree(target, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(target)])
            _run([str(python), "-m", "pip", "install", "-q", f"google-genai=={GENAI2_VERSION}"])
            stamp.write_text("ok\n")
    return python
