"""What Airflow's provider discovery reads (entry point group ``apache_airflow_provider``).

Airflow loads this function from the installed distribution's entry point and checks that
``package-name`` equals the distribution's own name; the operator and trigger modules are listed
so that ``airflow providers`` shows them. Nothing here imports Airflow.
"""

from __future__ import annotations

from typing import Any

DISTRIBUTION = "restproof"
SUPPORTED_AIRFLOW = ">=2.10,<3.4"
"""The Airflow versions this provider declares; every minor in it has signed compat results in
test_artifacts/airflow-compat/ (``certify airflow``)."""


def get_provider_info() -> dict[str, Any]:
    integration = "restproof governed REST delivery"
    return {
        "package-name": DISTRIBUTION,
        "name": "restproof",
        "description": "Deferrable governed REST bulk delivery: a submitting operator and a read-only receipt "
                       "trigger over the restproof delivery journal.",
        "integrations": [{"integration-name": integration, "external-doc-url": "https://restproof.dev/airflow",
                          "tags": ["protocol"]}],
        "operators": [{"integration-name": integration, "python-modules": ["sink.airflow.operator"]}],
        "triggers": [{"integration-name": integration, "python-modules": ["sink.airflow.trigger"]}],
    }
