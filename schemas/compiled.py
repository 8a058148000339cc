"""A marshmallow schema's dump, compiled into one plain Python function per schema.

The loader dumps every origin through OriginSchema once per load: a million calls of
marshmallow's generic machinery (a field object, an accessor and a few checks per value)
cost about 90 microseconds an origin. `compile_dump(OriginSchema)` reads the same schema
(its fields, their order, data keys and nesting) and writes the loop out as straight-line
code, so the schema stays the one description of a record and the dump stays marshmallow's.

Values of the type a field expects pass through exactly as marshmallow would pass them
(a str to String, an int to Integer, a bool to Boolean, a dict to Nested, a list to List);
any other value is handed to the field's own `_serialize`, so odd input is serialized by
marshmallow itself. What this does not know (another field class, a hook, a default, a
dotted attribute, only/exclude, as_string) it refuses at compile time with Unsupported
rather than dump differently; tests/unit/test_compiled_dump.py checks both dumps agree.

With `canonical=True` it also refuses a schema, or a schema nested in it, whose keys are not
ASCII and declared in sorted order: the dicts it writes then hold their keys as RFC 8785
sorts them, so orjson writes a record in its canonical form without sorting anything
(registry/digest.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import Schema, fields
from marshmallow.utils import missing

Dump = Callable[[Mapping[str, Any]], dict[str, Any]]

# The field classes compiled, by exact class: a subclass may serialize differently.
_PASS_THROUGH = {fields.String: "str", fields.Integer: "int", fields.Boolean: "bool"}


class Unsupported(Exception):
    """The schema uses something compile_dump does not reproduce exactly."""


def compile_dump(schema_class: type[Schema], canonical: bool = False) -> Dump:
    """A function giving what schema_class().dump(obj) gives, for one mapping obj; with
    canonical, only for a schema whose every object's keys are ASCII and sorted."""
    return _Compiler(canonical).schema(schema_class())


def _key(attr_name: str, field: fields.Field) -> str:
    """The key a field is dumped under."""
    return field.data_key if field.data_key is not None else attr_name


class _Compiler:
    """Writes one function per schema; nested schemas are compiled once each."""

    def __init__(self, canonical: bool) -> None:
        self.names: dict[str, Any] = {"_missing": missing}
        self.counter = 0
        self.canonical = canonical

    def name(self, value: Any, prefix: str) -> str:
        """A global name for value in the generated code."""
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.names[name] = value
        return name

    def schema(self, schema: Schema) -> Dump:
        """Compile schema.dump for one object."""
        hooks = [kind for kind, found in getattr(schema, "_hooks", {}).items() if found]
        if schema.many or schema.only or schema.exclude or hooks:
            raise Unsupported(f"{type(schema).__name__}: many, only, exclude or hooks")
        if type(schema).get_attribute is not Schema.get_attribute:
            raise Unsupported(f"{type(schema).__name__}: its own get_attribute")
        if schema.dict_class is not dict:
            raise Unsupported(f"{type(schema).__name__}: dict_class {schema.dict_class}")
        lines = ["def dump(obj):", "    out = {}"]
        for attr_name, field in schema.dump_fields.items():
            lines.extend(self.field(attr_name, field))
        keys = [
            _key(name, field) for name, field in schema.dump_fields.items() if not field.load_only
        ]
        if self.canonical and (keys != sorted(keys) or not all(map(str.isascii, keys))):
            raise Unsupported(f"{type(schema).__name__}: keys {keys} are not ASCII and sorted")
        lines.append("    return out")
        namespace = dict(self.names)
        exec("\n".join(lines), namespace)  # code written here from the schema
        dump: Dump = namespace["dump"]
        dump.__doc__ = f"{type(schema).__name__}().dump(obj), compiled (schemas/compiled.py)."
        return dump

    def field(self, attr_name: str, field: fields.Field) -> list[str]:
        """The lines that put one field of obj into out, as Schema._serialize would."""
        source = field.attribute or attr_name
        if "." in source:
            raise Unsupported(f"{attr_name}: dotted attribute {source!r}")
        if field.dump_default is not missing:
            raise Unsupported(f"{attr_name}: a dump_default")
        if field.load_only:
            return []
        key = _key(attr_name, field)
        value = self.value(attr_name, field)
        return [
            f"    v = obj.get({source!r}, _missing)",
            "    if v is not _missing:",
            f"        out[{key!r}] = {value}",
        ]

    def value(self, attr_name: str, field: fields.Field, variable: str = "v") -> str:
        """An expression serializing `variable` as field._serialize would."""
        kind = type(field)
        own = self.name(field, "field")
        fallback = f"{own}._serialize({variable}, {attr_name!r}, obj)"
        if kind in _PASS_THROUGH:
            if getattr(field, "as_string", False):
                raise Unsupported(f"{attr_name}: as_string")
            expected = _PASS_THROUGH[kind]
            return (
                f"{variable} if {variable} is None or type({variable}) is {expected} "
                f"else {fallback}"
            )
        if isinstance(field, fields.Nested) and kind is fields.Nested:
            nested = field.schema
            if field.many or nested.many:
                raise Unsupported(f"{attr_name}: a Nested with many")
            inner = self.name(self.schema(nested), "dump")
            return (
                f"None if {variable} is None else {inner}({variable}) "
                f"if type({variable}) is dict else {fallback}"
            )
        if isinstance(field, fields.List) and kind is fields.List:
            item = self.value(attr_name, field.inner, "each")
            return (
                f"None if {variable} is None else [{item} for each in {variable}] "
                f"if type({variable}) is list else {fallback}"
            )
        raise Unsupported(f"{attr_name}: field class {kind.__name__}")
