"""The request bodies of the context endpoints (the JSON they answer with is context_app/serializers.py)."""

from rest_framework.exceptions import ValidationError

from workspaces.api.bodies import Body, Boolean


class ContextOptionsBody(Body):
    """PATCH /api/sessions/{sid}/context: one option or both."""

    invalid_message = 'body must be {"auto_parse"?: true|false, "batch_ingest"?: true|false}'
    auto_parse = Boolean(required=False)
    batch_ingest = Boolean(required=False)

    def validate(self, attrs):
        if not attrs:
            raise ValidationError("no option")
        return super().validate(attrs)
