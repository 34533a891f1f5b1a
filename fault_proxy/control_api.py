"""Control API: a small JSON API on its own port (never reachable through the proxy port).

Errors are RFC 9457 problem documents (``application/problem+json``) with a stable ``type``.

Every request passes ``fault_proxy.api_guards`` first: a ``Host`` outside the allowlist (DNS
rebinding) and a foreign ``Origin`` refused, bounded strict-JSON bodies, and every state-changing
request (anything but GET/HEAD/OPTIONS) must carry ``X-Restproof-Admin: 1``, a header a web page
cannot add to a cross-site request without a CORS preflight this API never grants. A page open in
the operator's browser can neither read the log nor reset it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, Strict
from starlette.exceptions import HTTPException as StarletteHTTPException

from fault_proxy.api_guards import GuardMiddleware, GuardPolicy
from fault_proxy.rules import DuplicateRuleError, RuleLimitError, RuleSpec
from fault_proxy.state import ProxyState

PROBLEM = "application/problem+json"


class ResetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Strict: "5" or true is not a seed (pydantic's lax mode would read them as 5 and 1).
    seed: Annotated[int, Strict()] | None = Field(default=None, ge=0, le=2**63 - 1)


class ProblemError(Exception):
    def __init__(self, status: int, kind: str, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail = status, kind, title, detail


def _problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": f"urn:fault-proxy:problem:{kind}", "title": title, "status": status, "detail": detail}
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def render_refusal(status: int, kind: str, detail: str) -> Response:
    """A guard's refusal as this API's problem document (also the raw 408 of a head that never ends)."""
    titles = {403: "Forbidden", 408: "Request timeout", 413: "Body too large", 415: "Unsupported media type"}
    return _problem(status, kind, titles.get(status, "Invalid input"), detail)


def _validation_errors(exc: RequestValidationError) -> list[dict[str, object]]:
    # Echo locations and messages only, never the submitted input (it may hold anything).
    return [
        {"loc": [str(part) for part in err.get("loc", ())], "msg": str(err.get("msg", ""))}
        for err in exc.errors()
    ]


def create_app(state: ProxyState, allowed_hosts: frozenset[str] = frozenset()) -> FastAPI:
    """``allowed_hosts``: ``api_guards.host_allowlist`` of the bound control address (empty: refuse all)."""
    app = FastAPI(title="fault-proxy control API", docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    policy = GuardPolicy(render=render_refusal, allowed_hosts=allowed_hosts, require_admin_header=True)
    app.add_middleware(GuardMiddleware, policy=policy)

    @app.exception_handler(RequestValidationError)
    async def _on_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _problem(422, "invalid-input", "Invalid input", "the request body or parameters are invalid",
                        errors=_validation_errors(exc))

    @app.exception_handler(ProblemError)
    async def _on_problem(_: Request, exc: ProblemError) -> JSONResponse:
        return _problem(exc.status, exc.kind, exc.title, exc.detail)

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _problem(exc.status_code, "http", str(exc.detail), str(exc.detail))

    @app.get("/health")
    async def health() -> dict[str, object]:
        return {
            "status": "ok",
            "listen": state.listen,
            "upstream": state.upstream,
            "control": state.control,
            "seed": state.seed,
            "rules": len(state.rules.rules),
            "held": len(state.holds.held),
        }

    @app.get("/rules")
    async def list_rules() -> dict[str, object]:
        return {"rules": [rule.to_json() for rule in state.rules.rules]}

    @app.post("/rules", status_code=201)
    async def add_rule(spec: RuleSpec) -> dict[str, object]:
        try:
            rule = state.rules.add(spec)
        except DuplicateRuleError as exc:
            raise ProblemError(409, "duplicate-rule", "Duplicate rule id", str(exc)) from None
        except RuleLimitError as exc:
            raise ProblemError(409, "rule-limit", "Too many rules", str(exc)) from None
        return rule.to_json()

    @app.get("/rules/{rule_id}")
    async def get_rule(rule_id: str) -> dict[str, object]:
        rule = state.rules.get(rule_id)
        if rule is None:
            raise ProblemError(404, "unknown-rule", "Unknown rule", "no rule with that id")
        return rule.to_json()

    @app.delete("/rules/{rule_id}", status_code=204)
    async def delete_rule(rule_id: str) -> None:
        if not state.rules.delete(rule_id):
            raise ProblemError(404, "unknown-rule", "Unknown rule", "no rule with that id")

    @app.delete("/rules", status_code=204)
    async def clear_rules() -> None:
        state.rules.clear()

    @app.post("/reset")
    async def reset(body: ResetBody | None = None) -> dict[str, object]:
        cut = state.reset(seed=body.seed if body else None)
        return {"status": "reset", "seed": state.seed, "holds_cut": cut}

    @app.get("/log")
    async def read_log(since: int = 0) -> dict[str, object]:
        """Entries with ``seq`` strictly greater than ``since`` (exclusive: pass the last seq seen)."""
        if since < 0:
            raise ProblemError(400, "invalid-input", "Invalid input", "since must be >= 0")
        records = state.log.since(since)
        return {
            "entries": [r.to_json() for r in records],
            "next_seq": state.log.next_seq,
            "dropped": state.log.dropped,
        }

    @app.delete("/log", status_code=204)
    async def reset_log() -> None:
        state.log.reset()

    @app.get("/held")
    async def list_held() -> dict[str, object]:
        return {"held": [hold.to_json() for hold in state.holds.held.values()]}

    @app.post("/held/{hold_id}/release")
    async def release(hold_id: str) -> dict[str, object]:
        return _decide(state, hold_id, "release")

    @app.post("/held/{hold_id}/cut")
    async def cut(hold_id: str) -> dict[str, object]:
        return _decide(state, hold_id, "cut")

    return app


def _decide(state: ProxyState, hold_id: str, decision: str) -> dict[str, object]:
    assert decision in ("release", "cut")
    if not state.holds.decide(hold_id, "release" if decision == "release" else "cut"):
        raise ProblemError(404, "unknown-hold", "Unknown held request", "no held request with that id")
    return {"hold_id": hold_id, "decision": decision}
