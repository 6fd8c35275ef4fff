"""The session chat (SPEC §5, seed 003): answer, or request → supply → continue; SLA; websocket; history."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.db.models.signals import post_save

from bench.chat_quality import FIXTURES
from bench.synthetic_pdf import build_pdf
from config.asgi import application
from conversation_app import services
from conversation_app.artifacts import Artifact, question_passages
from conversation_app.models import ChatMessage, ContextRequest, ContextSupply
from conversation_app.turn_text import plain_sentence
from llm_platform.models import LLMCall
from llm_platform.prose import salutation
from llm_platform.statements import is_statement
from llm_platform.terms import noun_verbs
from tests.context.test_context_websocket import HEADERS
from tests.factories import ContextApi, make_member, wait_until
from tests.research.test_research_runs import SURVEY, VALVES, finished, start
from workspaces.models import ResearchSession

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

UNKNOWN = "How did maintenance staffing change in the workshop?"


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def parsed_session(api, question: str, files: dict[str, bytes]) -> str:
    """A session of `files`, parsed, its digests and library ready."""
    sid = api.create_session(question=question)
    api.upload(sid, files)
    api.parse(sid)
    api.settle(sid)
    return sid


@pytest.fixture
def sid(api):
    files = {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()}
    return parsed_session(api, "Did the valve programme reduce water losses?", files)


def say(api, sid, message, **extra):
    response = api.post("/api/research/conversation", {"session_id": sid, "message": message, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def supply(api, sid, request_id, payloads):
    return api.post(
        "/api/research/conversation/context-supply",
        {"session_id": sid, "request_id": request_id, "payloads": payloads},
        format="json",
    )


def history(api, sid):
    response = api.get(f"/api/research/conversation?session_id={sid}")
    assert response.status_code == 200
    return response.json()


def test_a_question_the_session_covers_is_answered_with_citations(api, sid):
    answer = say(api, sid, "How much did the valve programme cost?")
    assert answer["status"] == "ok", answer
    message = answer["message"]
    assert message["role"] == "assistant" and "1.2 million euros" in message["content"]
    assert "valves.md::S2" in message["citations"]
    assert LLMCall.objects.filter(task="chat_turn").count() == 1
    assert [m["role"] for m in history(api, sid)["messages"]] == ["user", "assistant"]


@pytest.fixture
def operations_sid(api):
    """The valve files and our operations memo and board minutes (tests/fixtures/chat)."""
    files = {name: (FIXTURES / name).read_bytes() for name in ("ops_memo.md", "board_minutes.txt", "valves.md")}
    return parsed_session(api, "How did district 3's operations go?", files)


def test_the_answer_is_the_span_that_answers_the_question_cited(api, operations_sid):
    """Regression (issue 12): the night crew's training time got board-budget sentences, not "about three weeks"."""
    answer = say(api, operations_sid, "How long did it take to train the night crew on valve settings?")
    assert answer["status"] == "ok", answer
    message = answer["message"]
    assert message["content"].startswith("Training the night crew on the new valve settings took about three weeks")
    # That sentence alone, as the span says it (no budget sentences around it).
    assert message["content"] == (
        "Training the night crew on the new valve settings took about three weeks, with one supervised shift "
        "a night (ops_memo.md::S2)."
    )
    assert message["citations"] == ["ops_memo.md::S2"]
    [link] = message["source_links"]  # through provenance: the span of the version it was made from
    assert link["sourceref"] == "ops_memo.md::S2" and link["version"]


def test_a_question_the_files_do_not_answer_is_asked_with_the_best_excerpts_for_it(api, operations_sid):
    """Regression (issue 12): "Who is the mayor of Lakeside?" got an unrelated paragraph; a near miss (the May
    board meeting is there, who chaired it is not) was answered; every card offered the same three excerpts."""
    suggestions = []
    for question in (
        "Who is the mayor of Lakeside?",
        "Who chaired the board meeting in May?",
        "How much did the night crew training cost?",
    ):
        asked = say(api, operations_sid, question)
        assert asked["status"] == "context_required", (question, asked)
        suggestions.append(asked["required"][0]["suggestions"])
        ContextRequest.objects.filter(pk=asked["request_id"]).update(status="expired")  # the next is not queued
    _mayor, minutes, training = suggestions
    assert "Board meeting, 12 May 2023" in minutes[0]["text"] and minutes[0]["sourceref"] == "board_minutes.txt::S1"
    assert "Training the night crew" in training[0]["text"] and training[0]["sourceref"] == "ops_memo.md::S2"
    assert [s["text"] for s in minutes] != [s["text"] for s in training]


def test_a_cards_excerpts_are_statements_shown_without_digest_markers(api):
    """A section that is only a heading ("On-call handbook") was offered as an excerpt, "On-call handbook
    (oncall.html::S1)."; a digest's excerpt showed its "[fact] " marker."""
    handbook = (
        "<html><body><h1>On-call handbook</h1><h2>Rotation</h2><p>Each engineer is on call for one week at a"
        " time.</p><h2>Pay</h2><p>On-call weeks are paid a flat allowance of 400 euros.</p></body></html>"
    )
    sid = parsed_session(api, "How does on-call work?", {"oncall.html": handbook.encode()})
    question = "What is the on-call phone number?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert {p.key for p in passages} == {"passage:oncall.html::S2", "passage:oncall.html::S3"}  # S1: the heading
    asked = say(api, sid, question)
    assert asked["status"] == "context_required", asked
    texts = [s["text"] for s in asked["required"][0]["suggestions"]]
    assert texts and all(is_statement(plain_sentence(text)) for text in texts), texts
    assert not any(text.startswith("[") or "handbook" in text.lower() for text in texts), texts
    assert all(s["sourceref"].startswith("oncall.html::S") for s in asked["required"][0]["suggestions"])


def test_an_agent_noun_answers_its_verb(api):
    """ "Who owns the payments service?" was asked back although a record says "owner Tomás Ruiz": the stemmer
    keeps a short word's "-er" ("owner"), so the question's "owns" was a term no sentence held."""
    inventory = {"services": [{"name": "payments", "owner": "Tomás Ruiz"}, {"name": "search", "owner": "Aiko Sato"}]}
    sid = parsed_session(api, "Who runs what?", {"services.json": json.dumps(inventory).encode()})
    answered = say(api, sid, "Who owns the payments service?")
    assert answered["status"] == "ok", answered
    assert "owner Tomás Ruiz" in answered["message"]["content"], answered
    assert {"own", "use", "edit"} <= noun_verbs(["owner", "user", "editor"]) and not noun_verbs(["her", "or"])


def test_a_json_files_passage_is_its_records_in_words_not_its_keys_and_braces(api):
    """A passage of a JSON file was its span's indented JSON cut into sentences: an answer glued
    '"contact": "j.okoro@harbor.example" } }, { "name": "parking_fines", …' to the record it quoted."""
    usage = {
        "platform": "Brightline",
        "datasets": [
            {"name": "parking_permits", "rows": 1284000, "owner": {"team": "Parking", "contact": "j.okoro@harbor.org"}},
            {"name": "waste_routes", "rows": 5100, "owner": {"team": "Waste", "contact": "l.moreau@harbor.org"}},
        ],
    }
    sid = parsed_session(api, "Who owns the data?", {"usage.json": json.dumps(usage).encode()})
    question = "What is the owner contact of the waste_routes dataset?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    text = "\n".join(p.text for p in passages)
    assert "datasets, item 2: name waste_routes, rows 5100, owner.team Waste, owner.contact l.moreau@harbor.org" in text
    assert "{" not in text and '"' not in text, text
    answered = say(api, sid, question)
    assert answered["status"] == "ok", answered
    assert "l.moreau@harbor.org" in answered["message"]["content"] and "{" not in answered["message"]["content"]


def test_a_json_files_plain_value_is_a_statement_of_its_passage_not_a_heading(api):
    """ "prepared_by: Ines Moreau", a top-level value of a campaign report, read as a heading: it stood in the
    passage's title, no sentence of it, and "Who prepared the campaign report?" quoted a campaign's record."""
    report = {
        "report": "Q3 2026 marketing campaigns",
        "prepared_by": "Ines Moreau",
        "campaigns": [
            {"name": "Close faster webinar", "channel": "Webinar", "spend_usd": 4200, "leads": 310},
            {"name": "CFO roundtable London", "channel": "Event", "spend_usd": 18500, "leads": 45},
        ],
    }
    sid = parsed_session(api, "How did the campaigns do?", {"campaign-results.json": json.dumps(report).encode()})
    question = "Who prepared the campaign report?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert any("prepared_by: Ines Moreau (campaign-results.json::S2)." in p.text.split("\n") for p in passages)
    assert not any("Ines Moreau" in p.title for p in passages), [p.title for p in passages]
    answered = say(api, sid, question)
    assert answered["status"] == "ok" and "Ines Moreau" in answered["message"]["content"], answered


def test_a_json_objects_fields_stand_under_the_name_its_first_field_gives(api):
    """A route's timetable, one JSON object: "Does the X3 run on Sundays?" was asked back, "sunday: runs false,
    note No Sunday service …" naming no X3; its first field, "route: X3", says what every field is about."""
    timetable = {
        "route": "X3",
        "frequency_minutes": 60,
        "sunday": {"runs": False, "note": "No Sunday service until demand is reviewed in June 2027"},
        "stops": ["Northvale Interchange", "Station Road", "Airport Terminal"],
    }
    files = {"timetable.json": json.dumps(timetable).encode(), "rota.md": b"# Rota\n\nDrivers work one Sunday in four."}
    sid = parsed_session(api, "When does the X3 run?", files)
    question = "Does the X3 run on Sundays?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert "timetable.json › route: X3" in [p.title for p in passages], [p.title for p in passages]
    answered = say(api, sid, question)
    assert answered["status"] == "ok" and "No Sunday service" in answered["message"]["content"], answered


def test_a_letters_sentences_stand_under_its_greeting(api):
    """A customer-care reply saved as an e-mail: "How much was refunded to Ms Harper?" was asked back, the
    refund being "your weekly ticket" and her name only in "Dear Ms Harper,", which is no sentence."""
    reply = (
        "From: care@buses.example\nTo: j.harper@example.com\nSubject: Re: Bus did not stop\n"
        "Date: Mon, 23 Nov 2026 10:12:00 +0000\n\nDear Ms Harper,\n\nThank you for telling us about the bus that "
        "did not stop for you.\n\nAs an apology we are refunding your weekly ticket (£18.50) to the card you paid "
        "with.\n\nYours sincerely,\nDana Whitfield\n"
    )
    files = {"reply.txt": reply.encode(), "rota.md": b"# Rota\n\nDrivers work one Sunday in four."}
    sid = parsed_session(api, "What did we tell customers?", files)
    question = "How much was refunded to Ms Harper?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert any(p.title.endswith("› Dear Ms Harper") for p in passages), [p.title for p in passages]
    answered = say(api, sid, question)
    assert answered["status"] == "ok" and "£18.50" in answered["message"]["content"], answered
    assert say(api, sid, "How much was refunded to Mr Jones?")["status"] == "context_required"
    assert salutation("Hi team,") == "Hi team" and salutation("Dear all, the meeting moves to Friday.") == ""


def test_a_pdf_pages_numbered_sections_are_spans_and_passages_of_their_own(api):
    """An SOP exported to PDF was one span a page: a citation opened the whole page, and "What are the risks
    at the gate?" read every sentence of the page as standing under "page 1"."""
    sop = build_pdf(
        [
            [
                "Standard operating procedure WH-04",
                "1. Receiving",
                "Deliveries are accepted between 06:00 and 14:00 on weekdays.",
                "A delivery without a booking reference is refused at the gate.",
                "2. Gate risks",
                "Drivers sometimes arrive after the cut-off and block the yard.",
                "Unbooked trailers queue on the public road outside the gate.",
            ]
        ]
    )
    sid = parsed_session(api, "How does receiving work?", {"sop.pdf": sop})
    preview = api.get(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'sop.pdf')}/preview").json()
    assert [(s["locator"], s["text"].split("\n")[0]) for s in preview["spans"]] == [
        ("p. 1", "Standard operating procedure WH-04"),
        ("p. 1", "1. Receiving"),
        ("p. 1", "2. Gate risks"),
    ]
    question = "What are the gate risks?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert {p.key: p.title for p in passages}["passage:sop.pdf::S3"] == "sop.pdf › page 1 › 2. Gate risks"
    answered = say(api, sid, question)
    assert answered["status"] == "ok", answered
    content = answered["message"]["content"]
    assert "block the yard" in content and "public road" in content and "06:00" not in content, content


def test_a_pdf_pages_sections_under_headings_set_larger_are_passages_of_their_own(api):
    """A grant summary printed to PDF heads its sections in a larger font, unnumbered: the page was one
    passage under its title, so "What are the risks to the grant?" found no section about risks."""
    import weasyprint

    html = (
        '<html><head><meta charset="utf-8"><style>body {font-family: DejaVu Sans; font-size: 10.5pt}</style>'
        "</head><body><h1>Regeneration Atlas: grant summary</h1>"
        "<p>The award runs for five years from 1 April 2026 and is worth 2.4 million pounds.</p>"
        "<h2>Timeline</h2><p>Year one builds the sequencing pipeline. Years two and three sample the tissue.</p>"
        "<h2>Risks</h2><p>Recruiting a second postdoc may take longer than planned.</p>"
        "<p>The mouse work depends on a licence amendment that is not yet approved.</p></body></html>"
    )
    sid = parsed_session(api, "What does the grant fund?", {"grant.pdf": weasyprint.HTML(string=html).write_pdf()})
    question = "What are the risks to the grant?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    assert "grant.pdf › page 1 › Risks" in [p.title for p in passages], [p.title for p in passages]
    answered = say(api, sid, question)
    assert answered["status"] == "ok", answered
    content = answered["message"]["content"]
    assert "second postdoc" in content and "licence amendment" in content, content
    assert "sequencing pipeline" not in content and "2.4 million" not in content, content


def test_a_card_never_offers_a_sentence_another_excerpt_already_says():
    """A report's summary line holds the passage's sentence it was made from: the card offered both."""
    moved = "We agreed to move the payments database to the managed service in January 2027"
    artifacts = [
        Artifact(key="report:r1", title="Report", text=f"{moved}. The managed service costs 1,900 euros a month."),
        Artifact(key="passage:minutes.docx::S2", title="minutes.docx", text=f"{moved} (minutes.docx::S2)."),
    ]
    suggestions = services._suggestions("What is our budget for 2027?", artifacts, {})
    assert len(suggestions) == 1 and moved in suggestions[0]["text"], suggestions


def test_a_tables_row_is_quoted_as_a_record_under_its_header(api):
    """A web page's (or a DOCX's) table reached the chat as rows of bare cells ("Write the storage design |
    Sam Okafor | 20 November 2026"), which say neither what each cell is nor that Sam owns the action."""
    plan = (
        "<html><body><h1>Beta plan</h1><p>The beta starts in January 2027 with twenty customers.</p>"
        "<table><tr><th>Action</th><th>Owner</th><th>Due</th></tr>"
        "<tr><td>Write the storage design</td><td>Sam Okafor</td><td>20 November 2026</td></tr>"
        "<tr><td>Recruit the beta customers</td><td>Priya Raman</td><td>15 January 2027</td></tr>"
        "</table></body></html>"
    )
    sid = parsed_session(api, "Who does what before the beta?", {"plan.html": plan.encode()})
    question = "Who is the owner of the storage design?"
    passages = question_passages(ResearchSession.objects.get(pk=sid), [question])
    record = "Action: Write the storage design; Owner: Sam Okafor; Due: 20 November 2026 (plan.html::S1)."
    assert record in passages[0].text.split("\n"), passages
    answered = say(api, sid, question)
    assert answered["status"] == "ok", answered
    reply = answered["message"]
    assert "Action: Write the storage design; Owner: Sam Okafor; Due: 20 November 2026" in reply["content"], reply
    assert "|" not in reply["content"] and reply["citations"] == ["plan.html::S1"]
    # A card's excerpts from the table are records too.
    asked = say(api, sid, "What budget does the storage design have?")
    assert asked["status"] == "context_required", asked
    texts = [suggestion["text"] for suggestion in asked["required"][0]["suggestions"]]
    assert any(text.startswith("Action: Write the storage design; Owner: Sam Okafor") for text in texts), texts
    assert not any("|" in text for text in texts), texts


def test_a_missing_context_becomes_a_request_card_then_the_supply_resumes_the_turn(api, sid):
    asked = say(api, sid, UNKNOWN)
    assert asked["status"] == "context_required", asked
    assert asked["required"][0]["kind"] == "note" and "maintenance" in asked["required"][0]["description"]
    request = ContextRequest.objects.get(pk=asked["request_id"])
    assert request.status == "open" and request.message.status == "waiting_context"

    note = "The workshop went from 6 to 4 maintenance staff in 2022 after the valve programme."
    response = supply(api, sid, asked["request_id"], [{"slot": "s1", "kind": "note", "text": note}])
    assert response.status_code == 200 and response.json()["status"] == "resolved", response.content
    reply = wait_until(
        lambda: ChatMessage.objects.filter(reply_to_id=asked["user_message_id"]).first(), message="the deferred answer"
    )
    assert "6 to 4 maintenance staff" in reply.content
    supplied = ContextSupply.objects.get(request=request)
    assert reply.citations == [f"supply:{supplied.pk}"]
    assert supplied.supplied_by == api.user and supplied.provenance["via"] == "api"
    # History reloads with its request and supply.
    reloaded = history(api, sid)
    assert reloaded["context_requests"][0]["status"] == "resolved"
    assert reloaded["context_requests"][0]["supplies"][0]["payload"]["text"] == note


def test_supplies_are_validated(api, sid):
    asked = say(api, sid, UNKNOWN)
    rid = asked["request_id"]
    for payloads, status, message in (
        ([], 400, "non-empty list"),
        ([{"slot": "s9", "kind": "note", "text": "x"}], 400, "unknown slot"),
        ([{"slot": "s1", "kind": "poem", "text": "x"}], 400, "kind must be one of"),
        ([{"slot": "s1", "kind": "note", "text": "  "}], 400, "needs its text"),
        ([{"slot": "s1", "kind": "note", "text": "x" * 20_001}], 400, "at most 20000"),
        ([{"slot": "s1", "kind": "file", "file_id": "not-a-uuid"}], 400, "file_id must name a file"),
    ):
        response = supply(api, sid, rid, payloads)
        assert response.status_code == status and message in response.json()["error"], response.content
    assert supply(api, sid, "00000000-0000-0000-0000-000000000000", [{"slot": "s1", "kind": "skip"}]).status_code == 404
    stranger = ContextApi(make_member()[0])
    assert supply(stranger, sid, rid, [{"slot": "s1", "kind": "skip"}]).status_code == 404
    assert (
        stranger.post("/api/research/conversation", {"session_id": sid, "message": "hi"}, format="json").status_code
        == 404
    )
    assert ContextSupply.objects.count() == 0


def test_skipping_every_slot_answers_without_it_and_says_so(api, sid):
    asked = say(api, sid, UNKNOWN)
    assert supply(api, sid, asked["request_id"], [{"slot": "s1", "kind": "skip"}]).json()["status"] == "resolved"
    reply = wait_until(lambda: ChatMessage.objects.filter(reply_to_id=asked["user_message_id"]).first())
    assert reply.warning == "Answered without the requested context: every item was skipped."
    assert "nothing about" in reply.content or "say nothing" in reply.content, reply.content


def test_force_answers_at_once_without_asking(api, sid):
    answer = say(api, sid, UNKNOWN, force=True)
    assert answer["status"] == "ok" and ContextRequest.objects.count() == 0


def test_a_message_sent_while_a_request_is_open_is_answered_at_once_and_the_card_still_waits(api, sid):
    asked = say(api, sid, UNKNOWN)
    answered = say(api, sid, "How much did the valve programme cost?")
    assert answered["status"] == "ok" and "1.2 million euros" in answered["message"]["content"]
    request = ContextRequest.objects.get(pk=asked["request_id"])
    assert request.status == "open" and request.message.status == "waiting_context"
    supply(api, sid, asked["request_id"], [{"slot": "s1", "kind": "note", "text": "Staff fell from 6 to 4 in 2022."}])
    later = wait_until(lambda: ChatMessage.objects.filter(reply_to_id=asked["user_message_id"]).first())
    assert "Staff fell from 6 to 4" in later.content


def test_a_card_supplied_the_moment_it_can_be_read_resumes_its_question(api, sid, eager):
    """A page reloads the history while the question's turn still runs in its request, so it can show the
    card, and a person supply it, as soon as the card is committed. The question must be waiting by then:
    its status was saved after the card's commit, the resumed turn found it "thinking" and did nothing,
    and the question then waited on a resolved card for ever."""
    supplied = []

    def supply_once_readable(sender, instance, created, **kwargs):
        if not created:
            return
        note = [{"slot": "s1", "kind": "note", "text": "The workshop went from 6 to 4 maintenance staff in 2022."}]
        session, user = instance.conversation.session, instance.message.author
        # eager: the resumed turn runs inside supply_context, right after the card's commit
        transaction.on_commit(lambda: supplied.append(services.supply_context(session, user, instance.pk, note)))

    post_save.connect(supply_once_readable, sender=ContextRequest, weak=False)
    try:
        asked = say(api, sid, UNKNOWN)
    finally:
        post_save.disconnect(supply_once_readable, sender=ContextRequest)
    assert asked["status"] == "context_required" and supplied[0]["status"] == "resolved", (asked, supplied)
    question = ChatMessage.objects.get(pk=asked["user_message_id"])
    assert question.status == "answered"
    assert "6 to 4 maintenance staff" in ChatMessage.objects.get(reply_to=question).content


def test_the_sla_reminds_then_answers_without_the_context(api, sid, settings):
    settings.GROUNDWORK_CONTEXT_REQUEST_SECONDS = 1.0

    async def watch_the_card():
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/conversation/?token={api.token}", headers=HEADERS
        )
        assert (await communicator.connect(timeout=10))[0]
        asked = await sync_to_async(say)(api, sid, UNKNOWN)
        events = []
        while not events or events[-1]["type"] != "conversation:message" or events[-1]["message"]["role"] == "user":
            events.append(await communicator.receive_json_from(timeout=30))
        await communicator.disconnect()
        return asked, events

    asked, events = async_to_sync(watch_the_card)()
    request = ContextRequest.objects.get(pk=asked["request_id"])
    assert request.status == "expired" and request.reminded_at is not None
    # Half way to the deadline the open card is pushed again as a reminder, then expires and is answered.
    card = [(e["type"], e.get("reminder"), e["request"]["status"]) for e in events if "request" in e]
    assert card == [
        ("conversation:context_request", None, "open"),
        ("conversation:context_update", True, "open"),
        ("conversation:context_resolved", None, "expired"),
    ]
    reminder = next(e["request"] for e in events if e.get("reminder"))
    assert reminder["request_id"] == str(request.pk) and reminder["reminded"] is True  # the card says "reminder sent"
    reply = events[-1]["message"]
    assert reply["reply_to"] == asked["user_message_id"]
    assert reply["warning"].startswith("Answered without the requested context: nobody supplied it within")
    assert supply(api, sid, request.pk, [{"slot": "s1", "kind": "skip"}]).status_code == 409


def test_what_the_session_holds_is_supplied_by_the_system(api, sid, scripted_llm):
    """The model asks for an anchor the session has: no card for a person, the turn goes on."""
    from conversation_app.offline.turn import chat_turn

    asked_once = []

    def needs_the_aggregate_first(prompt):
        if not asked_once:
            asked_once.append(1)
            return {
                "answer": "",
                "citations": [],
                "needs": [{"kind": "snippet", "description": "the digest", "anchor": "digest:aggregate"}],
            }
        return chat_turn(prompt)

    scripted_llm.handlers["CHAT_TURN"] = needs_the_aggregate_first
    answer = say(api, sid, "How much did the valve programme cost?")
    assert answer["status"] == "ok", answer
    request = ContextRequest.objects.get()
    assert request.status == "resolved"
    auto = ContextSupply.objects.get(request=request)
    assert auto.kind == "auto" and auto.provenance == {**auto.provenance, "via": "system", "from": "digest:aggregate"}
    assert "1.2 million euros" in auto.payload["text"]


def test_the_prompt_carries_the_baseline_sheet_and_the_sessions_index(api, sid, scripted_llm):
    rid = start(api, sid, max_depth=0)
    finished(api, rid)
    say(api, sid, "Thanks for the overview.", force=True)
    say(api, sid, "How much did the valve programme cost?")
    prompt = [r for r in scripted_llm.requests if r.task == "chat_turn"][-1].prompt
    # Seed 003 §4.1.5's order, as the prompt sheet writes it, in the prompt the model got.
    order = [
        "## Latest user input\nHow much did the valve programme cost?",
        "## Chat history\nuser: Thanks for the overview.",
        "## Style",
        "## About this session",
        "## Research goal\nDid the valve programme reduce water losses?",
        "## Research so far\nReport “",
        "## Supplied context attachments",
    ]
    missing = [section for section in order if section not in prompt]
    assert not missing, (missing, prompt.rpartition("=== TASK ===")[2])
    positions = [prompt.index(section) for section in order]
    assert positions == sorted(positions)
    # The Context Index names everything the session holds, each under its citable key.
    index = prompt.split("=== CONTENT ===")[0]
    for key in ("[digest:aggregate]", "[digest:valves.md]", "[digest:survey.txt]", f"[report:{rid}]"):
        assert key in index, key


def test_the_websocket_narrates_request_update_resolution_and_answer(api, sid):
    def connect(token):
        return WebsocketCommunicator(application, f"/ws/sessions/{sid}/conversation/?token={token}", headers=HEADERS)

    async def scenario():
        communicator = connect(api.token)
        assert (await communicator.connect(timeout=10))[0]
        asked = await sync_to_async(say)(api, sid, UNKNOWN)
        note = [{"slot": "s1", "kind": "note", "text": "Staff fell from 6 to 4 in 2022."}]
        await sync_to_async(supply)(api, sid, asked["request_id"], note)
        seen = []
        while True:
            event = await communicator.receive_json_from(timeout=20)
            seen.append(event["type"])
            if event["type"] == "conversation:message" and event["message"]["role"] == "assistant":
                await communicator.disconnect()
                return seen, event

    seen, answer = async_to_sync(scenario)()
    streamed = seen.count("conversation:delta")  # the deferred answer, as it is written
    assert streamed and seen == [
        "conversation:message",
        "conversation:context_request",
        "conversation:context_update",
        "conversation:context_resolved",
        *["conversation:delta"] * streamed,
        "conversation:message",
    ]
    assert "6 to 4" in answer["message"]["content"]

    async def stranger_connects():
        stranger = await sync_to_async(lambda: ContextApi(make_member()[0]))()
        communicator = connect(stranger.token)
        connected, _ = await communicator.connect(timeout=10)
        # Disconnect even when refused, or the consumer task outlives the event loop that must cancel it.
        await communicator.disconnect()
        return connected

    assert async_to_sync(stranger_connects)() is False


def test_the_answer_is_streamed_as_deltas_then_the_final_message(api, sid):
    async def scenario():
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/conversation/?token={api.token}", headers=HEADERS
        )
        assert (await communicator.connect(timeout=10))[0]
        asked = await sync_to_async(say)(api, sid, "What happened to water losses after the valve replacement?")
        events = []
        while not events or events[-1]["type"] != "conversation:message" or events[-1]["message"]["role"] == "user":
            events.append(await communicator.receive_json_from(timeout=20))
        await communicator.disconnect()
        return asked, events

    asked, events = async_to_sync(scenario)()
    assert asked["status"] == "ok", asked
    deltas = [e for e in events if e["type"] == "conversation:delta"]
    # The question, the answer's deltas, then the answer: nothing in between, nothing after.
    expected = ["conversation:message", *["conversation:delta"] * len(deltas), "conversation:message"]
    assert [e["type"] for e in events] == expected
    assert deltas, "the answer is pushed while it is written, before it is stored"
    assert {e["user_message_id"] for e in deltas} == {asked["user_message_id"]}
    streamed = ""
    for delta in deltas:
        assert delta["offset"] == len(streamed)
        streamed += delta["delta"]
    final = events[-1]["message"]
    assert final["reply_to"] == asked["user_message_id"] and final["citations"]
    assert streamed == final["content"]


def test_a_chat_turn_goes_through_the_anthropic_sdk_to_the_fake_api(fake_anthropic, api, sid):
    from llm_platform.task_envelope import task_name
    from tests.fake_anthropic import text_of

    answer = say(api, sid, "How much did the valve programme cost?")
    assert answer["status"] == "ok" and "1.2 million euros" in answer["message"]["content"]
    call = LLMCall.objects.get(task="chat_turn")
    assert (call.provider, call.model) == ("anthropic", "claude-test-model")
    asked = [task_name(text_of(r["body"]["messages"][0]["content"])) for r in fake_anthropic.message_requests()]
    assert asked.count("CHAT_TURN") == 1
    assert fake_anthropic.streamed == 1, "the chat turn is streamed (the digests are not)"
    assert set(LLMCall.objects.values_list("provider", flat=True)) == {"anthropic"}, "nothing went offline"


def test_the_prompt_sheet_sends_the_message_verbatim_and_not_its_comment(api, sid, scripted_llm):
    """Regression: the sheet was rendered with autoescape on (R&amp;D, &lt;5%, &quot;valve&quot;, O&#x27;Brien&#x27;s)
    and its multi-line {# #} comment, which Django's template language does not know, was sent as text."""
    message = """Did R&D spend <5% of the "valve" budget on O'Brien's pumps?"""
    say(api, sid, message, force=True)
    prompt = [r for r in scripted_llm.requests if r.task == "chat_turn"][-1].prompt
    assert f"## Latest user input\n{message}\n" in prompt, prompt.rpartition("=== TASK ===")[2]
    for escaped in ("&amp;", "&lt;", "&gt;", "&quot;", "&#x27;", "&#39;"):
        assert escaped not in prompt, escaped
    assert history(api, sid)["messages"][0]["content"] == message
    task = prompt.rpartition("=== TASK ===")[2]
    assert "{#" not in task and "#}" not in task
    assert "baseline inclusions" not in task and "no code change needed" not in task, "the sheet's comment was sent"


def test_with_a_model_the_chat_also_searches_with_the_queries_it_writes(api, fake_openai):
    sid = api.create_session(question="Access to the build server")
    api.upload(
        sid,
        {
            "access.md": b"# Server access\n\nAppend the public half to ~/.ssh/authorized_keys on the build server.\n",
            "desk.md": b"# Front desk\n\nA colleague who visits must sign in at the front desk; put badges back.\n",
        },
    )
    api.extracted(sid)
    fake_openai.texts = ['{"queries": ["authorized_keys public half", "build server access"]}']

    say(api, sid, "Where do I add a colleague's credential so they can sign in as me?")

    tasks = list(LLMCall.objects.order_by("created_at").values_list("task", flat=True))
    assert tasks[:2] == ["node_queries", "chat_turn"]
    chat_turn = fake_openai.requests[-1]["body"]["messages"]
    sent = " ".join(str(m["content"]) for m in chat_turn)
    # The question's own words find the front desk's page; the written queries find the server's.
    assert "[passage:desk.md::S1]" in sent and "[passage:access.md::S1]" in sent


def test_offline_the_chat_searches_with_the_question_alone(api, sid):
    say(api, sid, "How much did the valve programme cost?")
    assert not LLMCall.objects.filter(task="node_queries").exists()
