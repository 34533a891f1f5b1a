"""``certify airflow``: the Airflow provider's acceptance on a real Airflow (scheduler, triggerer,
API server, executor) in a virtual environment of its own, per Airflow version, and the signed
``airflow_async_acceptance.json`` it writes."""
