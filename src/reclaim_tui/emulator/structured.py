"""Structured output: the JSON value a model answers when the request asks for one.

A `response_format` comes in the shapes clients send: a list of entries
(`{"type": "text", "mime_type": "application/json", "schema": {...}}`, the
Vercel AI SDK's provider), one such entry, or a bare JSON schema (the JS
SDK's `interactions_structured_output_json` sample). The real API answers a
text that is a JSON value valid against the schema (a recorded answer to
the Vercel provider's schema is `{"name":"John Doe","age":30}`); the
emulator builds a small value from the schema alone, so equal requests get
equal answers. It covers the JSON Schema keywords structured output uses:
`type` (one or a list), `enum`, `const`, `properties` / `required`,
`items` / `prefixItems`, `minItems`, `minimum` / `maximum` (and their
exclusive forms), `minLength` / `maxLength`, `format` (date, date-time,
time, email, uri, uuid), `anyOf` / `oneOf` / `allOf`, `$ref` into `$defs`
or `definitions`, and `nullable`. Sizes are capped (a schema asking for a
billion items gets a few dozen) and endless required nesting ends in null:
a hostile schema gets a small answer, never a hung or failed request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_schema_of", "json_text", "sample_value"]

_SCHEMA_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "someone@example.com",
    "uri": "https://www.example.com/",
    "url": "https://www.example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
#: How deep a recursive schema is followed before the smallest value ends it;
#: past twice that a schema that requires endless nesting gets null (no finite
#: value is valid against it).
_MAX_DEPTH = 8
#: Caps on sizes a schema asks for: a small answer, never a huge allocation.
_MAX_ITEMS = 64
_MAX_CHARS = 4096


def _is_schema(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if any(isinstance(k, str) and k.lower() in _SCHEMA_TYPES for k in kinds):
        return True
    return any(key in value for key in ("properties", "anyOf", "oneOf", "allOf", "enum", "$ref"))


def json_schema_of(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema a `response_format` asks the text to follow; `{}` when it asks for
    JSON without a schema; None when it asks for no JSON."""
    entries = response_format if isinstance(response_format, list) else [response_format]
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("type") == "text":
            if isinstance(entry.get("schema"), Mapping):
                return dict(entry["schema"])
            if entry.get("mime_type") == "application/json":
                return {}
        elif _is_schema(entry):
            return dict(entry)
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, Mapping) else None
    return target if isinstance(target, Mapping) else {}


def _merged(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with its `allOf` parts folded in (properties and required joined)."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    for part in _listed(schema.get("allOf")):
        part = _merged(_resolve(part, root), root) if isinstance(part, Mapping) else {}
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                mine = out.get("properties")
                out["properties"] = {**(mine if isinstance(mine, Mapping) else {}), **value}
            elif key == "required":
                out["required"] = [*_listed(out.get("required")), *_listed(value)]
            else:
                out.setdefault(key, value)
    return out


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    kinds = [k.lower() for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)]
    for preferred in ("object", "array", "string", "integer", "number", "boolean", "null"):
        if preferred in kinds:
            return preferred
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    step = 1 if integer else 0.5
    if isinstance(low, (int, float)) and not isinstance(low, bool):
        value = low + (step if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    elif isinstance(high, (int, float)) and not isinstance(high, bool):
        value = min(high - (step if "exclusiveMaximum" in schema else 0), 1)
    else:
        value = 1
    return math.ceil(value) if integer else float(value)


def _string(schema: Mapping[str, Any], hint: str) -> str:
    found = _FORMATS.get(str(schema.get("format")))
    text = found or (" ".join(hint.split()[:6]) or "text")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (min(low, _MAX_CHARS) - len(text))
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    return text


def _array(schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, depth: int) -> list[Any]:
    prefix = [s for s in _listed(schema.get("prefixItems")) if isinstance(s, Mapping)]
    items = schema.get("items")
    low = schema.get("minItems")
    high = schema.get("maxItems")
    count = max(len(prefix), low if isinstance(low, int) else 1)
    if isinstance(high, int):
        count = min(count, high)
    count = max(0, min(count, _MAX_ITEMS))
    if depth >= _MAX_DEPTH and not prefix and not isinstance(low, int):
        count = 0
    out = [sample_value(s, root, hint, depth + 1) for s in prefix[:count]]
    item_schema = items if isinstance(items, Mapping) else {}
    while len(out) < count:
        out.append(sample_value(item_schema, root, hint, depth + 1))
    return out


def _object(
    schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, depth: int
) -> dict[str, Any]:
    found = schema.get("properties")
    properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    required = [n for n in _listed(schema.get("required")) if isinstance(n, str)]
    names = list(properties) if depth < _MAX_DEPTH else []
    names += [n for n in required if n not in names]
    out = {}
    for name in names:
        prop = properties.get(name)
        out[name] = sample_value(prop if isinstance(prop, Mapping) else {}, root, hint, depth + 1)
    return out


def sample_value(
    schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, hint: str = "", depth: int = 0
) -> Any:
    """A small value valid against `schema` (`root`: where `$ref`s point), the same every time."""
    root = schema if root is None else root
    if depth > 2 * _MAX_DEPTH:
        return None
    schema = _merged(_resolve(schema, root), root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = [o for o in _listed(schema.get(key)) if isinstance(o, Mapping)]
        if options:
            rest = {k: v for k, v in schema.items() if k != key}
            return sample_value({**rest, **_resolve(options[0], root)}, root, hint, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        return _object(schema, root, hint, depth)
    if kind == "array":
        return _array(schema, root, hint, depth)
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema, hint)


def json_text(schema: Mapping[str, Any], hint: str) -> str:
    """The answer's text for `schema` (`{}`: any JSON, an object with the answer)."""
    value = sample_value(schema, hint=hint) if schema else {"text": hint}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
