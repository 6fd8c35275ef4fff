"""REPORT offline: a summary of the statements that best answer the question and each of its clauses
(terms and meaning, relevance.py), the findings grouped by node, each section leading with its best
answer (the question's own first unless its sub-questions' answer it better), then the context items
that bear on the question with their SourceRefs, and the open gaps; each sentence told once (one
that is both a finding and an item cites both), headings never, and nothing that does not bear
on the question (no list of the session's files). Nothing is paraphrased, so nothing is made up.
"""

from __future__ import annotations

from llm_platform.answer_types import can_answer
from llm_platform.relevance import relevance, under_heading
from llm_platform.sourcerefs import ref_key
from llm_platform.statements import ended, is_statement
from llm_platform.task_envelope import read_task
from llm_platform.terms import comparison_key, cut_text

from ..split import plural
from .findings import numbered_results, page_sections, whole_statements
from .inputs import citation_numbers, context_items, dicts_of, input_text, strings_of
from .questions import own_part, question_clauses, without_frame

MAX_REPORT_SECTIONS = 20  # report.schema.json
MAX_REPORT_ITEMS = 12  # paragraphs of "From your files"
MAX_SUMMARY_SENTENCES = 3
MAX_TITLE_CHARS = 300
MAX_PARAGRAPH_CHARS = 4000
MAX_OPEN_QUESTIONS = 15
MAX_OPEN_QUESTION_CHARS = 500

FROM_FILES_HEADING = "From your files"
FINDING_KEY_CHARS = 40  # of a finding, its opening that finds the section of a page that holds it
FRAME_WORDS = 3  # the parts of a question that lists things in one frame open with the same words
SEARCHED_HEADING = "What was searched"
FURTHER_HEADING = "Further findings"


def report(prompt: str) -> dict:
    """The report from the inputs alone: findings by node, the relevant context items, open gaps."""
    _, inputs = read_task(prompt)
    question = input_text(inputs.get("question"))
    sections = {number: page_sections(heading, text) for number, heading, text in numbered_results(prompt)}
    findings = _report_findings(inputs.get("findings"), sections)
    # A sentence both a finding and an item of the user's files is told once, under its node,
    # citing both its search results and its SourceRefs.
    distinct = _distinct_items(inputs.get("context_items"))
    repeated = {comparison_key(item["text"]): item for item in distinct}
    for finding in findings:
        item = repeated.get(comparison_key(finding["text"]))
        if item is not None:
            finding["sources"] = _source_refs(item)
    told = {comparison_key(f["text"]) for f in findings}
    items = _relevant_items([item for item in distinct if not _told(comparison_key(item["text"]), told)], question)
    stats = inputs.get("search_stats") if isinstance(inputs.get("search_stats"), dict) else {}

    from_files = [{"heading": FROM_FILES_HEADING, "paragraphs": [_item_paragraph(i) for i in items]}] if items else []
    searched = [] if findings else [_searched_section(stats)]
    sections = (
        _node_sections(findings, MAX_REPORT_SECTIONS - len(from_files) - len(searched), question)
        + from_files
        + searched
    )

    return {
        "title": cut_text(question, MAX_TITLE_CHARS) or "Research report",
        "summary": _report_summary(findings, items, question, stats),
        "sections": sections,
        "open_questions": _open_questions(inputs.get("open_gaps")),
    }


def _report_findings(value: object, sections: dict[int, list[tuple[str, str]]]) -> list[dict]:
    """The findings that state something (a heading or a label a model took for one is left out), each
    with the heading of the first result it cites that has one, which says what it is about (relevance.py):
    of a page's sections, the one that holds it ("2. Vehicle checks" of "Tyre tread below 2 mm …", as the
    node found it, not the page)."""
    findings = []
    for finding in dicts_of(value):
        if is_statement(input_text(finding.get("text"))):
            citations = citation_numbers(finding.get("citations"))
            headings = {n: _holding_section(sections.get(n, []), finding["text"]) for n in citations}
            findings.append(
                {
                    "node": input_text(finding.get("node")),
                    "question": input_text(finding.get("question")) or "Findings",
                    "text": cut_text(finding["text"], MAX_PARAGRAPH_CHARS),
                    "citations": citations,
                    "heading": next((headings[n] for n in citations if headings.get(n)), ""),
                }
            )
    return findings


def _holding_section(sections: list[tuple[str, str]], text: str) -> str:
    """The heading of the section whose text holds the start of `text`, else the first section's."""
    opening = comparison_key(text)[:FINDING_KEY_CHARS]
    held = next((heading for heading, said in sections if opening in comparison_key(said)), None)
    return held if held is not None else (sections[0][0] if sections else "")


def _distinct_items(value: object) -> list[dict]:
    """The context items that state something, each text once (a repeat adds its SourceRefs to the first)."""
    items: dict[str, dict] = {}
    for item in context_items(value):
        if not is_statement(item["text"]):
            continue
        key = comparison_key(item["text"])
        if key in items:
            items[key]["sources"] += [ref for ref in item["sources"] if ref not in items[key]["sources"]]
        else:
            items[key] = {**item, "sources": list(item["sources"])}
    return list(items.values())


def _told(key: str, told: set[str]) -> bool:
    """Whether a sentence is told already: said by a finding, with or without the label a digest or a page puts
    before it ("2026.11 (released 12 November 2026): The checkout service now retries …" of the finding "The
    checkout service now retries …", a release note's item under its heading), or as one of a finding's sentences
    (a finding tells the sentence a next one refers back to with it: "The freezer failed. Its temperature …")."""
    return any(key.endswith(said) or f" {key} " in f" {said} " for said in told if said and key)


def _relevant_items(items: list[dict], question: str) -> list[dict]:
    """The items that bear on the question, best first (input order breaks ties); none when none does."""
    scores = relevance(question, [item["text"] for item in items])
    matching = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
    return [items[i] for i in matching[:MAX_REPORT_ITEMS]]


def _item_paragraph(item: dict) -> dict:
    return {"text": cut_text(item["text"], MAX_PARAGRAPH_CHARS), "sources": _source_refs(item)}


def _source_refs(item: dict) -> list[str]:
    sources: list[str] = []
    for ref in item["sources"]:
        key = ref_key(ref)
        if key and key not in sources:
            sources.append(key)  # a "::hint" suffix is dropped (schema: file::S4)
    return sources


def _node_sections(findings: list[dict], room: int, question: str) -> list[dict]:
    """One section per node question, in order of first appearance, each leading with the paragraphs
    that answer its question best; past `room`, one "Further findings".

    A sentence found by a node and again by its sub-questions is told once, under
    the most specific question that found it (_homes). The question's own section comes
    first when it holds the best answer to the question (a split into narrower questions),
    else after its sub-questions' sections, as "Further findings" (a split into its parts,
    each answered by its own section: the rest of its own search's findings are by the way).
    """
    heading_of = {f["text"]: f["heading"] for f in findings}
    home = _homes(findings, heading_of)
    by_question: dict[str, list[dict]] = {}
    root_questions = {f["question"] for f in findings if f["node"].count(".") == 0}
    for finding in findings:
        paragraphs = by_question.setdefault(finding["question"], [])
        paragraph = {"text": finding["text"], "citations": finding["citations"]}
        if finding.get("sources"):
            paragraph["sources"] = finding["sources"]
        if home[finding["text"]] == finding["question"] and paragraph not in paragraphs:
            paragraphs.append(paragraph)
    sections = [
        {"heading": cut_text(q, MAX_TITLE_CHARS), "paragraphs": _answers_first(q, p, heading_of)}
        for q, p in by_question.items()
        if p
    ]
    sections = _best_answer_first(sections, root_questions, question, heading_of)
    if len(sections) <= room:
        return sections
    kept, rest = sections[: room - 1], sections[room - 1 :]
    return kept + [{"heading": FURTHER_HEADING, "paragraphs": [p for s in rest for p in s["paragraphs"]]}]


def _homes(findings: list[dict], heading_of: dict[str, str]) -> dict[str, str]:
    """text → the one node question it is told under: of the nodes that found it, those none of whose
    sub-questions did (the most specific), and of those the one it answers best: first one it can answer
    (it holds what the question asks for, a duration for "how long"), then by terms and meaning, read
    with its heading (the first on a tie). Parts of a question ("where …", "what is being done …") often
    find the same sentence, and a reader wants it once, where it belongs."""
    nodes_of: dict[str, dict[str, str]] = {}  # text → {node path: question}
    for finding in findings:
        nodes_of.setdefault(finding["text"], {}).setdefault(finding["node"], finding["question"])
    finders: dict[str, list[str]] = {}
    for text, nodes in nodes_of.items():
        # A sub-question in our frame ("What is known about …") that found what a question in the user's
        # words above it found reads worse than that question: the sentence is told under the user's.
        nodes = {
            path: question
            for path, question in nodes.items()
            if without_frame(question) == question
            or not any(path.startswith(f"{other}.") and without_frame(q) == q for other, q in nodes.items())
        }
        specific = [path for path in nodes if not any(other.startswith(f"{path}.") for other in nodes)]
        finders[text] = list(dict.fromkeys(nodes[path] for path in specific))
    texts_of: dict[str, list[str]] = {}
    for text, questions in finders.items():
        for question in questions:
            texts_of.setdefault(question, []).append(text)
    if len(texts_of) < 2:
        return {text: questions[0] for text, questions in finders.items()}
    fit = {
        (question, text): score
        for question, texts in texts_of.items()
        for text, score in zip(texts, relevance(question, texts, [heading_of[t] for t in texts]), strict=True)
    }
    # A relevance is on its own question's scale, and one that lacks what its question asks for may still top
    # it by terms ("outage" of an action item for "how long did the outage last?"): it goes where it can answer.
    return {
        text: max(questions, key=lambda q: (can_answer(q, under_heading(heading_of[text], text)), fit[q, text]))
        for text, questions in finders.items()
    }


def _answers_first(question: str, paragraphs: list[dict], heading_of: dict[str, str]) -> list[dict]:
    """The paragraphs in order of how well they answer `question` (terms and meaning, each under its
    heading: relevance.HEADING_WEIGHT); ties keep their order."""
    texts = [p["text"] for p in paragraphs]
    scores = relevance(question, texts, [heading_of.get(text, "") for text in texts])
    return [paragraphs[i] for i in sorted(range(len(paragraphs)), key=lambda i: (-scores[i], i))]


def _best_answer_first(
    sections: list[dict], root_questions: set[str], question: str, heading_of: dict[str, str]
) -> list[dict]:
    """The question's own section stays first when its lead answers the question at least as well as
    every sub-question's lead; else it follows them, as "Further findings". Of a question that asks several
    things in one frame, a lead is weighed by the things it asks, not by the frame ("This page is for new PhD
    students" for "What does a new PhD student need to know about safety, booking and …")."""
    own = [s for s in sections if s["heading"] in root_questions]
    others = [s for s in sections if s["heading"] not in root_questions]
    if not own or not others:
        return sections
    parts = question_clauses(question)
    listed = len(parts) > 1 and len({tuple(part.split()[:FRAME_WORDS]) for part in parts}) == 1
    asked = own_part(question, parts) if listed else ""
    leads = [s["paragraphs"][0]["text"] for s in sections]
    scores = relevance(asked or question, leads, [heading_of.get(lead, "") for lead in leads])
    scores = dict(zip((id(s) for s in sections), scores, strict=True))
    if scores[id(own[0])] >= max(scores[id(s)] for s in others):
        return sections
    return others + [{"heading": FURTHER_HEADING, "paragraphs": own[0]["paragraphs"]}] + own[1:]


def _stats_line(stats: dict) -> str:
    def count(key: str) -> int:
        value = stats.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return (
        f"The search covered {plural(count('nodes'), 'research node')}, "
        f"{plural(count('queries'), 'query', 'queries')} and {plural(count('results'), 'result')}"
    )


def _searched_section(stats: dict) -> dict:
    text = f"{_stats_line(stats)}, and produced no finding that answers the question."
    return {"heading": SEARCHED_HEADING, "paragraphs": [{"text": text}]}


def _report_summary(findings: list[dict], items: list[dict], question: str, stats: dict) -> str:
    """1–3 sentences that best answer the question, as written, each once: the best answer to each of its
    clauses (a question of two parts gets an answer to both, and no more); for a question of one clause,
    the best three of every statement of the findings and items (terms and meaning; more citations, then
    order, break ties)."""
    candidates = [
        (sentence, len(f["citations"]), f["heading"], comparison_key(f["question"]))
        for f in findings
        for sentence in whole_statements(f["text"])
    ] + [(sentence, 0, "", "") for item in items for sentence in whole_statements(item["text"])]
    texts = [sentence for sentence, _, _, _ in candidates]
    headings = [heading for _, _, heading, _ in candidates]
    clauses = question_clauses(question)
    ranked: list[int] = []
    for part in clauses if len(clauses) > 1 else []:
        # A part's own node answers it (its findings were found for it, whatever words they share with it): the
        # words the parts share ("What does a new lab member need to know about safety, waste and …") would
        # lead each part to the best-said one's sentences.
        own = [i for i, (_sentence, _cited, _heading, asked) in enumerate(candidates) if asked == comparison_key(part)]
        pool = own or list(range(len(candidates)))
        # … and what it asks apart from the others ("payments") ranks them.
        focus = own_part(part, [other for other in clauses if other != part]) or part
        scores = relevance(focus, [texts[i] for i in pool], [headings[i] for i in pool])
        best = max(range(len(pool)), key=lambda k: (scores[k], candidates[pool[k]][1], -pool[k]), default=None)
        if best is not None and (own or scores[best] > 0):
            ranked.append(pool[best])
    # A question of several clauses is answered by one sentence a clause; the whole question's best fill
    # in only for a clause nothing answers (the whole "…, and what did it cost?" also asks for money, and
    # would add the costs of something else).
    wanted = min(len(clauses), MAX_SUMMARY_SENTENCES) if len(clauses) > 1 else MAX_SUMMARY_SENTENCES
    scores = relevance(question, texts, headings)
    ranked += sorted(range(len(candidates)), key=lambda i: (-scores[i], -candidates[i][1], i))
    sentences: list[str] = []
    seen: set[str] = set()
    for index in ranked:
        sentence = candidates[index][0].strip()
        if sentence and comparison_key(sentence) not in seen:
            seen.add(comparison_key(sentence))
            sentences.append(ended(sentence))
        if len(sentences) == wanted:
            break
    if not sentences:
        return f"Nothing was found on this question. {_stats_line(stats)}; the user's files hold no items on it."
    return cut_text(" ".join(sentences), MAX_PARAGRAPH_CHARS)


def _open_questions(value: object) -> list[str]:
    questions: list[str] = []
    seen: set[str] = set()
    for gap in strings_of(value):
        key = comparison_key(gap)
        if key and key not in seen:
            seen.add(key)
            questions.append(cut_text(gap, MAX_OPEN_QUESTION_CHARS))
    return questions[:MAX_OPEN_QUESTIONS]
