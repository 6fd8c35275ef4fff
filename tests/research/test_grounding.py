"""The grounding check: a cited text must support what is said, or the citation (and an unsupported
paragraph or finding) is dropped and recorded, never shown."""

import json
from pathlib import Path

import pytest

from llm_platform import grounding
from research_app.runs.evidence import cited_findings
from research_app.runs.report import checked_report
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import SURVEY, VALVES, finished, session_with_files, start

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "grounding" / "labelled.json"
LOSSES = "After the replacement, water losses in district 3 fell by 18 percent."
COST = "The programme cost 1.2 million euros, paid from the 2021 network budget."
FINDUTILS = "This is a change from previous versions of findutils."


def test_the_threshold_separates_the_labelled_examples():
    examples = json.loads(LABELLED.read_text(encoding="utf-8"))["examples"]
    predicted = [grounding.supports(e["statement"], e["text"]) for e in examples]
    labels = [e["supported"] for e in examples]
    true_positives = sum(p and t for p, t in zip(predicted, labels, strict=True))
    assert true_positives / max(sum(predicted), 1) >= 0.95, "precision: a shown citation must support its claim"
    assert true_positives / sum(labels) >= 0.9, "recall: supported claims keep their citations"
    assert sum(labels) >= 20 and len(labels) - sum(labels) >= 15, "both kinds are well represented"


def test_every_figure_must_occur_in_the_cited_text():
    assert grounding.supports("Water losses fell by 18 percent.", LOSSES)
    assert not grounding.supports("Water losses fell by 25 percent.", LOSSES)
    assert grounding.support("Water losses fell by 25 percent.", LOSSES).missing_figures == ("25",)
    assert grounding.supports("Savings reached EUR 310,000.", "Savings reached EUR 310 000 a year.")
    assert grounding.supports("Water losses fell by 18 percent [3].", LOSSES), "citation marks are not words"
    # A number written as a word is a figure: a claim of "six months" is no longer supported by "three months".
    checked = "The valves are checked every six months by Hydrotec."
    assert grounding.supports(checked, "Hydrotec has the valves checked every six months.")
    assert grounding.supports(checked, "Hydrotec has the valves checked every 6 months.")
    assert grounding.support(checked, "Hydrotec has the valves checked every three months.").missing_figures == ("6",)
    assert grounding.supports("No one checked the valves.", "The valves were not checked."), "'one' is no count"


def test_a_tables_row_is_supported_only_by_a_text_that_holds_it_whole():
    row = "vendor: HP; model: ProBook Fortis 14; unit_price_eur: {}"
    now = f"{row.format(689)}\nvendor: Acer; model: TravelMate B3; unit_price_eur: 598"
    assert grounding.supporting(f"{row.format(689)} [4]", {"S2": now}) == (["S2"], [])
    # One of its fields ("model: ProBook Fortis 14") is no support of the row whose price changed.
    assert grounding.supporting(f"{row.format(715)} [4]", {"S2": now}) == ([], ["S2"])
    # Beside a sentence of another source, the row is still checked whole, and each keeps its own citation.
    award = "The board approved a grant of 180,000 pounds to Tyneside Food Network."
    beside = f"{row.format(689)} (sheet.csv::S2). {award} (minutes.docx::S5)."
    assert grounding.supporting(beside, {"S2": now, "S5": award}) == (["S2", "S5"], [])
    assert grounding.supporting(beside.replace("689", "715", 1), {"S2": now, "S5": award}) == (["S5"], ["S2"])
    # Two rows quoted one after the other, each with its citation, are two statements: a row starts with its
    # first column's name, in lower case, and still starts a sentence after a citation's stop.
    other = "vendor: Acer; model: TravelMate B3; unit_price_eur: 598"
    two_rows = f"{row.format(689)} (sheet.csv::S2). {other} (sheet.csv::S3)."
    assert grounding.supporting(two_rows, {"S2": now, "S3": other}) == (["S2", "S3"], [])
    assert grounding.supporting(two_rows, {"S2": row.format(715), "S3": other}) == (["S3"], ["S2"])
    # A sentence's clauses still vouch for the two sources it weaves.
    woven = "Losses fell by 18 percent; the valves were replaced in May."
    assert grounding.supporting(woven, {"a": LOSSES, "b": "The valves were replaced in May."})[0] == ["a", "b"]


def test_marks_of_dropped_citations_leave_the_text():
    assert (
        grounding.keeping_marks("Losses fell [1, 3]. Costs rose [3]. See [12].", {1})
        == "Losses fell [1]. Costs rose. See."
    )


def test_a_report_paragraph_citing_unrelated_text_is_dropped_and_recorded():
    output = {
        "title": "Valves",
        "summary": "s",
        "open_questions": [],
        "sections": [
            {
                "heading": "Effect",
                "paragraphs": [
                    {"text": "Water losses in district 3 fell by 18 percent [1].", "citations": [1], "sources": []},
                    {"text": f"{FINDUTILS} [2]", "citations": [2], "sources": []},
                    {"text": "The programme cost 1.2 million euros [2] [1].", "citations": [2, 1], "sources": []},
                    {"text": "Costs were 1.2 million euros.", "citations": [], "sources": ["valves.md::S4"]},
                    {"text": "Households were happier.", "citations": [], "sources": ["valves.md::S2"]},
                ],
            },
            {"heading": "Invented", "paragraphs": [{"text": FINDUTILS, "citations": [7], "sources": []}]},
        ],
    }
    spans = {"valves.md::S4": COST, "valves.md::S2": LOSSES}
    report, dropped = checked_report(output, {1: LOSSES, 2: COST}, spans)

    shown = [p for section in report["sections"] for p in section["paragraphs"]]
    assert [p["text"] for p in shown] == [
        "Water losses in district 3 fell by 18 percent [1].",
        "The programme cost 1.2 million euros [2].",
        "Costs were 1.2 million euros.",
    ]
    assert [(p["citations"], p["sources"]) for p in shown] == [([1], []), ([2], []), ([], ["valves.md::S4"])]
    assert FINDUTILS not in json.dumps(report) and "happier" not in json.dumps(report)
    assert [s["heading"] for s in report["sections"]] == ["Effect"], "a section left empty goes"
    assert "citation [2] in “Effect”: its text does not support the paragraph" in dropped
    assert "citation [1] in “Effect”: its text does not support the paragraph" in dropped
    assert "citation [7] in “Invented”: no such reference" in dropped
    assert sum("dropped, no cited text supports it" in d for d in dropped) == 3


def test_a_finding_keeps_only_citations_whose_result_supports_it():
    results = [{"n": 1, "text": LOSSES, "title": "a"}, {"n": 2, "text": COST, "title": "b"}]
    findings = [
        {"text": "Losses fell by 18 percent [1] [2].", "citations": [1, 2]},
        {"text": f"{FINDUTILS} [2]", "citations": [2]},
        {"text": "Costs were 1.2 million euros [9].", "citations": [9]},
    ]
    assert cited_findings(findings, results) == [
        {"text": "Losses fell by 18 percent [1].", "citations": [1], "source_links": []}
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
def test_a_model_report_citing_unrelated_spans_is_never_shown(fake_anthropic):
    """The model's report adds a paragraph about findutils citing the first reference and a user file span."""

    def invent(report):
        report["sections"].append(
            {
                "heading": "Background",
                "paragraphs": [{"text": FINDUTILS, "citations": [1], "sources": ["valves.md::S2"]}],
            }
        )
        return report

    fake_anthropic.script(("rewrite", "REPORT", invent))
    api = ContextApi(make_member()[0])
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    run = finished(api, start(api, sid, max_depth=1))
    assert run["status"] == "completed", run
    report = api.get(f"/api/runs/{run['run_id']}/report").json()["report"]
    assert FINDUTILS not in json.dumps(report)
    assert "paragraph 1 in “Background” dropped, no cited text supports it" in report["dropped"], report["dropped"]
    assert report["sections"], "the supported paragraphs stay"
