"""A TCP proxy between a PostgreSQL client and its server (or pooler) that
reads the client's protocol messages and makes one race come out the same
way every time.

A client that sends something after a Sync, before that Sync's
ReadyForQuery came back (psycopg's pipeline exit sent a Flush), races the
pooler: a transaction pooler gives the server connection back to its pool
at a ReadyForQuery('I'), and a message that reaches it later is a new
request. On a loaded machine the client is often descheduled between the
two messages, and the message arrives late. This proxy makes it always late:

- a client message that arrives while a Sync's ReadyForQuery is awaited is
  held until that ReadyForQuery has come from the server;
- if it says the transaction ended ('I'), `after_end()` is awaited (the
  test waits there until the pooler has released the server connection),
  then the held messages are sent on and `after_late()` is awaited (until
  the pooler has acted on them), and only then does the client get its
  ReadyForQuery.

`messages` records each connection's message types in order ("P", "B",
"E", "S", "H", "X"…). Run it on the test's event loop:

    proxy = await WireProxy(bouncer.port, after_end=…, after_late=…).start()
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}/db?sslmode=disable"
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

__all__ = ["WireProxy"]

#: Requests that come before the startup message and are answered by one byte.
_SSL_REQUEST, _GSS_REQUEST = 80877103, 80877104


async def _nothing() -> None:
    return None


class WireProxy:
    """See the module's text. `messages[i]`: the i-th connection's client
    messages; `late[i]`: those that arrived while a Sync's reply was awaited."""

    def __init__(
        self,
        target_port: int,
        *,
        after_end: Callable[[], Awaitable[None]] = _nothing,
        after_late: Callable[[], Awaitable[None]] = _nothing,
    ) -> None:
        self.target_port = target_port
        self.after_end = after_end
        self.after_late = after_late
        self.messages: list[list[str]] = []
        self.late: list[list[str]] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> WireProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        sent: list[str] = []
        late: list[str] = []
        self.messages.append(sent)
        self.late.append(late)
        held: list[bytes] = []
        #: one future per Sync sent whose ReadyForQuery has not come back
        replies: list[asyncio.Future[None]] = []
        upward = asyncio.ensure_future(
            self._from_client(client_r, server_w, sent, late, held, replies)
        )
        try:
            await self._from_server(server_r, server_w, client_w, held, replies)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            upward.cancel()
            await asyncio.gather(upward, return_exceptions=True)
            client_w.close()
            server_w.close()
            self._tasks.discard(task)

    async def _from_client(
        self,
        reader: asyncio.StreamReader,
        server_w: asyncio.StreamWriter,
        sent: list[str],
        late: list[str],
        held: list[bytes],
        replies: list[asyncio.Future[None]],
    ) -> None:
        try:
            while True:  # SSL/GSS requests, then the startup message: no type byte
                head = await reader.readexactly(8)
                size, code = struct.unpack("!ii", head)
                server_w.write(head + await reader.readexactly(size - 8))
                if code not in (_SSL_REQUEST, _GSS_REQUEST):
                    break
            while True:
                head = await reader.readexactly(5)
                body = await reader.readexactly(struct.unpack("!i", head[1:])[0] - 4)
                kind = head[:1].decode()
                sent.append(kind)
                if replies:
                    late.append(kind)
                    held.append(head + body)
                else:
                    server_w.write(head + body)
                    await server_w.drain()
                if kind == "S":
                    replies.append(asyncio.get_running_loop().create_future())
        except (ConnectionError, asyncio.IncompleteReadError):
            server_w.close()

    async def _from_server(
        self,
        reader: asyncio.StreamReader,
        server_w: asyncio.StreamWriter,
        client_w: asyncio.StreamWriter,
        held: list[bytes],
        replies: list[asyncio.Future[None]],
    ) -> None:
        pending = await reader.readexactly(1)
        if pending == b"N":  # an SSL request refused: one byte, no message
            client_w.write(pending)
            pending = b""
        while True:
            head = pending + await reader.readexactly(5 - len(pending))
            pending = b""
            body = await reader.readexactly(struct.unpack("!i", head[1:])[0] - 4)
            if head[:1] == b"Z" and replies:
                replies.pop(0).set_result(None)
                if held:
                    if body == b"I":
                        await self.after_end()
                    for message in held:
                        server_w.write(message)
                    held.clear()
                    await server_w.drain()
                    if body == b"I":
                        await self.after_late()
            client_w.write(head + body)
            await client_w.drain()
