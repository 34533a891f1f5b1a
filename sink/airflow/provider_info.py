"""What Airflow's provider discovery reads (entry point group ``apache_airflow_provider``).

Airflow loads this function from the installed distribution's entry point and checks that
``package-name`` equals the distribution's own name; the operator and trigger modules are listed
so that ``airflow providers`` shows them. Nothing here imports Airflow.
"""

from __future__ import annotations

from typing import Any

DISTRIBUTION = "restproof"
SUPPORTED_MINORS = ("3.1", "3.2", "3.3")
"""Every minor the provider declares has a signed, passing result in test_artifacts/airflow-compat/
(``certify airflow-matrix``; tests/airflow/test_af_compat_evidence.py holds this to it)."""
SUPPORTED_AIRFLOW = ">=3.1,<3.4"
"""The same range as the ``airflow`` extra of pyproject.toml. Narrowed from the seed's >=2.10,<3.4 to
a contiguous run of minors with signed passing results: 2.10 and 2.11 pass too, but 3.0 has no
passing result yet (its API server refused its own tokens under current PyJWT until the acceptance
configured an issuer; the run after that fix is still to be signed), so the range starts at 3.1."""


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
