"""The Toxiproxy HTTP API (routes, status codes and JSON shapes of Toxiproxy 2.x) over FastAPI.

Bodies are read as raw JSON and validated by the registry rather than by FastAPI models, so a
bad body gets Toxiproxy's `{"error": ..., "status": 400}` instead of FastAPI's 422 shape, which
Toxiproxy clients (toxiproxy-python maps 400 to InvalidToxic) would not understand.

Every request first passes `fault_proxy.api_guards` (a `Host` outside the allowlist, browsers and
foreign origins refused, bounded strict-JSON bodies): toxiproxy-python and the Go client name the
API by the address it was started on, send no browser User-Agent, no Origin, and
`application/json` with every body, so they pass unchanged while a web page cannot drive the API.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from fault_proxy.api_guards import GuardMiddleware, GuardPolicy, Refused, parse_json
from fault_proxy.tcp.engine import ApiError
from fault_proxy.tcp.registry import ProxyRegistry

SERVER_VERSION = "2.12.0-restproof"  # the Toxiproxy API level implemented, marked as this server


def _error(exc: ApiError) -> JSONResponse:
    return JSONResponse({"error": exc.message, "status": exc.status}, status_code=exc.status)


async def _json_body(request: Request, *, allow_empty: bool = False) -> Any:
    raw = await request.body()
    if not raw.strip():
        if allow_empty:
            return {}
        raise ApiError(400, "bad request body: empty body")
    try:
        return parse_json(raw)
    except Refused as refused:
        raise ApiError(400, f"bad request body: {refused.detail}") from None


def render_refusal(status: int, _kind: str, detail: str) -> Response:
    """A guard's refusal in Toxiproxy's error shape (also the raw 408 of a head that never ends)."""
    return JSONResponse({"error": detail, "status": status}, status_code=status)


def create_app(registry: ProxyRegistry, allowed_hosts: frozenset[str] = frozenset()) -> FastAPI:
    """``allowed_hosts``: ``api_guards.host_allowlist`` of the bound API address (empty: refuse all)."""
    app = FastAPI(title="restproof fault-proxy tcp (Toxiproxy API)", docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc)

    # Toxiproxy's own guard (browser User-Agents get 403) plus rebinding, a foreign Origin and non-JSON bodies.
    policy = GuardPolicy(render=render_refusal, allowed_hosts=allowed_hosts, refuse_browsers=True)
    app.add_middleware(GuardMiddleware, policy=policy)

    @app.get("/version")
    async def version() -> Response:
        return Response(json.dumps({"version": SERVER_VERSION}) + "\n",
                        media_type="application/json;charset=utf-8")

    @app.post("/reset")
    async def reset() -> Response:
        await registry.reset()
        return Response(status_code=204)

    @app.get("/proxies")
    async def proxy_index() -> JSONResponse:
        return JSONResponse({name: p.to_json() for name, p in registry.proxies.items()})

    @app.post("/proxies")
    async def proxy_create(request: Request) -> JSONResponse:
        proxy = await registry.create(await _json_body(request))
        return JSONResponse(proxy.to_json(), status_code=201)

    @app.post("/populate")
    async def populate(request: Request) -> JSONResponse:
        proxies = await registry.populate(await _json_body(request))
        return JSONResponse({"proxies": [p.to_json() for p in proxies]}, status_code=201)

    @app.get("/proxies/{name}")
    async def proxy_show(name: str) -> JSONResponse:
        return JSONResponse(registry.get(name).to_json())

    @app.api_route("/proxies/{name}", methods=["POST", "PATCH"])
    async def proxy_update(name: str, request: Request) -> JSONResponse:
        registry.get(name)  # 404 before 400, as Toxiproxy orders its checks
        proxy = await registry.update(name, await _json_body(request))
        return JSONResponse(proxy.to_json())

    @app.delete("/proxies/{name}")
    async def proxy_delete(name: str) -> Response:
        await registry.delete(name)
        return Response(status_code=204)

    @app.get("/proxies/{name}/toxics")
    async def toxic_index(name: str) -> JSONResponse:
        return JSONResponse(registry.get(name).toxics_json())

    @app.post("/proxies/{name}/toxics")
    async def toxic_create(name: str, request: Request) -> JSONResponse:
        proxy = registry.get(name)
        # Toxiproxy answers 200 (not 201) with the toxic.
        return JSONResponse(proxy.add_toxic(await _json_body(request)).to_json())

    @app.get("/proxies/{name}/toxics/{toxic}")
    async def toxic_show(name: str, toxic: str) -> JSONResponse:
        return JSONResponse(registry.get(name).find_toxic(toxic).to_json())

    @app.api_route("/proxies/{name}/toxics/{toxic}", methods=["POST", "PATCH"])
    async def toxic_update(name: str, toxic: str, request: Request) -> JSONResponse:
        proxy = registry.get(name)
        proxy.find_toxic(toxic)
        return JSONResponse(proxy.update_toxic(toxic, await _json_body(request)).to_json())

    @app.delete("/proxies/{name}/toxics/{toxic}")
    async def toxic_delete(name: str, toxic: str) -> Response:
        registry.get(name).remove_toxic(toxic)
        return Response(status_code=204)

    return app
