"""The session page as the server renders it (issue 23): milliseconds until its HTML is written, for a
session with 100 files, 3 finished runs and a 40-message chat.

    make bench            # or: .venv/bin/python bench/page_bench.py

Everything is made the way a team makes it, in a throwaway SQLite database (Celery eager, the offline
provider, embeddings off: they change nothing the page shows): 100 small Markdown files uploaded,
extracted and digested; three research runs explored and reported; twenty chat questions answered or
asked about. Then GET /sessions/{sid}/ through Django's whole stack (middleware, session auth, the
selectors, the templates) 50 times: p50 and p95, the number of database queries (the same whatever
the list sizes: no N+1), and the HTML's size. Goal: p95 ≤ 200 ms. Also checks that the HTML holds
what a reader without JavaScript needs: every file's row, the chat's messages.
Prints a table; writes bench/results/page.json.
"""

import os
import statistics
import time

os.environ["GROUNDWORK_EMBEDDINGS"] = "off"

import harness  # noqa: I001,E402  (sets Django up before the project's imports)

harness.setup_django()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from context_app import services as context_services  # noqa: E402
from conversation_app import services as chat_services  # noqa: E402
from conversation_app.models import ChatMessage  # noqa: E402
from research_app.models import ResearchRun  # noqa: E402
from research_app.runs.engine import start_run  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

FILES = 100
RUNS = 3
CHAT_QUESTIONS = 20
REPEAT = 50
GOAL_P95_MS = 200
TOPICS = ["valves", "pumps", "meters", "pipes", "pressure", "staffing", "training", "budget", "complaints", "billing"]


def file_text(n: int) -> bytes:
    topic = TOPICS[n % len(TOPICS)]
    return (
        f"# {topic.title()} note {n}\n\n"
        f"The {topic} programme of zone {n} changed {n + 3} installations in {2019 + n % 5}.\n\n"
        f"After the work, losses in zone {n} fell by {5 + n % 20} percent and {n % 7 + 1} complaints remained.\n"
    ).encode()


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Page bench", question="What did the zone programmes change?")
    uploads = [context_services.Upload(f"zone-{n:03d}.md", file_text(n)) for n in range(FILES)]
    context_services.upload_files(session.context_set, uploads)
    context_services.request_parse(session.context_set)
    for question in ("What did the valve programmes change?", "What happened to losses?", "Who complained?"):
        start_run(session, user, question=question, limits={"max_depth": 1, "max_children": 2, "max_nodes": 3})
    for n in range(CHAT_QUESTIONS):
        topic = TOPICS[n % len(TOPICS)]
        chat_services.post_message(session, user, f"How much did the {topic} work in zone {n} change?", force=True)
    runs = ResearchRun.objects.filter(session=session, status=ResearchRun.Status.COMPLETED).count()
    messages = ChatMessage.objects.filter(conversation__session=session).count()

    client = Client()
    client.force_login(user)
    path = f"/sessions/{session.pk}/"

    def get():
        response = client.get(path, secure=True)  # DEBUG off: the settings redirect plain HTTP
        assert response.status_code == 200, response.status_code
        return response

    html = get().content.decode()  # warm: templates compiled, caches filled
    queries = []
    with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
        get()
    timings = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        get()
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    figures = {
        "files": FILES,
        "runs_completed": runs,
        "chat_messages": messages,
        "html_kilobytes": round(len(html.encode()) / 1024, 1),
        "queries": len(queries),
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(p95, 1),
        "goal_p95_ms": GOAL_P95_MS,
        "within_goal": p95 <= GOAL_P95_MS,
        "every_file_row_in_html": html.count('<tr id="file-') == FILES,
        "every_chat_message_in_html": html.count('id="message-') == messages,
    }
    harness.write_results("page", figures)


if __name__ == "__main__":
    main()
