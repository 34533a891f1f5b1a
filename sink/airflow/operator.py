"""``RestDeliveryOperator``: one governed REST delivery of one scheduled interval, deferrable.

``execute`` submits or resumes the delivery on the worker (a retried or cleared task resumes the
admitted parent from the journal: nothing is re-planned and nothing whose effect is unproven is
sent again). A pending async child defers the task on ``DeliveryReceiptTrigger``; the worker is
free while the receiver's job runs. ``execute_complete`` ignores the event's content beyond
logging it and rereads the journal through the runtime, which verifies the terminal result,
promotes the checkpoint frontier and submits the next child, if any; the task then completes,
defers again, or fails with the stable code and exit class (``sink.airflow.steps``).

Only identifiers and counts reach XCom and the task log; a secret, payload row or response body
never does (the runtime's results are redacted, the trigger carries no secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sink.airflow import runtime_bridge
from sink.airflow.airflow_compat import AirflowException, AirflowFailException, BaseOperator
from sink.airflow.locator import JournalLocator
from sink.airflow.steps import Complete, DeferOnReceipt, DeferOnTimer, Step, next_step
from sink.airflow.timing import ExecutionClock
from sink.airflow.trigger import DeliveryReceiptTrigger, DeliveryWaitTrigger, check_operation_id


class RestDeliveryOperator(BaseOperator):  # type: ignore[misc]
    template_fields = ("scope_from", "scope_to")
    ui_color = "#d7e8f5"

    def __init__(self, *, workload: str, scope_from: str, scope_to: str,
                 journal_locator: Mapping[str, str] | JournalLocator, correction_revision: int = 0,
                 lease_seconds: float = 30.0, wait_seconds: float = 30.0, max_waits: int = 720,
                 timing_records_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workload = workload
        self.scope_from = scope_from
        self.scope_to = scope_to
        self.journal_locator = JournalLocator.from_kwargs(journal_locator).as_kwargs()
        self.correction_revision = correction_revision
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.max_waits = max_waits
        self.timing_records_dir = timing_records_dir

    # ----- Airflow entry points ----------------------------------------------------------------
    def execute(self, context: Any) -> Any:
        clock = ExecutionClock("execute")
        result = runtime_bridge.submit_or_resume(
            Path(self.workload), date.fromisoformat(str(self.scope_from)), date.fromisoformat(str(self.scope_to)),
            locator=self._locator(), worker_id=self._owner(context), correction_revision=self.correction_revision,
            lease_ttl=timedelta(seconds=self.lease_seconds))
        return self._follow(context, clock, next_step(result, waits=0, max_waits=self.max_waits,
                                                      wait_seconds=self.wait_seconds))

    def execute_complete(self, context: Any, event: Any = None, parent_id: str | None = None,
                         operation_id: str | None = None) -> Any:
        clock = ExecutionClock("execute_complete")
        # The event is a hint: logged as identifiers, never trusted for state.
        hint = event if isinstance(event, Mapping) else {}
        self.log.info("receipt trigger fired for operation %s (observed revision %s); rereading the journal",
                      str(hint.get("operation_id", "?"))[:80], str(hint.get("observed_revision", "?"))[:20])
        subject = check_operation_id(parent_id or operation_id)
        result = runtime_bridge.resume(subject, locator=self._locator(), worker_id=self._owner(context),
                                       lease_ttl=timedelta(seconds=self.lease_seconds))
        return self._follow(context, clock, next_step(result, waits=0, max_waits=self.max_waits,
                                                      wait_seconds=self.wait_seconds))

    def execute_resume(self, context: Any, event: Any = None, parent_id: str | None = None, waits: int = 0) -> Any:
        """After a timer wait: continue the admitted parent, or start over when none was admitted."""
        clock = ExecutionClock("execute_resume")
        if parent_id is None:
            result = runtime_bridge.submit_or_resume(
                Path(self.workload), date.fromisoformat(str(self.scope_from)),
                date.fromisoformat(str(self.scope_to)), locator=self._locator(), worker_id=self._owner(context),
                correction_revision=self.correction_revision, lease_ttl=timedelta(seconds=self.lease_seconds))
        else:
            result = runtime_bridge.resume(check_operation_id(parent_id), locator=self._locator(),
                                           worker_id=self._owner(context),
                                           lease_ttl=timedelta(seconds=self.lease_seconds))
        return self._follow(context, clock, next_step(result, waits=int(waits), max_waits=self.max_waits,
                                                      wait_seconds=self.wait_seconds))

    # ----- plumbing ----------------------------------------------------------------------------
    def _locator(self) -> JournalLocator:
        return JournalLocator.from_kwargs(self.journal_locator)

    def _identity(self, context: Any) -> dict[str, Any]:
        ti = context.get("ti") if isinstance(context, Mapping) else None
        return {"dag_id": getattr(ti, "dag_id", None), "task_id": getattr(ti, "task_id", self.task_id),
                "run_id": getattr(ti, "run_id", None), "map_index": getattr(ti, "map_index", None),
                "try_number": getattr(ti, "try_number", None)}

    def _owner(self, context: Any) -> str:
        identity = self._identity(context)
        return runtime_bridge.worker_owner("airflow", identity["dag_id"], identity["task_id"], identity["run_id"],
                                           identity["try_number"])

    def _follow(self, context: Any, clock: ExecutionClock, step: Step) -> Any:
        identity = self._identity(context)
        kind = type(step).__name__
        clock.record(self.timing_records_dir, identity, step=kind)
        if isinstance(step, Complete):
            self.log.info("delivery completed: parent %s, %d child(ren)", step.summary["parent_id"],
                          len(step.summary["operation_ids"]))
            return step.summary
        if isinstance(step, DeferOnReceipt):
            self.log.info("child %s of parent %s is pending at the receiver: deferring on its receipt",
                          step.operation_id, step.parent_id)
            self.defer(trigger=DeliveryReceiptTrigger(step.operation_id, self.journal_locator),
                       method_name="execute_complete",
                       kwargs={"parent_id": step.parent_id, "operation_id": step.operation_id})
        if isinstance(step, DeferOnTimer):
            self.log.info("delivery waits (wait %d of at most %d): nothing more was sent", step.waits,
                          self.max_waits)
            self.defer(trigger=DeliveryWaitTrigger(step.seconds), method_name="execute_resume",
                       kwargs={"parent_id": step.parent_id, "waits": step.waits})
        assert not isinstance(step, Complete | DeferOnReceipt | DeferOnTimer)
        if step.retryable:
            raise AirflowException(step.message)
        raise AirflowFailException(step.message)
