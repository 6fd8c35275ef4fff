"""A page's script asking while its user is signed out gets a 401 with a message, not the login page
(config/signed_out.py): swapped in as a fragment, the login page took the place of the whole page."""

import uuid

import pytest

from config.signed_out import SIGNED_OUT

FRAGMENTS = [
    f"/sessions/{uuid.uuid4()}/context/view/?tab=aggregate",
    f"/sessions/{uuid.uuid4()}/context/pane/",
    f"/sessions/{uuid.uuid4()}/?fragment",
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", FRAGMENTS)
@pytest.mark.parametrize(
    "headers", [{"HTTP_X_REQUESTED_WITH": "fetch"}, {"HTTP_ACCEPT": "application/json"}], ids=["fetch", "json"]
)
def test_a_script_of_a_signed_out_page_gets_a_401_saying_so(client, path, headers):
    response = client.get(path, **headers)

    assert response.status_code == 401
    assert response.json() == {"error": SIGNED_OUT}


@pytest.mark.django_db
@pytest.mark.parametrize("path", FRAGMENTS)
def test_a_browser_navigating_there_signed_out_gets_the_login_page(client, path):
    response = client.get(path)

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
