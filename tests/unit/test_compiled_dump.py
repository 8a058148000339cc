"""schemas/compiled.py: a compiled dump gives exactly what marshmallow's dump gives.

The loader renders every origin with compile_dump(OriginSchema); the API documents and
serves OriginSchema. Here both dump the same records, well-formed and odd (missing keys,
extra keys, nulls, values of the wrong type), and must produce the same bytes or fail with
the same exception; and what the compiler does not reproduce it must refuse.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import Schema, fields, post_dump

from registry import digest
from schemas.compiled import Unsupported, compile_dump
from schemas.origin import OriginSchema
from schemas.summary import IntegrationStatusSchema

ORIGIN = OriginSchema()
DUMP_ORIGIN = compile_dump(OriginSchema)

# Any leaf a JSON document can carry where the schema expects a string, number or boolean.
LEAF = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.booleans(),
    st.sampled_from(["12", "true", "false", "0", ""]),
)


def shaped(schema: Schema) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings shaped like schema's dump: each field present or not, sometimes odd, plus
    keys the schema does not know."""
    parts = {}
    for name, field in schema.dump_fields.items():
        if isinstance(field, fields.Nested):
            value = st.one_of(st.none(), shaped(field.schema), LEAF)
        elif isinstance(field, fields.List):
            inner = field.inner
            item = shaped(inner.schema) if isinstance(inner, fields.Nested) else LEAF
            value = st.one_of(st.none(), st.lists(st.one_of(st.none(), item), max_size=3))
        else:
            value = LEAF
        parts[name] = value
    return st.fixed_dictionaries(
        {},
        optional={**parts, "not_in_the_schema": LEAF},
    )


def outcome(dump: Any, record: Any) -> tuple[str, Any]:
    """What dumping record gives: its JSON bytes, or the exception's type."""
    try:
        return ("dumped", orjson.dumps(dump(record)))
    except Exception as error:  # both must fail alike
        return ("raised", type(error))


@settings(max_examples=400, deadline=None)
@given(shaped(OriginSchema()))
def test_compiled_origin_dump_matches_marshmallow(record: dict[str, Any]) -> None:
    """Same keys, same order, same values as OriginSchema().dump, whatever the record."""
    assert outcome(DUMP_ORIGIN, record) == outcome(ORIGIN.dump, record)


def test_a_full_origin_record_is_dumped_alike() -> None:
    """A record as the loader assembles it, every block present."""
    record = {
        "origin": {
            "id": "svc:origin:0cb88c21-b953-48e5-9e64-4db7fb76eab3",
            "name": "Highlands History Live",
            "registry_id": "reg-7",
            "network": {"id": "svc:network:1", "name": "Highlands"},
        },
        "governance": {"state": "governed", "active_edges": 2},
        "bans": {
            "allocated": True,
            "address": "1.2.3",
            "network": 1,
            "station": 2,
            "channel": 3,
            "publication_status": "held",
            "held": {"at": "2026-01-01T00:00:00Z", "reason": None},
        },
        "presentations": [
            {"carriage_id": "c1", "transport": "iptv", "provider": "p", "source": None},
            {"carriage_id": "c2", "transport": "ota", "availability": "up", "extra": 1},
        ],
    }
    compiled = orjson.dumps(DUMP_ORIGIN(record))
    assert compiled == orjson.dumps(ORIGIN.dump(record))
    assert b'"extra"' not in compiled


def test_data_key_and_attribute_are_honoured() -> None:
    """A field's data_key names its output, its attribute where its value is read."""

    class Renamed(Schema):
        shown = fields.String(data_key="shownAs")
        read = fields.Integer(attribute="stored")

    record = {"shown": "a", "stored": 7, "read": 9}
    assert compile_dump(Renamed)(record) == Renamed().dump(record) == {"shownAs": "a", "read": 7}


def test_other_schemas_compile_too() -> None:
    """The summary envelope is refused, naming the field it cannot reproduce (generated_at, a
    DateTime), rather than compiled into a dump that might differ: only OriginSchema, whose
    fields are all reproduced, is compiled for the loader."""
    with pytest.raises(Unsupported, match="generated_at: field class DateTime"):
        compile_dump(IntegrationStatusSchema)


class WithMethod(Schema):
    value = fields.Method("compute")

    def compute(self, obj: Any) -> int:
        return 1


class WithHook(Schema):
    value = fields.String()

    @post_dump
    def upper(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {key: value.upper() for key, value in data.items()}


class WithDefault(Schema):
    value = fields.String(dump_default="x")


class AsString(Schema):
    value = fields.Integer(as_string=True)


class OwnString(fields.String):
    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        return "mine"


class WithSubclass(Schema):
    value = OwnString()


class Dotted(Schema):
    value = fields.String(attribute="a.b")


@pytest.mark.parametrize(
    "schema", [WithMethod, WithHook, WithDefault, AsString, WithSubclass, Dotted]
)
def test_what_it_cannot_reproduce_is_refused(schema: type[Schema]) -> None:
    """A field class, hook, default or option it does not know: refused, never dumped
    differently."""
    with pytest.raises(Unsupported):
        compile_dump(schema)


class Unsorted(Schema):
    b = fields.String()
    a = fields.String()


class NestsUnsorted(Schema):
    a = fields.Nested(Unsorted)


class ListsUnsorted(Schema):
    a = fields.List(fields.Nested(Unsorted))


class RenamedUnsorted(Schema):
    a = fields.String(data_key="z")
    b = fields.String()


class NonAscii(Schema):
    a = fields.String(data_key="é")


@pytest.mark.parametrize(
    "schema", [Unsorted, NestsUnsorted, ListsUnsorted, RenamedUnsorted, NonAscii]
)
def test_canonical_refuses_keys_it_would_not_write_sorted(schema: type[Schema]) -> None:
    """canonical=True: keys out of order, at any depth or by data_key, or not ASCII, are
    refused; the same schema compiles without it."""
    compile_dump(schema)
    with pytest.raises(Unsupported, match="not ASCII and sorted"):
        compile_dump(schema, canonical=True)


@given(shaped(ORIGIN))
@settings(max_examples=200, deadline=None)
def test_the_origins_compiled_dump_writes_its_canonical_form(record: dict[str, Any]) -> None:
    """Whatever shape it is given, the loader's dump (canonical=True) gives a dict orjson
    writes in its canonical form without sorting (registry/digest.py)."""
    dump = compile_dump(OriginSchema, canonical=True)
    try:
        dumped = dump(record)
    except Exception:  # refused input is test_both_dumps_agree's matter
        return
    assert digest.canonical_as_built(dumped) == digest.canonical(dumped)
