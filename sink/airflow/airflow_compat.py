"""Airflow's classes for the operator and triggers, wherever the installed version keeps them.

Airflow 3 moved the authoring interface to the Task SDK (``airflow.sdk``); Airflow 2.10 and 2.11
keep it in ``airflow.models`` and ``airflow.exceptions``. Triggers live in
``airflow.triggers.base`` in every supported version.
"""

from __future__ import annotations

import importlib
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


def _first(*candidates: tuple[str, str]) -> Any:
    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {', '.join(m + '.' + n for m, n in candidates)} is importable")


BaseOperator: Any = _first(("airflow.sdk", "BaseOperator"), ("airflow.models.baseoperator", "BaseOperator"))
AirflowException: Any = _first(("airflow.sdk.exceptions", "AirflowException"),
                               ("airflow.exceptions", "AirflowException"))
AirflowFailException: Any = _first(("airflow.sdk.exceptions", "AirflowFailException"),
                                   ("airflow.exceptions", "AirflowFailException"))

__all__ = ["AirflowException", "AirflowFailException", "BaseOperator", "BaseTrigger", "TriggerEvent"]
