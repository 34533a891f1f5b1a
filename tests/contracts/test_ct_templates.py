"""The finite template language: allowed symbols pass, everything else has a stable code."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticCustomError

from sink.contracts import REQUEST_SYMBOLS, TemplateLocation, template_symbols

P, POLL, Q, H, S = (TemplateLocation.PATH, TemplateLocation.POLL_PATH, TemplateLocation.QUERY,
                    TemplateLocation.HEADER, TemplateLocation.SCALAR)


@pytest.mark.parametrize(
    ("value", "location", "symbols"),
    [
        ("/mock/v1/resources/{resource}/batches", P, ("resource",)),
        ("/jobs/{receipt.id}", POLL, ("receipt.id",)),
        ("{scope.from}", Q, ("scope.from",)),
        ("{receiver_mutation_key}", H, ("receiver_mutation_key",)),
        ("text/csv; charset=utf-8", H, ()),
        ("/a/{delivery_key}/{scope.to}", P, ("delivery_key", "scope.to")),
    ],
)
def test_accepted_templates(value: str, location: TemplateLocation, symbols: tuple[str, ...]) -> None:
    assert template_symbols(value, location) == symbols


@pytest.mark.parametrize(
    ("value", "location", "code"),
    [
        ("https://evil.example/x", P, "contract.absolute_url"),
        ("//evil.example/x", P, "contract.absolute_url"),
        ("javascript:alert(1)", P, "contract.absolute_url"),
        ("http://evil.example/cb", Q, "contract.absolute_url"),
        ("see http://evil.example", H, "contract.absolute_url"),
        ("/a/../b", P, "contract.path_traversal"),
        ("/a/..", P, "contract.path_traversal"),
        ("/a/%2E%2e/b", P, "contract.path_traversal"),
        ("/a/%2fetc", P, "contract.path_traversal"),
        ("/a\\b", P, "contract.path_traversal"),
        ("/a/%00", P, "contract.path_traversal"),
        ("/a/%252e", P, "contract.path_traversal"),
        ("/a\nb", P, "contract.control_character"),
        ("value\r\nX-Evil: 1", H, "contract.control_character"),
        ("/a\u200bb", P, "contract.control_character"),
        ("/a/{{resource}}", P, "contract.bad_symbol"),
        ("/a/${HOME}", P, "contract.bad_symbol"),
        ("/a/{% if x %}", P, "contract.bad_symbol"),
        ("/a/{unknown}", P, "contract.bad_symbol"),
        ("/a/{resource", P, "contract.bad_symbol"),
        ("/a/resource}", P, "contract.bad_symbol"),
        ("/a/{receipt.id}", P, "contract.bad_symbol"),
        ("{receipt.id}", H, "contract.bad_symbol"),
        ("{ resource }", Q, "contract.bad_symbol"),
        ("{resource|upper}", Q, "contract.bad_symbol"),
        ("/a/$(id)", P, "contract.bad_symbol"),
        ("relative/path", P, "contract.invalid_value"),
        ("/a?b=c", P, "contract.invalid_value"),
        ("/a/%41", P, "contract.invalid_value"),
        ("/" + "a" * 600, P, "contract.invalid_value"),
    ],
)
def test_refused_templates(value: str, location: TemplateLocation, code: str) -> None:
    with pytest.raises(PydanticCustomError) as caught:
        template_symbols(value, location)
    assert caught.value.type == code


def test_symbol_set_is_the_documented_one() -> None:
    assert frozenset({"resource", "delivery_key", "receiver_mutation_key", "scope.from", "scope.to"}) == (
        REQUEST_SYMBOLS
    )


_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    segments=st.lists(st.one_of(_SEGMENT, st.sampled_from(sorted("{" + s + "}" for s in REQUEST_SYMBOLS))),
                      min_size=1, max_size=6)
)
def test_any_path_of_literals_and_known_symbols_is_accepted(segments: list[str]) -> None:
    path = "/" + "/".join(segments)
    symbols = template_symbols(path, P)
    assert set(symbols) <= REQUEST_SYMBOLS


@settings(max_examples=200, deadline=None)
@given(prefix=_SEGMENT, name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=20))
def test_any_unknown_symbol_is_refused(prefix: str, name: str) -> None:
    assume(name not in REQUEST_SYMBOLS)
    with pytest.raises(PydanticCustomError) as caught:
        template_symbols(f"/{prefix}/{{{name}}}", P)
    assert caught.value.type in {"contract.bad_symbol", "contract.path_traversal"}
