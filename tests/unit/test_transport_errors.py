"""How a create's aiohttp errors read, as httpx-aiohttp raises them: the httpx
exception it names (a connect timeout for most), with aiohttp's own beneath.
Only a connection never made, or a connect or pool timeout, is "not sent";
whatever may come after the request went out is "maybe created"."""

from __future__ import annotations

import aiohttp
import pytest
from httpx_aiohttp.httpx2 import transport

from reclaim_tui.core.gemini.errors import Redactor, create_error
from reclaim_tui.errors import MaybeCreatedError, NotCreatedError


def _through_httpx_aiohttp(exc: BaseException) -> BaseException:
    try:
        with transport.map_aiohttp_exceptions():
            raise exc
    except Exception as mapped:
        return mapped
    raise AssertionError("not raised")


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        # waiting for a connection, or making one, timed out: nothing sent
        (aiohttp.ConnectionTimeoutError("Connection timeout to host"), NotCreatedError),
        # the server closed the connection without answering the request
        (aiohttp.ServerDisconnectedError(), MaybeCreatedError),
        # reset while the request was being written or its answer read
        (aiohttp.ClientOSError(104, "Connection reset by peer"), MaybeCreatedError),
        (aiohttp.SocketTimeoutError("Timeout on reading data from socket"), MaybeCreatedError),
        (aiohttp.ClientPayloadError("Response payload is not completed"), MaybeCreatedError),
        # the URL was refused while the request was being built: nothing sent
        (aiohttp.InvalidUrlClientError("/not%20a%20url/v1/interactions"), NotCreatedError),
        (aiohttp.NonHttpUrlClientError("htp://127.0.0.1:9/v1/interactions"), NotCreatedError),
        # the same refusals of a redirect's Location come after an answer was read
        (aiohttp.InvalidUrlRedirectClientError("http://", "no host"), MaybeCreatedError),
        (aiohttp.NonHttpUrlRedirectClientError("ftp://elsewhere/"), MaybeCreatedError),
    ],
)
def test_an_aiohttp_error_reads_as_sent_or_not(raised: BaseException, expected: type) -> None:
    mapped = _through_httpx_aiohttp(raised)
    assert mapped.__cause__ is raised
    err = create_error(mapped, Redactor("k" * 20))
    assert type(err) is expected, (type(mapped).__name__, err)
    # named by aiohttp's error, not httpx-aiohttp's "connect timeout"
    assert f": {type(raised).__name__}: " in str(err), err
    if isinstance(err, NotCreatedError):
        assert (
            err.retryable
            and err.cause == "transport"
            and str(err).startswith("create was not sent")
        )
    else:
        assert err.cause == "transport" and str(err).startswith("create sent, no usable answer")
