"""Tables a load fills on a second connection, beside its own transaction.

PostgreSQL gives each connection one core, and a load is one transaction on one connection,
so while it sends one table with COPY the machine's other core waits. Two tables need nothing
the transaction has done before them: the carriages (the largest table, sent while the
transaction sends the others) and the rendered records of origin_docs (sent as the render
workers finish, while the transaction builds the read model's other tables and indexes).

A Beside fills such a table on a second connection to the same server, in a schema of its own
(graph_stage_<hex>), in a thread, and commits it; the load's transaction then moves it into
graph_next (ALTER TABLE ... SET SCHEMA: a catalog change, no rows copied). The graph is still
published whole or not at all: the staged table is invisible to readers, and a load that
fails puts it back in the staging schema when its transaction rolls back. Closing the Beside
drops that schema; one left behind by a killed loader is dropped by the next load
(prepare_graph_next.sql).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from types import TracebackType

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from registry.database.queries import QUERIES


def connect_beside(conn: psycopg.Connection) -> psycopg.Connection:
    """A second autocommit connection to the very server conn is connected to, as its user."""
    params = conn.info.get_parameters()
    params["host"] = conn.info.host
    params["port"] = str(conn.info.port)
    if "hostaddr" in params:
        params["hostaddr"] = conn.info.hostaddr
    # The first connection chose its host already; the second must not choose again.
    params.pop("target_session_attrs", None)
    params.pop("load_balance_hosts", None)
    password = conn.info.password
    if password:
        params["password"] = password
    return psycopg.connect(make_conninfo(**params), autocommit=True)


class Beside:
    """One table at a time filled on a second connection; see the module's docstring.

    fill(table, job) runs job(connection) in a thread, in a transaction whose search_path is
    the staging schema; job creates the table there and fills it. take(table) waits for it
    (raising what job raised) and, in the load's transaction, puts it in place of graph_next's
    table of that name. close() stops a fill still running and drops the staging schema.
    """

    def __init__(self, conn: psycopg.Connection):
        self._conn = conn
        self._side = connect_beside(conn)
        self.schema = f"graph_stage_{secrets.token_hex(6)}"
        self._created = False
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> Beside:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def fill(self, table: str, job: Callable[[psycopg.Connection], None]) -> None:
        """Start filling table: job(connection) in a thread, committed when it returns."""
        if self._thread is not None:
            raise RuntimeError("one table at a time: take the last one first")
        create = not self._created
        self._created = True

        def run() -> None:
            try:
                with self._side.transaction():
                    if create:
                        self._side.execute(self._format("load/create_stage_schema"))
                    self._side.execute(QUERIES["load/use_stage_schema"], {"schema": self.schema})
                    job(self._side)
            except BaseException as error:  # handed to the loader's thread by take()
                self._error = error

        self._thread = threading.Thread(target=run, name=f"load-{table}", daemon=True)
        self._thread.start()

    def take(self, table: str) -> None:
        """Wait for table's fill, then, in the load's transaction, move it into graph_next."""
        self._join()
        error, self._error = self._error, None
        if error is not None:
            raise error
        self._conn.execute(
            sql.SQL(QUERIES["load/take_staged_table"]).format(
                table=sql.Identifier(table), staged=sql.Identifier(self.schema, table)
            )
        )

    def close(self) -> None:
        """Stop a fill still running, drop the staging schema, close the second connection.

        Called once the load's transaction has ended. The drop waits for locks at most
        briefly: if the next load has already begun dropping the schema, it is left to it.
        """
        try:
            if self._thread is not None:
                self._side.cancel_safe()
                self._join()
            if self._created:
                try:
                    with self._side.transaction():
                        self._side.execute(QUERIES["load/set_lock_timeout"])
                        self._side.execute(self._format("load/drop_stage_schema"))
                except (errors.LockNotAvailable, errors.QueryCanceled):
                    pass
        finally:
            self._side.close()

    def _join(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def _format(self, name: str) -> sql.Composed:
        return sql.SQL(QUERIES[name]).format(schema=sql.Identifier(self.schema))
