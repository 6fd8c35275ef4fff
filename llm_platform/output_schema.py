"""The copy of a task's JSON Schema that is sent to a model API as its output format.

Structured outputs (Anthropic's `output_config.format`, OpenAI-compatible
`response_format` json_schema) constrain the decoder to a schema, but the APIs
accept only a subset of JSON Schema: no string lengths or patterns, no numeric
bounds, no array sizes beyond `minItems` 0 or 1, and every object closed
(`additionalProperties: false`). `sent_schema` drops what they refuse and closes
the objects. The answer is still validated against the full schema
(model_task.schema_check, plus the callers' SourceRef checks): the API
guarantees the structure, the full schema and the checks judge the rest.
"""

from __future__ import annotations

from typing import Any

# Keywords a structured-output schema may not carry (their constraint is checked after the answer).
UNSENT_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    }
)
SCHEMA_MAPS = ("properties", "$defs", "definitions")  # keyword → {name: schema}
SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")  # keyword → [schema]
SCHEMA_VALUES = ("items", "not")  # keyword → schema


def sent_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` that structured-output APIs accept (the original is not changed)."""
    sent: dict[str, Any] = {}
    for key, value in schema.items():
        if key in UNSENT_KEYWORDS:
            continue
        if key == "minItems" and value > 1:
            continue  # only 0 and 1 are accepted
        if key in SCHEMA_MAPS:
            value = {name: sent_schema(sub) for name, sub in value.items()}
        elif key in SCHEMA_LISTS:
            value = [sent_schema(sub) for sub in value]
        elif key in SCHEMA_VALUES and isinstance(value, dict):
            value = sent_schema(value)
        sent["anyOf" if key == "oneOf" else key] = value
    if sent.get("type") == "object" or "properties" in sent:
        sent["additionalProperties"] = False
    return sent
