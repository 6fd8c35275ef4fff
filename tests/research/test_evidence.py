"""research_app.runs.evidence: a finding's citation opens the span of its result's record that holds it."""

from context_app.library import RECORD_MAX_CHARS
from research_app.runs.evidence import link_opening, pinpointed, result_json
from research_app.search.providers import SearchResult

VERSION = "7c0a4f4e-2f9e-4c59-9a43-5b1e1c2a9d10"
SPANS = [
    {"span_id": "S1", "text": "Site visits: the crew cleaned the strainers of every valve chamber."},
    {"span_id": "S2", "text": "The old pumps dated from 1987 and had been rebuilt twice."},
    {"span_id": "S3", "text": "After the upgrade, the station used 31 percent less electricity per cubic metre."},
    {"span_id": "S4", "text": "A section of its own: the contract and its terms."},
]


def result(first="S1", last="S3", **extra) -> dict:
    """A numbered library result whose record is spans first..last of the version."""
    return {
        "n": 1,
        "sourceref": f"pumps.md::{first}",
        "version": VERSION,
        "span": first,
        "last_span": last,
        "source_url": f"/api/sources/{VERSION}/{first}",
        "origin_session": {"id": None, "title": None},
        "from_library": True,
        **extra,
    }


def test_a_citation_opens_the_span_of_its_record_that_holds_the_finding():
    link = pinpointed(result(), "The station used 31 percent less electricity after the upgrade.", {VERSION: SPANS})
    assert (link["sourceref"], link["span"]) == ("pumps.md::S3", "S3")
    assert link["source_url"] == f"/api/sources/{VERSION}/S3"
    assert link["origin_session"] == {"id": None, "title": None} and link["from_library"] is True


def test_a_figure_decides_between_spans_that_share_the_words():
    spans = [
        {"span_id": "S1", "text": "The old pumps were rebuilt twice, in 1987 and in 1999, at the station."},
        {"span_id": "S2", "text": "The pumps were rebuilt twice."},
    ]
    link = pinpointed(result(last="S2"), "The pumps were rebuilt in 1999.", {VERSION: spans})
    assert link["span"] == "S1"


def test_a_finding_no_single_span_says_opens_its_records_first_span():
    woven = "The pumps from 1987 were replaced and the station used 31 percent less electricity."
    assert pinpointed(result(), woven, {VERSION: SPANS})["span"] == "S1"


def test_only_the_spans_of_the_results_record_are_candidates():
    assert pinpointed(result(last="S2"), "The contract and its terms.", {VERSION: SPANS})["span"] == "S1"
    # A result stored before results knew their last span stands for its first alone.
    stored = {k: v for k, v in result().items() if k != "last_span"}
    assert pinpointed(stored, "31 percent less electricity per cubic metre", {VERSION: SPANS})["span"] == "S1"


def test_a_findings_link_is_matched_to_the_record_it_opens_a_span_of():
    first, second = result(last="S3"), result(first="S4", last="S4", n=2)
    links = [{"version": VERSION, "span": "S4"}, {"version": VERSION, "span": "S2"}]
    assert link_opening(first, links)["span"] == "S2"
    assert link_opening(second, links)["span"] == "S4"
    assert link_opening(result(version="another"), links) is None
    assert link_opening({"n": 3, "url": "https://example.org", "title": "A web page"}, links) is None


def test_a_long_records_end_is_read_too():
    """A section cut into records of up to RECORD_MAX_CHARS: its last option is evidence as much as its first."""
    options = [f"-opt{n}: Option number {n} of the TESTS section does one thing well." for n in range(80)]
    text = "\n\n".join(options)
    while len(text) > RECORD_MAX_CHARS:
        options.pop()
        text = "\n\n".join(options)
    found = SearchResult(provider="library", doc_id="find", filename="find.1.md", text=text, score=1.0)
    assert result_json(1, found)["text"].endswith(options[-1])
