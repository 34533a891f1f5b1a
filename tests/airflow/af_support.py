"""Shared helpers of the provider's tests (imported by name; pytest's conftest files are not)."""

from __future__ import annotations

from dataclasses import dataclass

from certification.airflow.deployment import REPO, Deployment
from certification.services import Proxy, Receiver

BEHAVIOUR = REPO / "scenarios" / "airflow" / "receiver-30-minute-jobs.yaml"


@dataclass
class Stack:
    receiver: Receiver
    proxy: Proxy
    deployment: Deployment

    def posts(self) -> list[dict[str, object]]:
        return [entry for entry in self.proxy.log() if entry.get("method") == "POST"]
