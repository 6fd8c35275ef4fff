"""One shape for every JSON error: {"error": "<message>", ...}; an ApplicationError from any service becomes it."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from workspaces.errors import ApplicationError


def error(message: str, status: int, **extra) -> Response:
    return Response({"error": message, **extra}, status=status)


def exception_handler(exc, context) -> Response | None:
    if isinstance(exc, ApplicationError):
        return error(exc.message, exc.status, **exc.extra)
    if isinstance(exc, Http404):
        return error("not found", 404)
    # Refusals of the request parser (a SuspiciousOperation, else Django's HTML 400 and a logged traceback).
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return error(f"too many files in one request: at most {limit}; send the rest in another", 400, limit=limit)
    if isinstance(exc, TooManyFieldsSent):
        return error("too many form fields in one request", 400)
    if isinstance(exc, RequestDataTooBig):
        return error("the request body is too large", 413)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        response.data = {"error": str(detail or exc.detail)}
    return response


@csrf_exempt  # it changes nothing; without this a POST would get Django's HTML CSRF page instead
def unknown_endpoint(request, path: str = "") -> JsonResponse:
    """Every /api/ path no route answers: the API's JSON 404, not Django's HTML page."""
    return JsonResponse({"error": f"no such API endpoint: {request.path}"}, status=404)
