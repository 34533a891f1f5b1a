"""Airflow provider of the reference sink (extra ``restproof[airflow]``; seed: "Airflow adapter").

* ``sink.airflow.operator.RestDeliveryOperator``: submits or resumes one delivery on a worker and
  defers while an asynchronous child is pending;
* ``sink.airflow.trigger.DeliveryReceiptTrigger``: observes the pending child's receipt read-only
  from the shared asyncio triggerer and wakes the task when the journal moved;
* ``sink.airflow.locator.JournalLocator``: where the journal and the pinned artifacts live, with no
  secret in it (the only thing a trigger carries besides the operation id);
* ``sink.airflow.provider_info.get_provider_info``: what Airflow's provider discovery reads.

Importing this package imports nothing of Airflow, and nothing else in the project imports it.
"""

from __future__ import annotations

__all__: list[str] = []
