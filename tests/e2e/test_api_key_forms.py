"""Issue 40 item 2: an API key with a newline was printed, stored and exported.

httpx refuses such a header on this machine (`Illegal header value
b'AIzaSy…\\nsecond-line'`): the message holds the key's repr, which the
redaction (looking for the raw key) missed, so the key reached stderr, the
ledger (last error, events) and `export`; and the create that never left the
machine was recorded as `MaybeCreatedError: create sent` (an orphan). Now the
key is checked at start (exit 2, the key not shown), every spelling of a
secret is hidden, and a request refused before it was sent is "not sent".
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.models import TRANSPORTS, JobSpec
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

FIRST = f"AIzaSy{secrets.token_hex(12)}"
SECOND = f"second-line-{secrets.token_hex(4)}"
BAD_KEY = f"{FIRST}\n{SECOND}"


def _leaks(text: str) -> list[str]:
    forms = [BAD_KEY, repr(BAD_KEY)[1:-1], FIRST, SECOND, "%0A".join((FIRST, SECOND))]
    return [form for form in forms if form in text]


@pytest.mark.parametrize("where", ["env", "flag"])
def test_a_key_with_a_newline_is_refused_at_start_unseen(
    tmp_path: Path, emulator: EmulatorProcess, where: str
) -> None:
    ws = Workspace(tmp_path / where, emulator=emulator, pass_api_key=False)
    jobs = write_jobs(ws.root / "j.jsonl", [{"input": "never sent"}])
    creates = emulator.stats()["calls"]["create"]
    if where == "env":
        run = ws.tick(jobs=jobs, env={"GEMINI_API_KEY": BAD_KEY})
    else:
        run = ws.tick("--api-key", BAD_KEY, jobs=jobs)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "the API key has a character no HTTP request can carry" in run.stderr
    assert "(a line feed, character 31 of 51)" in run.stderr, run.stderr
    assert _leaks(run.stdout + run.stderr) == []
    assert emulator.stats()["calls"]["create"] == creates
    for path in ws.root.rglob("*"):
        if path.is_file():
            assert _leaks(path.read_bytes().decode("utf-8", "replace")) == [], path


#: How each transport refuses the header: (the error's message start, its
#: detail, retryable). httpx (h11) raises a protocol error, read as a transport
#: error that sent nothing; aiohttp a ValueError while building the request,
#: read as a request the SDK rejected (nothing sent, and retrying cannot help).
REFUSALS = {
    "httpx": ("create was not sent: ", "Illegal header value b'***'", True),
    "aiohttp": ("create request rejected by the SDK: ", "Forbidden control character", False),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_header_httpx_refuses_is_not_sent_and_the_key_is_hidden(transport: str) -> None:
    """Through the real SDK: the backend built with the key anyway (as a
    library caller may): the create never leaves the machine."""
    start, detail, retryable = REFUSALS[transport]
    async with EmulatorServer(EmulatorConfig(latency=0.0)) as emu:
        backend = GeminiBackend(BAD_KEY, emu.base_url, transport=transport)
        try:
            from reclaim_tui.errors import NotCreatedError

            with pytest.raises(NotCreatedError) as caught:
                await backend.create(JobSpec(input="x", model="gemini-flash-latest"), "a" * 32)
        finally:
            await backend.aclose()
        assert emu.store.calls["create_posts_received"] == 0
    err = caught.value
    assert err.retryable is retryable, err
    assert err.cause == ("transport" if retryable else None), err
    assert str(err).startswith(start), err
    assert detail in str(err), err
    assert _leaks(str(err)) == [], str(err)


def test_every_spelling_of_a_secret_is_hidden() -> None:
    from urllib.parse import quote

    from reclaim_tui.core.gemini.errors import Redactor

    say = Redactor(BAD_KEY)
    spellings = [
        BAD_KEY,
        repr(BAD_KEY),
        repr(BAD_KEY.encode()),
        quote(BAD_KEY, safe=""),
        '{"key": "' + BAD_KEY.replace("\n", "\\n") + '"}',
        f"part {FIRST} and part {SECOND}",
    ]
    for text in spellings:
        said = say("create", ValueError(f"refused {text} here"))
        assert _leaks(said) == [] and quote(FIRST) not in said, said
        assert said.startswith("create: ValueError: refused ") and "***" in said
