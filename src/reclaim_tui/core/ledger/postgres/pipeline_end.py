"""A pipeline whose last message to the server is the Sync that ends it.

psycopg leaves pipeline mode by sending a Sync and then, while results are
still on their way, a Flush. Behind a transaction pooler (PgBouncer in
`pool_mode=transaction`) the server connection goes back to the pool at
the ReadyForQuery that answers the Sync: a Flush that reaches the pooler
after that is a new request, and the pooler links a server connection to
the client for it. The server answers a Flush with nothing, so that server
connection stays this client's, idle, until the client's next transaction:
one host that sent its last transaction and waits holds a server
connection for ever, and the other hosts queue behind it until the
pooler's `query_wait_timeout` drops them (in pipeline mode libpq then
reports only "server closed the connection unexpectedly"). Whether the
Flush arrives before or after the release is a race the pooler decides:
on a loaded machine the client is often descheduled between the two.

The Sync alone is enough: the server sends everything before it, its
ReadyForQuery included, as it answers it. `end_at_sync` gives the pipeline of
`AsyncConnection.pipeline()` with that exit: the Sync, everything queued
on its way, then the results read as they come. An exit whose wait was
given up (a task cancelled twice: psycopg closes the connection) reads
nothing more when the garbage collector finalizes it.

The exit is written on psycopg's own pipeline steps, which are not its
public API. A psycopg whose pipeline lacks them (`FITS` false) keeps its
stock exit: the Flush comes back, and with it the race above, but every
transaction still works; tests/unit/test_pg_pipeline_end.py fails on such
a release, so it is seen before it is shipped.
"""

from __future__ import annotations

from inspect import Parameter, signature

import psycopg
from psycopg.abc import PQGen
from psycopg.generators import send

__all__ = ["FITS", "end_at_sync"]


def _fits() -> bool:
    """Whether this psycopg's pipeline has the steps `_EndsAtSync` uses."""
    base = psycopg.AsyncPipeline
    steps = ("_exit_gen", "_enqueue_sync", "_communicate_gen", "_fetch_gen")
    if not all(callable(getattr(base, name, None)) for name in steps):
        return False
    flush = signature(base._fetch_gen).parameters.get("flush")
    return flush is not None and flush.kind is Parameter.KEYWORD_ONLY


#: This psycopg's pipeline can be left without a Flush (see the module's text).
FITS = _fits()


class _EndsAtSync(psycopg.AsyncPipeline):
    """psycopg's pipeline, left without a Flush after its last Sync."""

    def _exit_gen(self) -> PQGen[None]:
        self._enqueue_sync()
        try:
            yield from self._communicate_gen()
        except GeneratorExit:
            # Closed unfinished (its wait was given up: a cancelled task,
            # and psycopg closed the connection): nothing more to read.
            raise
        except BaseException:
            yield from self._rest()
            raise
        yield from self._rest()

    def _rest(self) -> PQGen[None]:
        """The results still on their way: what libpq could not write at
        once goes out, then they are read as the server sends them (the
        Sync makes it send every one: no Flush is asked for)."""
        if self.result_queue:
            yield from send(self.pgconn)
            yield from self._fetch_gen(flush=False)


def end_at_sync(pipeline: psycopg.AsyncPipeline) -> None:
    """Have `pipeline` (just entered) send nothing after its Sync as it exits."""
    if FITS and type(pipeline) is psycopg.AsyncPipeline:
        pipeline.__class__ = _EndsAtSync
