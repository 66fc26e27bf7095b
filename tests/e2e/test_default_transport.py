"""The default transport is aiohttp (httpx-aiohttp's client under the SDK's httpx2
API); `--transport httpx` keeps the SDK's own client. Both verify TLS the same way
(httpx2's `create_ssl_context`, which httpx-aiohttp calls too): the same
certificate store, `SSL_CERT_FILE` from the environment, and a server whose
certificate is not trusted is "not sent" on both, never "maybe created".
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from httpx_aiohttp.httpx2 import Httpx2AiohttpClient

from reclaim_tui.bootstrap import make_backend
from reclaim_tui.config import Settings
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.models import TRANSPORTS, JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import NotCreatedError

SPEC = JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash")


def _counting_aiohttp_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods of the requests aiohttp's sessions make (httpx-aiohttp's
    transport and the fast calls' wire both make them there)."""
    sent: list[str] = []
    request = aiohttp.ClientSession.request

    def counting(self: aiohttp.ClientSession, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(kwargs.get("method", args[0] if args else "")))
        return request(self, *args, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "request", counting)
    return sent


async def test_the_default_settings_send_through_aiohttp(monkeypatch: pytest.MonkeyPatch) -> None:
    async with EmulatorServer(EmulatorConfig(latency=None)) as emu:
        backend = make_backend(Settings(base_url=emu.base_url, api_key=emu.api_key))
        try:
            await backend.warm()  # type: ignore[attr-defined]
            sent = _counting_aiohttp_requests(monkeypatch)
            created = await backend.create(SPEC, "a" * 32)
            await backend.get(created.id)
        finally:
            monkeypatch.undo()
            await backend.aclose()
    assert sent == ["POST", "GET"]
    assert isinstance(backend._interactions.sdk_configuration.async_client, Httpx2AiohttpClient)  # type: ignore[attr-defined]


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA): (cert, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reclaim emulator")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
async def tls_emulator(tmp_path: Path) -> AsyncIterator[tuple[EmulatorServer, str, Path]]:
    """The emulator's app served over TLS: (server, https base URL, its certificate)."""
    cert_file, key_file = _certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    server = EmulatorServer(EmulatorConfig(latency=None))
    runner = web.AppRunner(server.app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield server, f"https://127.0.0.1:{port}", cert_file
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_each_transport_trusts_the_same_certificates(
    tls_emulator: tuple[EmulatorServer, str, Path],
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, base_url, cert_file = tls_emulator
    # Not trusted: refused during the handshake, before any of the request is sent.
    untrusted = GeminiBackend(server.api_key, base_url, transport=transport)
    try:
        with pytest.raises(NotCreatedError) as refused:
            await untrusted.create(SPEC, "b" * 32)
    finally:
        await untrusted.aclose()
    assert refused.value.retryable and refused.value.cause == "transport"
    assert "certificate verify failed" in str(refused.value), refused.value
    assert server.store.calls["create_posts_received"] == 0
    # Trusted through the environment, as httpx2 reads it for either transport.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    trusted = GeminiBackend(server.api_key, base_url, transport=transport)
    try:
        created = await trusted.create(SPEC, "c" * 32)
        server.store.finish(server.store.interactions[created.id], "completed", "done", None)
        got = await trusted.get(created.id)
    finally:
        await trusted.aclose()
    assert got.state is RemoteState.COMPLETED and got.output_text == "done"
    assert server.store.calls["create_posts_received"] == 1
