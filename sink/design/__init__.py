"""The executable design contract of the reference sink: contract.yaml, its schema, validator and query API."""
