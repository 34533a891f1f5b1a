"""Admin view of authentication: what was accepted, refused and issued; forcing OAuth tokens to expire.

Counts and the method's non-secret settings only: never a token, key, password or client secret.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from mock_receiver.admin_guard import AdminRoute
from mock_receiver.intake import receiver_of

router = APIRouter(prefix="/_admin/auth", tags=["admin"], route_class=AdminRoute)


@router.get("")
async def auth_status(request: Request) -> dict[str, object]:
    gate = receiver_of(request).auth
    return {
        "method": gate.spec.method,
        "requests_accepted": gate.counters.accepted,
        "requests_refused": dict(sorted(gate.counters.refused.items())),
        "requests_with_authorization_header": gate.counters.with_authorization_header,
        "tokens_issued": gate.tokens.issued,
        "tokens_active": gate.tokens.active(),
        "token_requests_refused": dict(sorted(gate.counters.token_refused.items())),
    }


@router.post("/expire-tokens")
async def expire_tokens(request: Request) -> dict[str, object]:
    """Every OAuth token issued so far expires now: the next data request with one is a 401
    ``token_expired``, so a client must fetch a new token (a forced refresh mid-delivery)."""
    gate = receiver_of(request).auth
    return {"expired": gate.tokens.expire_all(), "tokens_issued": gate.tokens.issued}
