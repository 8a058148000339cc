"""A real PostgreSQL connection that keeps every statement it runs, for the tests that look
at the plan of what the service ran (tests/api/test_query_plans.py and
tests/loader/test_visibility.py)."""

from __future__ import annotations

from typing import Any

import psycopg


class RecordingCursor(psycopg.Cursor[Any]):
    """A real cursor that keeps each statement it runs on its connection's list."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        """Remember the statement, then run it as usual."""
        self.connection.ran.append((query, params))  # type: ignore[attr-defined]
        return super().execute(query, params, **kwargs)


class RecordingConnection(psycopg.Connection[Any]):
    """A real connection that also keeps each statement it runs, with its parameters, on
    any of its cursors (conn.execute and the row readers of registry.database.rows alike)."""

    ran: list[tuple[str, Any]]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.ran = []
        self.cursor_factory = RecordingCursor
