"""The emulator's synchronous admin client (emulator/admin.py) against a running
emulator process: its round trips, and its one error, `AdminError`, an `OSError`
(what callers catch) with the HTTP status when one came."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from reclaim_tui.emulator.admin import AdminClient, AdminError
from tests.helpers.emulator import EmulatorProcess


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    with EmulatorProcess(tmp_path_factory.mktemp("emulator")) as process:
        yield process


def test_the_admin_round_trips(emu: EmulatorProcess) -> None:
    admin = AdminClient(emu.base_url)
    admin.reset()
    assert admin.creates() == []
    assert admin.find("no such key") == []
    assert admin.set_faults({"drop_rate": 0.0})["drop_rate"] == 0.0
    assert isinstance(admin.stats(), dict)
    assert isinstance(admin.webhook_deliveries(), dict)


def test_an_answer_other_than_2xx_is_an_admin_error_with_its_status(
    emu: EmulatorProcess,
) -> None:
    with pytest.raises(AdminError) as raised:
        AdminClient(emu.base_url).call("GET", "no-such-endpoint")
    assert raised.value.status == 404
    assert isinstance(raised.value, OSError)


def test_no_answer_is_an_admin_error_callers_catch_as_os_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: the connection is refused
        with pytest.raises(OSError) as refused:
            AdminClient(f"http://127.0.0.1:{port}").stats()
    assert isinstance(refused.value, AdminError) and refused.value.status is None
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts the connection, never answers
        port = silent.getsockname()[1]
        with pytest.raises(AdminError) as hung:
            AdminClient(f"http://127.0.0.1:{port}", timeout=0.2).stats()
    assert "Timeout" in str(hung.value) and hung.value.status is None
