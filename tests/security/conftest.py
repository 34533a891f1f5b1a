"""Fixtures shared by the wire-security tests."""

from __future__ import annotations

import pytest
from sec_server import Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A test CA with server and client certificates (trustme), one per test module."""
    return Pki(tmp_path_factory.mktemp("pki"))
