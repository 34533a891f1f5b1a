"""Application factory: the data API, and the admin API (same app or its own port)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from mock_receiver import admin, admin_rows, async_api, auth_admin, oauth, sync_api
from mock_receiver.auth import AuthMiddleware
from mock_receiver.behaviour import Behaviour, describe_validation_error
from mock_receiver.cross_site import CrossSiteMiddleware
from mock_receiver.host_guard import AdminHostGuard, allowed_host_names
from mock_receiver.in_flight import InFlightMiddleware
from mock_receiver.intake import Receiver
from mock_receiver.ledger import Ledger
from mock_receiver.problems import ProblemError, problem_response
from mock_receiver.state_files import StateFileRefused, pinned_ledger

LEDGER_FILE = "ledger.sqlite3"

_ROW_SCHEMA = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
_TEXT = {"type": "string"}
_MULTIPART_SCHEMA = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        "range_start": {"type": "string", "format": "date"},
        "range_end": {"type": "string", "format": "date"},
    },
}
_BATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "array", "items": _ROW_SCHEMA}},
            "application/x-ndjson": {"schema": _TEXT},
            "text/csv": {"schema": _TEXT},
            "multipart/form-data": {"schema": _MULTIPART_SCHEMA},
        },
    }
}
_JOB_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": _MULTIPART_SCHEMA}}}}
_RANGE_NOTE = "ISO date; the range is half-open [range_start, range_end)"


def open_receiver(behaviour: Behaviour, state_dir: Path, *, durability: str = "full",
                  tls_listener: bool = False) -> Receiver:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LEDGER_FILE
    ledger = None
    try:
        with pinned_ledger(path):  # StateFileRefused: a link or a non-regular file among the ledger's files
            ledger = Ledger(path, durability=durability)
    except StateFileRefused:
        if ledger is not None:
            ledger.close()
        raise
    return Receiver(behaviour=behaviour, ledger=ledger, tls_listener=tls_listener)


def _install_problem_handlers(app: FastAPI) -> None:
    async def on_problem(_: Request, error: Exception) -> Response:
        assert isinstance(error, ProblemError)
        return error.response()

    async def on_http(_: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        return problem_response(error.status_code, {"type": "about:blank", "title": str(error.detail),
                                                    "status": error.status_code}, error.headers)

    async def on_validation(_: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        errors = [{"loc": ".".join(str(part) for part in item.get("loc", ())), "msg": str(item.get("msg", ""))}
                  for item in error.errors()]
        return problem_response(422, {"type": "urn:restproof:mock-receiver:problem:invalid_request",
                                      "title": "Unprocessable content", "status": 422, "errors": errors})

    async def on_unexpected(_: Request, __: Exception) -> Response:
        # Never a traceback or payload fragment on the wire.
        return problem_response(500, {"type": "urn:restproof:mock-receiver:problem:internal_error",
                                      "title": "Internal error", "status": 500})

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(Exception, on_unexpected)


def _parameters(resource_names: list[str] | None, *, ranged: bool) -> list[dict[str, object]]:
    """OpenAPI parameters, declared by hand: the handlers parse them themselves (one parser, one error
    shape), and skipping FastAPI's per-request parameter validation is a large share of the request cost."""
    parameters: list[dict[str, object]] = []
    if resource_names is not None:
        # The resources of the behaviour loaded at start; an unknown one stays a 404 problem.
        parameters.append({"name": "resource", "in": "path", "required": True,
                           "schema": {"type": "string", "enum": resource_names}})
    if ranged:
        for name in ("range_start", "range_end"):
            parameters.append({"name": name, "in": "query", "required": False, "description": _RANGE_NOTE,
                               "schema": {"type": "string", "format": "date"}})
    return parameters


def _add_data_routes(app: FastAPI, resource_names: list[str]) -> None:
    async def submit_batch(request: Request) -> Response:
        """Submit one batch of rows (JSON array, NDJSON, CSV, gzip, or one-file multipart)."""
        return await sync_api.submit_batch(request)

    async def resource_summary(request: Request) -> Response:
        """Row count and canonical content digest of the applied rows in a date range (read-only)."""
        return await sync_api.resource_summary(request)

    async def submit_job(request: Request) -> Response:
        """Submit an async dataset job: one file part named `file`, scalar parts range_start/range_end."""
        return await async_api.submit_job(request)

    async def get_job(request: Request) -> Response:
        """Poll a job receipt (read-only for the data; counts as one observation)."""
        return await async_api.get_job(request)

    batch_extra = {**_BATCH_BODY, "parameters": _parameters(resource_names, ranged=True)}
    job_id = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}
    batches = "/mock/v1/resources/{resource}/batches"
    app.add_api_route(batches, submit_batch, methods=["POST"], openapi_extra=batch_extra,
                      operation_id="submit_batch")
    app.add_api_route(batches, submit_batch, methods=["PUT"], openapi_extra=batch_extra,
                      operation_id="replace_batch")
    app.add_api_route("/mock/v1/resources/{resource}/summary", resource_summary, methods=["GET"],
                      openapi_extra={"parameters": _parameters(resource_names, ranged=True)},
                      operation_id="resource_summary")
    app.add_api_route(async_api.JOBS_PATH, submit_job, methods=["POST"], openapi_extra=_JOB_BODY,
                      operation_id="submit_job", status_code=202)
    app.add_api_route(async_api.JOBS_PATH + "/{job_id}", get_job, methods=["GET"],
                      openapi_extra={"parameters": [job_id]}, operation_id="get_job")
    app.add_api_route(oauth.TOKEN_PATH, oauth.token_endpoint, methods=["POST"], operation_id="oauth_token",
                      include_in_schema=False)


def create_data_app(receiver: Receiver, *, include_admin: bool, admin_host_names: Iterable[str] = ()) -> FastAPI:
    """The data API; with ``include_admin`` the admin API shares its port (its requests then need an
    allowed Host: the loopback literals or one of ``admin_host_names``)."""
    app = FastAPI(title="restproof mock receiver", version="1", docs_url=None, redoc_url=None)
    app.state.receiver = receiver
    _install_problem_handlers(app)
    _add_data_routes(app, sorted(receiver.behaviour.resources))
    app.add_middleware(AuthMiddleware, gate_of=receiver)
    app.add_middleware(CrossSiteMiddleware, source=receiver)  # runs before authentication
    app.add_middleware(InFlightMiddleware, counter=receiver)  # outside both: a refused request counts too
    if include_admin:
        app.include_router(admin.router)
        app.include_router(auth_admin.router)
        # Added last, so it runs first: a rebound name reaches no admin route, not even a read.
        app.add_middleware(AdminHostGuard, names=allowed_host_names(admin_host_names), admin_only=True)
    return app


def create_admin_app(receiver: Receiver, *, admin_host_names: Iterable[str] = ()) -> FastAPI:
    """The admin API on its own listener: every request needs an allowed Host."""
    app = FastAPI(title="restproof mock receiver admin", version="1", docs_url=None, redoc_url=None)
    app.state.receiver = receiver
    _install_problem_handlers(app)
    app.include_router(admin.router)
    app.include_router(admin_rows.router)  # rows only on the admin listener, never the data port
    app.include_router(auth_admin.router)
    app.add_middleware(AdminHostGuard, names=allowed_host_names(admin_host_names), admin_only=False)
    return app


__all__ = ["LEDGER_FILE", "create_admin_app", "create_data_app", "describe_validation_error", "open_receiver"]
