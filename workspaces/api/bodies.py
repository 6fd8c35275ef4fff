"""Request bodies, checked one way: a `Body` serializer per body, applied by `with_body` (decorators.py).

The fields take a value only as the client sent it: a JSON `true`, not `"true"` or `1`; a
string, not a number; a form's last value, with none of DRF's HTML-form defaults (a missing
field is missing, not `false`). Each body names its messages, so a client reads the same
words as before this check was a serializer. What a value must be beyond its type (a
title's length, a run's limits, a chat message's size) stays in the services, which pages
and scripts call too.
"""

import itertools
from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings


class AsSent(serializers.Field):
    """Passed on as sent (the service checks it: a team id, a run limit); a form gives its last value."""

    json_type: type | None = None  # subclasses: the one JSON type the value may have

    def get_value(self, dictionary):
        return dictionary.get(self.field_name, empty)  # not DRF's HTML-form defaults: missing stays missing

    def to_internal_value(self, data):
        if self.json_type is not None and not isinstance(data, self.json_type):
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


class Boolean(AsSent):
    """`true` or `false`."""

    json_type = bool
    default_error_messages = {"invalid": "Must be true or false."}


class Text(AsSent):
    """A string, untrimmed (the service decides what an empty one means)."""

    json_type = str
    default_error_messages = {"invalid": "Not a valid string."}


class Body(serializers.Serializer):
    """A request body: a JSON object or a form.

    `invalid_message`: when set, the one message for any error of the body (its shape, in words).
    `not_an_object`: the message for a body that is not an object (a list, a bare value, null).
    `refuse_unknown`: a field the body does not declare is an error, "unknown field(s): a, b".
    """

    invalid_message = ""
    not_an_object = "body must be a JSON object"
    refuse_unknown = False

    def run_validation(self, data=empty):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [self.not_an_object]})
        return super().run_validation(data)

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields)) if self.refuse_unknown else []
        if unknown:
            raise serializers.ValidationError(f"unknown field(s): {', '.join(unknown)}")
        return attrs


def check(body_class: type[Body], data) -> tuple[dict, str | None]:
    """The body's values and None, or {} and the message a client reads when the body is refused."""
    body = body_class(data=data)
    if body.is_valid():
        return dict(body.validated_data), None
    return {}, body_class.invalid_message or first_error(body.errors)


def first_error(errors) -> str:
    """The first message: fields in the order the body declares them, then the body's own."""
    while not isinstance(errors, str):
        errors = next(iter(errors.values())) if isinstance(errors, Mapping) else errors[0]
    return str(errors)


# A page's form fields that are not part of the body: Django's CSRF token and the form's Idempotency-Key.
NOT_BODY_FIELDS = ("csrfmiddlewaretoken", "idempotency_key")


def form_json(fields) -> dict:
    """A form's fields as the JSON body its API endpoint takes: `payloads.0.kind` → {"payloads": [{"kind"}]};
    a checkbox's "true" → true. The page's script builds the same body (groundwork.js formJson)."""
    body: dict = {}
    for name in fields:
        if name in NOT_BODY_FIELDS:
            continue
        parts = name.split(".")
        holder = body
        for part, next_part in itertools.pairwise(parts):
            holder = _put(holder, part, [] if next_part.isdigit() else {}, keep=True)
        value = fields.get(name)
        _put(holder, parts[-1], True if value == "true" else value, keep=False)
    return body


def _put(holder: dict | list, key: str, value, *, keep: bool):
    """Sets holder[key] (a list's index given as digits) to value, or keeps what is there when `keep`."""
    if isinstance(holder, list):
        index = int(key)
        holder.extend([None] * (index + 1 - len(holder)))
        if not (keep and holder[index] is not None):
            holder[index] = value
        return holder[index]
    return holder.setdefault(key, value) if keep else holder.__setitem__(key, value)
