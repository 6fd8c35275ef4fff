"""The real stack for tests: a redis-server of our own, a Celery worker, Channels over Redis."""

import pytest

from tests import session_worker
from tests.production import databases
from tests.redis_server import RedisServer

_redis: RedisServer | None = None


def pytest_configure(config):
    global _redis
    from django.conf import settings

    databases.use_postgres_if_asked(settings)
    _redis = RedisServer()
    settings.REDIS_URL = _redis.url
    settings.CELERY_BROKER_URL = _redis.url
    from config.settings import channel_layers_for

    settings.CHANNEL_LAYERS = channel_layers_for(_redis.url)
    settings.GROUNDWORK_LLM = "offline"
    settings.GROUNDWORK_LLM_BACKOFF_SECONDS = 0.01
    # The in-process worker sweeps no leases in the background, between a test's own steps.
    settings.GROUNDWORK_LEASE_SWEEP_SECONDS = 0
    from config.celery import app

    app.conf.broker_url = _redis.url


STACK_FIXTURES = {"celery_worker_thread", "live_server_url"}


def pytest_collection_modifyitems(config, items):
    # A test on the real worker or live server is a slow stack test: `make test-fast` leaves them out.
    for item in items:
        if STACK_FIXTURES & set(item.fixturenames) or item.get_closest_marker("workers"):
            item.add_marker(pytest.mark.stack)
    if databases.wants_postgres():
        _keep_what_the_database_decides(config, items)
    # Playwright's sync API keeps an event loop running in the main thread once
    # started, which async_to_sync refuses to share: browser tests go last.
    # Tests with worker processes of their own go first, before the in-process
    # worker (celery_worker_thread, session-wide once started) consumes the broker.
    items.sort(
        key=lambda item: (item.get_closest_marker("workers") is None, item.get_closest_marker("browser") is not None)
    )


DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup"} | STACK_FIXTURES


def _keep_what_the_database_decides(config, items) -> None:
    """The PostgreSQL pass runs the tests whose outcome can depend on the database: those that use
    it. Browser tests drive the page's JavaScript against a server whose database the API and stack
    tests already cover on both; tests with no database at all gain nothing from a second pass, nor
    do those marked `one_database` (a page or the README's steps, which the same rows render alike; or
    a race SQLite's one writer at a time makes harder than PostgreSQL's row locks). A `figure` (a quality
    or cost figure) runs here, and `make test`'s SQLite pass leaves it out: the same rows give the same
    figure, and this pass, without the browser tests, has the time."""
    kept, left = [], []
    for item in items:
        uses_db = item.get_closest_marker("django_db") is not None or DATABASE_FIXTURES & set(item.fixturenames)
        once = item.get_closest_marker("browser") or item.get_closest_marker("one_database")
        (kept if uses_db and not once else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_unconfigure(config):
    if _redis is not None:
        _redis.stop()
    databases.stop()


@pytest.fixture(scope="session")
def redis_url():
    return _redis.url


@pytest.fixture(scope="session")
def celery_worker_thread(django_db_setup, django_db_blocker):
    """A real Celery worker (threads pool, 2 at a time) consuming from our Redis."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with django_db_blocker.unblock():
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30) as worker:
            session_worker.running = True
            yield worker
            session_worker.running = False


@pytest.fixture
def eager():
    """Celery tasks run inline, in the test's thread: a test steps through the pipeline without a worker."""
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test's websockets get a channel layer of their own. channels_redis keeps one receive lock per
    layer, made in the event loop of its first receive: a consumer whose loop ended while it waited left it
    locked and bound to that loop, and the next test's consumer failed on it (seen on a loaded machine)."""
    from channels.layers import channel_layers

    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def worker_idle_after_test(request):
    """A test on the session-wide worker ends only when the worker has nothing left to do.

    Work a test set going (a parse it did not wait for, a retry's follow-up) would
    otherwise run into the next test, or into the teardown's TRUNCATE of every table
    (a deadlock on PostgreSQL: the worker holds one table and wants the next)."""
    on_worker = "celery_worker_thread" in request.fixturenames
    if on_worker or request.node.get_closest_marker("django_db"):
        # Set up the database first, so it is torn down after the wait.
        request.getfixturevalue("_django_db_helper")
    yield
    # A test that runs no worker still feeds the session's worker once it runs (an upload's extraction):
    # what it left going is waited for too.
    if on_worker or session_worker.busy():
        session_worker.wait_until_idle()
    _no_lease_outlives_its_job(request.node.nodeid)


_holds_at_last_teardown: dict[tuple, str] = {}


def _no_lease_outlives_its_job(test: str) -> None:
    """A lease this process still renews at two teardowns in a row, the worker idle at both, belongs to
    no job: a job ended without giving it back (e.g. a hold inside a hold of its kind), and the renewer
    would renew it for good, into the next test's database. One seen once may be a job that has just
    started (a retry whose time came during the wait)."""
    from workspaces.leases import _renewer

    with _renewer._lock:
        holds = {(job, pk): hold for job, by_pk in _renewer._held.items() for pk, hold in by_pk.items()}
        leaked = {key: hold for key, hold in holds.items() if _holds_at_last_teardown.get(key) == hold}
        for job, pk in leaked:
            del _renewer._held[job][pk]
    _holds_at_last_teardown.clear()
    _holds_at_last_teardown.update({key: hold for key, hold in holds.items() if key not in leaked})
    assert not leaked, f"leases renewed with no job holding them, at {test} or the test before it: {leaked}"


from tests.fake_anthropic import fake_anthropic  # noqa: E402,F401  (fixture)

# --- browser tests -------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = __import__("pathlib").Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def passwords_the_live_server_can_check(request):
    """Users made for a test on the live server are hashed with the product's hashers (the suite's is
    MD5: tests/settings.py), so the server's login form accepts them. Autouse: before `member`."""
    if "live_server_url" not in request.fixturenames:
        yield
        return
    from django.conf import global_settings
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        yield


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker, celery_worker_thread):
    from django.db import connection

    from tests.live_server import LiveServer

    ARTIFACTS.mkdir(exist_ok=True)
    server = LiveServer(databases.database_url(connection.settings_dict), _redis.url, ARTIFACTS / "daphne.log")
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def browser():
    import os

    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the
    # tests make between page actions are still plain synchronous code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def artifacts(request):
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


from tests.fake_embeddings import remote_embeddings  # noqa: E402,F401  (fixture)
from tests.fake_openai import fake_openai  # noqa: E402,F401  (fixture)
from tests.scripted_provider import scripted_llm  # noqa: E402,F401  (fixture)


# What a failed browser test left on screen, in the report CI prints: each open page's address, its
# flash message and the start of its visible text, and the live server's last log lines. A timeout
# alone ("waiting for … to be visible") does not say whether the page navigated, showed an error or
# never answered.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    browser = item.funcargs.get("browser") if report.when == "call" and report.failed else None
    if browser is None:
        return
    lines = []
    for context in browser.contexts:
        for page in context.pages:
            try:
                flash = page.evaluate("document.getElementById('flash')?.textContent || ''")
                text = page.evaluate("(document.body?.innerText || '').slice(0, 1500)")
                lines += [f"page {page.url}", f"  flash: {flash!r}", f"  text: {text!r}"]
            except Exception as error:  # a closed or crashed page says so rather than hiding the rest
                lines.append(f"page {page.url}: {error}")
    server_log = ARTIFACTS / "daphne.log"
    if server_log.exists():
        lines += ["live server log (last 40 lines):", *server_log.read_text(errors="replace").splitlines()[-40:]]
    report.sections.append(("browser state at failure", "\n".join(lines)))
