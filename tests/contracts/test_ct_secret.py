"""A SecretValue never reaches repr/str/format, JSON, pydantic dumps, exception text or pickle."""

from __future__ import annotations

import copy
import json
import logging
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from sink.contracts import SecretValue

SENTINEL = "SENTINEL-secret-5b1e0d-CANARY"


@pytest.fixture
def secret() -> SecretValue:
    return SecretValue(SENTINEL)


def test_reveal_returns_the_value(secret: SecretValue) -> None:
    assert secret.reveal() == SENTINEL


def test_text_forms_are_redacted(secret: SecretValue) -> None:
    for rendered in (repr(secret), str(secret), f"{secret}", f"{secret!r}", f"{secret:>40}", "%s" % (secret,),  # noqa: UP031 - the %-operator path is tested too
                     repr([secret]), repr({"token": secret}), str((secret,))):
        assert SENTINEL not in rendered
    assert str(secret) == "SecretValue(***)"


def test_exceptions_and_logs_do_not_carry_it(secret: SecretValue, caplog: pytest.LogCaptureFixture) -> None:
    error = ValueError("could not authenticate with", secret)
    assert SENTINEL not in str(error) and SENTINEL not in repr(error)
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("token %s %r", secret, secret)
    assert SENTINEL not in caplog.text


def test_json_encoding_is_refused(secret: SecretValue) -> None:
    with pytest.raises(TypeError) as caught:
        json.dumps({"token": secret})
    assert SENTINEL not in str(caught.value)


def test_pickle_is_refused(secret: SecretValue) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError) as caught:
            pickle.dumps(secret, protocol=protocol)
        assert SENTINEL not in str(caught.value)


def test_pydantic_dump_of_an_untyped_value_is_refused(secret: SecretValue) -> None:
    with pytest.raises(PydanticSerializationError) as caught:
        TypeAdapter(Any).dump_json({"token": secret})
    assert SENTINEL not in str(caught.value)


def test_it_can_not_be_a_model_field() -> None:
    with pytest.raises(TypeError, match="must not be a field"):

        class Leaky(BaseModel):
            token: SecretValue


def test_immutable_without_instance_dict(secret: SecretValue) -> None:
    with pytest.raises(AttributeError):
        secret.value = "x"  # type: ignore[attr-defined]
    assert not hasattr(secret, "__dict__")
    assert copy.deepcopy(secret) is secret and copy.copy(secret) is secret


def test_equality_by_content_and_unhashable(secret: SecretValue) -> None:
    assert secret == SecretValue(SENTINEL)
    assert secret != SecretValue("other")
    with pytest.raises(TypeError):
        hash(secret)


def test_only_strings_are_wrapped() -> None:
    with pytest.raises(TypeError):
        SecretValue(b"bytes")  # type: ignore[arg-type]
