import pytest

from tests.browser.script_errors import SCRIPT_ERRORS


@pytest.fixture(autouse=True)
def script_errors_fail_the_test(request):
    """A browser test fails on a script error it caused, whatever it checks: a page that throws
    in a handler may still show what the test waits for, or time out without saying why.

    An earlier test's pages are closed first: left open, their timers and sockets went on acting
    after that test's data was gone, and their errors landed in this test."""
    if "browser" in request.fixturenames:
        for context in request.getfixturevalue("browser").contexts:
            context.close()
    SCRIPT_ERRORS.clear()
    yield
    assert not SCRIPT_ERRORS, f"uncaught script errors in the page: {SCRIPT_ERRORS}"
