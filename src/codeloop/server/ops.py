"""Operations endpoints: /healthz (the process answers), /readyz (the event store answers)
and /metrics (Prometheus text, for the admin's token: it names users and their spend)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from codeloop.errors import CodeloopError
from codeloop.server.auth import ADMIN_USER
from codeloop.session.store import EventStore
from codeloop.telemetry.metrics import Metrics

log = logging.getLogger(__name__)


def add_ops_routes(app: FastAPI, store: EventStore, metrics: Metrics,
                   current_user: Callable[..., str]) -> None:
    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        """The server process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"],
             responses={503: {"description": "The event store does not answer"}})
    async def readyz() -> Any:
        """The server can serve: its event store answers a query."""
        try:
            await asyncio.to_thread(store.ping)
        except CodeloopError as exc:
            log.warning("not ready: %s", exc)
            # The reason stays in the log: this endpoint needs no token.
            return JSONResponse({"status": "unavailable",
                                 "detail": "the event store does not answer"}, status_code=503)
        return {"status": "ready"}

    @app.get("/metrics", tags=["operations"], response_class=Response,
             responses={401: {"description": "Missing or unknown token"},
                        403: {"description": "Not the admin's token"}})
    async def prometheus(user: str = Depends(current_user)) -> Response:
        """Prometheus metrics of every session on this server (the admin's token)."""
        if user != ADMIN_USER:
            return JSONResponse({"detail": "metrics cover every user: use the admin token"},
                                status_code=403)
        body = await asyncio.to_thread(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
