"""Payload mapping: the platform-owned, closed description of one payload row.

A workload names a mapping by ``payload.mapping_ref``; the compiler resolves it from
``scenarios/mappings/<mapping_ref>.yaml`` and pins it into the compiled plan. The mapping owns
the ordered output fields, each field's type, its null and empty-string policy and which field
carries the business date of the scope. The codec never guesses: a source value the mapping can
not encode fails before anything is sealed.

Pure data: no I/O.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, Description, check_identifier, contract_error

MAPPING_SCHEMA_ID = "restproof.payload_mapping.v1"
FIELD_TYPES = ("string", "integer", "decimal", "boolean", "date", "timestamp")
MAX_FIELDS = 256

FieldType = Literal["string", "integer", "decimal", "boolean", "date", "timestamp"]
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


class MappedField(ContractModel):
    """One output field, in output order."""

    name: str
    # The source column it is read from (defaults to ``name``).
    source: str | None = None
    type: FieldType
    # May the value be absent (null)? A non-nullable null is refused with field evidence.
    nullable: StrictBool = False
    # Strings only: what an empty source string means. ``preserve`` keeps it as an empty string,
    # ``as_null`` turns it into null (the field must then be nullable), ``refuse`` fails.
    empty_string: Literal["preserve", "as_null", "refuse"] = "refuse"
    # Decimals only: digits after the point; a value needing more digits is refused, never rounded.
    scale: StrictInt | None = Field(default=None, ge=0, le=18)
    # Strings only: longest value in characters.
    max_length: StrictInt = Field(default=65_536, ge=1, le=1_048_576)

    @field_validator("name", "source")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        if value is not None and not _FIELD_NAME.fullmatch(value):
            raise contract_error("contract.invalid_value", "field names are plain column names")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> MappedField:
        if self.type == "decimal" and self.scale is None:
            raise contract_error("contract.missing_field", "a decimal field needs its scale", field="scale")
        if self.type != "decimal" and self.scale is not None:
            raise contract_error("contract.invalid_value", "scale applies to decimal fields only", field="scale")
        if self.type != "string" and self.empty_string != "refuse":
            raise contract_error(
                "contract.invalid_value", "empty_string applies to string fields only", field="empty_string"
            )
        if self.empty_string == "as_null" and not self.nullable:
            raise contract_error(
                "contract.ambiguous_null", "empty_string as_null needs a nullable field", field="empty_string"
            )
        return self

    @property
    def source_name(self) -> str:
        return self.source if self.source is not None else self.name

    @property
    def keeps_null_and_empty(self) -> bool:
        """Both null and the empty string survive as distinct values: the codec must tell them apart."""
        return self.type == "string" and self.nullable and self.empty_string == "preserve"


class PayloadMapping(ContractModel):
    schema_id: Literal["restproof.payload_mapping.v1"] = "restproof.payload_mapping.v1"
    id: str
    description: Description
    # The output field holding the business date the scope is cut on (type date, not nullable).
    scope_field: str
    fields: tuple[MappedField, ...] = Field(min_length=1, max_length=MAX_FIELDS)
    # Source columns read but deliberately not delivered; any other unmapped column is refused.
    ignore_source_fields: tuple[str, ...] = ()

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_identifier(value, "mapping id")

    @model_validator(mode="after")
    def _coherent(self) -> PayloadMapping:
        names = [field.name for field in self.fields]
        if len(set(names)) != len(names):
            raise contract_error("contract.duplicate_key", "output field names must be unique", field="fields")
        sources = [field.source_name for field in self.fields]
        if len(set(sources)) != len(sources):
            raise contract_error("contract.duplicate_key", "a source column is mapped twice", field="fields")
        if set(self.ignore_source_fields) & set(sources):
            raise contract_error(
                "contract.invalid_value", "a source column is both mapped and ignored", field="ignore_source_fields"
            )
        scope = next((field for field in self.fields if field.name == self.scope_field), None)
        if scope is None:
            raise contract_error("contract.missing_scope_field", "scope_field must name an output field",
                                 field="scope_field")
        if scope.type != "date" or scope.nullable:
            raise contract_error("contract.invalid_scope_field", "the scope field is a non-nullable date",
                                 field="scope_field")
        return self

    def field(self, name: str) -> MappedField:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    @property
    def scope_index(self) -> int:
        return [field.name for field in self.fields].index(self.scope_field)
