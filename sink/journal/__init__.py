"""Delivery journal: the port, the SQLite adapter (embedded default) and the MAY_ATTEMPT store.

The PostgreSQL adapter (production authority) lives in ``sink.journal.postgres``.
"""
