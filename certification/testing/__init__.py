"""Test support for sink developers: the real parts as context managers, catalog rows as tests, and
the process reaper behind ``certification.pytest_plugin`` (docs/pytest-plugin.md)."""
