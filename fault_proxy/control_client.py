"""Small synchronous client for the fault-proxy control API (used by the harness and tests)."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import httpx

# Every state-changing call of the control API must carry this header (the API refuses it
# otherwise, so a web page cannot drive it); sending it on reads too is harmless.
ADMIN_HEADERS = {"X-Restproof-Admin": "1"}


class ControlError(RuntimeError):
    """The control API refused a call; carries the problem document (never the submitted input)."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(f"control API answered {status}: {problem.get('title')}: {problem.get('detail')}")
        self.status = status
        self.problem = problem


class ControlClient:
    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        if "://" not in base_url:
            base_url = f"http://{base_url}"
        self._http = httpx.Client(base_url=base_url, timeout=timeout, headers=ADMIN_HEADERS)

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"title": "non-JSON error", "detail": f"HTTP {response.status_code}"}
            raise ControlError(response.status_code, problem)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/health")
        return result

    def add_rule(self, rule: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/rules", json=rule)
        return result

    def rules(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/rules")["rules"]
        return result

    def delete_rule(self, rule_id: str) -> None:
        self._call("DELETE", f"/rules/{rule_id}")

    def clear_rules(self) -> None:
        self._call("DELETE", "/rules")

    def reset(self, seed: int | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/reset", json={} if seed is None else {"seed": seed})
        return result

    def log(self, since: int = 0) -> list[dict[str, Any]]:
        """Entries with ``seq`` > ``since`` (exclusive: pass the last ``seq`` already read)."""
        result: list[dict[str, Any]] = self._call("GET", "/log", params={"since": since})["entries"]
        return result

    def clear_log(self) -> None:
        self._call("DELETE", "/log")

    def held(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/held")["held"]
        return result

    def release(self, hold_id: str) -> None:
        self._call("POST", f"/held/{hold_id}/release")

    def cut(self, hold_id: str) -> None:
        self._call("POST", f"/held/{hold_id}/cut")

    def wait_for_held(self, count: int = 1, timeout: float = 10.0, interval: float = 0.02) -> list[dict[str, Any]]:
        """Poll until at least ``count`` requests are held; raises TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            held = self.held()
            if len(held) >= count:
                return held
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(held)} held request(s) after {timeout}s, wanted {count}")
            time.sleep(interval)

    def wait_for_log(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 10.0, interval: float = 0.02
    ) -> list[dict[str, Any]]:
        """Poll the log until ``predicate(entries)`` is true; returns the entries."""
        deadline = time.monotonic() + timeout
        while True:
            entries = self.log()
            if predicate(entries):
                return entries
            if time.monotonic() >= deadline:
                raise TimeoutError(f"log condition not met after {timeout}s")
            time.sleep(interval)
