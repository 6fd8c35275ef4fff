"""The request bodies of the context endpoints (the JSON they answer with is context_app/serializers.py)."""

from research_app.api.bodies import Body, Boolean


class AutoParseBody(Body):
    """PATCH /api/sessions/{sid}/context"""

    invalid_message = 'body must be {"auto_parse": true|false}'
    auto_parse = Boolean()
