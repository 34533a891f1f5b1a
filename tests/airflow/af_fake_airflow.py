"""A stand-in for the few Airflow classes the provider subclasses, installed in ``sys.modules``
only for the tests that import the operator and the trigger without Airflow (the real Airflow is
exercised by ``certify airflow``). It records what the provider asks of Airflow: a deferral (the
trigger and its serialized kwargs, the method and kwargs to resume with) or a failure."""

from __future__ import annotations

import sys
import types
from typing import Any


class TaskDeferred(Exception):
    def __init__(self, trigger: Any, method_name: str, kwargs: dict[str, Any] | None, timeout: Any) -> None:
        super().__init__(method_name)
        self.trigger, self.method_name, self.kwargs, self.timeout = trigger, method_name, kwargs, timeout


class AirflowException(Exception):
    pass


class AirflowFailException(AirflowException):
    pass


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str, *args: object) -> None:
        self.lines.append(message % args)


class BaseOperator:
    def __init__(self, *, task_id: str, **kwargs: Any) -> None:
        self.task_id = task_id
        self.log = _Log()

    def defer(self, *, trigger: Any, method_name: str, kwargs: dict[str, Any] | None = None,
              timeout: Any = None) -> None:
        raise TaskDeferred(trigger, method_name, kwargs, timeout)


class BaseTrigger:
    def __init__(self, **kwargs: Any) -> None:
        pass


class TriggerEvent:
    def __init__(self, payload: Any) -> None:
        self.payload = payload


def install() -> None:
    if "airflow" in sys.modules and not getattr(sys.modules["airflow"], "_restproof_fake", False):
        return  # a real Airflow is importable here: use it
    root = types.ModuleType("airflow")
    root._restproof_fake = True  # type: ignore[attr-defined]
    triggers, base = types.ModuleType("airflow.triggers"), types.ModuleType("airflow.triggers.base")
    base.BaseTrigger, base.TriggerEvent = BaseTrigger, TriggerEvent  # type: ignore[attr-defined]
    sdk, exceptions = types.ModuleType("airflow.sdk"), types.ModuleType("airflow.sdk.exceptions")
    sdk.BaseOperator = BaseOperator  # type: ignore[attr-defined]
    exceptions.AirflowException, exceptions.AirflowFailException = AirflowException, AirflowFailException  # type: ignore[attr-defined]
    for name, module in {"airflow": root, "airflow.triggers": triggers, "airflow.triggers.base": base,
                         "airflow.sdk": sdk, "airflow.sdk.exceptions": exceptions}.items():
        sys.modules[name] = module
