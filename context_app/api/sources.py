"""`GET /api/sources/{version}/{span}`: the one resolver of citations (context_app.provenance.resolve).

A version is visible to the members of the team whose library it belongs to (its
cache scope) and to staff; anyone else, an unknown version or an unknown span gets
404 `{"error": "source not found"}`. Two queries whatever the version holds: the
user's teams, then the version with its origin session.
"""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from workspaces.api.errors import error

from .. import provenance

NOT_FOUND = "source not found"


@api_view(["GET"])
def source_detail(request, version, span):
    found = provenance.resolve(request.user, [(version, span)]).get((version, span))
    if found is None:
        return error(NOT_FOUND, 404)
    return Response(found)
