"""llm_platform.json_records: a JSON file's objects and lists said in words, alike in research and digests."""

import json

from digests.envelopes import per_file_envelope
from digests.offline import per_file_digest
from extraction import ExtractionLimits, extract_document
from llm_platform.json_records import said_records
from llm_platform.statements import statements

PLAN = {
    "feature": "Offline mode",
    "milestones": [
        {"name": "Local note storage", "due": "2027-01-15", "engineers": 2},
        {"name": "Photo queue", "due": "2027-02-12", "engineers": 2, "owner": {"team": "Mobile"}},
    ],
    "budget": {"engineering_weeks": 26, "contractor_usd": 18000},
    "platforms": ["iOS", "Android"],
}


def _spans() -> list[dict]:
    data = json.dumps(PLAN, indent=2).encode()
    document = extract_document(data, "plan.json", "application/json", ExtractionLimits.from_settings())
    return [span.as_dict() for span in document.spans]


def test_a_json_files_records_are_statements_said_in_words_never_lines_of_braces():
    text = "\n\n".join(span["text"] for span in _spans())  # a library record joins its spans so
    said = statements(text)
    assert said == [
        "milestones, item 1: name Local note storage, due 2027-01-15, engineers 2.",
        "milestones, item 2: name Photo queue, due 2027-02-12, engineers 2, owner.team Mobile.",
        "budget: engineering_weeks 26, contractor_usd 18000.",
        "platforms: iOS, Android.",
    ]
    assert not any("{" in sentence or '"' in sentence for sentence in said)


def test_research_and_the_digest_say_a_record_alike():
    spans = _spans()
    digest = per_file_digest(per_file_envelope("plan.json", "json", spans))
    claims = {fact["claim"] for fact in digest["facts"]}
    assert set(statements("\n\n".join(span["text"] for span in spans))) <= claims


def test_a_top_level_lists_records_are_said_as_the_digest_says_them_not_by_their_path():
    macros = [{"name": "Refund confirmed", "trigger": "refund_done"}, {"name": "Spam folder", "trigger": "spam"}]
    data = json.dumps(macros).encode()
    spans = [s.as_dict() for s in extract_document(data, "macros.json", None, ExtractionLimits.from_settings()).spans]
    said = statements("\n\n".join(span["text"] for span in spans))
    assert said == [
        "Record 1: name Refund confirmed, trigger refund_done.",
        "Record 2: name Spam folder, trigger spam.",
    ]
    digest = per_file_digest(per_file_envelope("macros.json", "json", spans))
    assert set(said) <= {fact["claim"] for fact in digest["facts"]}, (said, digest["facts"])


def test_text_that_is_no_whole_json_value_is_read_as_sentences():
    assert statements('milestones: [\n  {\n    "name": "Local note storage",') == []  # a value a window cut
    prose = "The plan: {draft} is ready for review by the whole team today."
    assert statements(prose) == [prose]


def test_a_record_whose_last_value_ends_a_sentence_is_closed_once():
    """An RFI log's answer "… as drawing S-210 rev C." was said "… rev C..", in digests and reports alike."""
    rfis = [{"id": "RFI-031", "answer": "Use a lap length of 50 bar diameters."}, {"id": "RFI-032", "status": "open"}]
    said = statements("rfis: " + json.dumps(rfis))
    assert said == [
        "rfis, item 1: id RFI-031, answer Use a lap length of 50 bar diameters.",
        "rfis, item 2: id RFI-032, status open.",
    ]


def test_a_record_one_line_cannot_say_whole_is_said_object_by_object():
    """An API description's paths: one line of at most twelve fields, four levels deep, left out its parameters
    and every response ("429: Rate limit exceeded"). Such a record is said an object a line, under its path; a
    small one is still one line."""
    paths = {
        "/invoices": {
            "get": {"summary": "List invoices", "parameters": [{"name": "cursor", "in": "query"}]},
            "post": {
                "summary": "Create an invoice",
                "responses": {"201": {"description": "The draft."}, "429": {"description": "Rate limit exceeded."}},
            },
        }
    }
    assert said_records("paths: " + json.dumps(paths, indent=2)) == [
        "paths./invoices.get: summary List invoices.",
        "paths./invoices.get.parameters, item 1: name cursor, in query.",
        "paths./invoices.post: summary Create an invoice, responses.201.description The draft., "
        "responses.429.description Rate limit exceeded.",
    ]
    school = {"name": "North High", "laptops": {"count": 760, "faulty": 95}}
    assert said_records("school: " + json.dumps(school)) == [
        "school: name North High, laptops.count 760, laptops.faulty 95."
    ]
