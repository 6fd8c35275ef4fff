"""A page's script asking for a fragment or JSON while its user is signed out gets a 401, not the login page.

`login_required` answers a signed-out request with a redirect to the login page, which fetch and XHR
follow: the page's script received the login page as the fragment it asked for, and swapping it in
put a login form in place of the page's <main> (a session that expired, a sign-out in another tab).
A request says it comes from script by `X-Requested-With` (groundwork.js `load`) or by asking for
JSON (`requestJson`); a browser's own navigation still gets the login page.
"""

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import resolve_url

SIGNED_OUT = "You are signed out: reload the page to sign in again."


class SignedOutScriptRequests:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code == 302 and _to_login(response) and _from_script(request):
            return JsonResponse({"error": SIGNED_OUT}, status=401)
        return response


def _to_login(response) -> bool:
    return response.get("Location", "").split("?", 1)[0] == resolve_url(settings.LOGIN_URL)


def _from_script(request) -> bool:
    return "X-Requested-With" in request.headers or "application/json" in request.headers.get("Accept", "")
