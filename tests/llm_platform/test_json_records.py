"""llm_platform.json_records: a JSON file's objects and lists said in words, alike in research and digests."""

import json

from digests.envelopes import per_file_envelope
from digests.offline import per_file_digest
from extraction import ExtractionLimits, extract_document
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


def test_text_that_is_no_whole_json_value_is_read_as_sentences():
    assert statements('milestones: [\n  {\n    "name": "Local note storage",') == []  # a value a window cut
    prose = "The plan: {draft} is ready for review by the whole team today."
    assert statements(prose) == [prose]
