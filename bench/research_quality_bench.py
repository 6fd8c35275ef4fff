"""Research quality, offline: does a run's report cite the man page that answers its question?

    .venv/bin/python bench/research_quality_bench.py [--split tune|held_out] [--limit N]

Uploads the man-page corpus (tests/fixtures/manpages, 117 pages; bench/manpage_quality.py) into a
throwaway SQLite database with the configured embeddings (GROUNDWORK_EMBEDDINGS, `local` by
default; vectors kept in var/bench/ between runs), then runs every answerable labelled question of
one split as a whole research run (bind, node tree, report) with the offline provider and Celery in
eager mode. A question counts as answered when the report cites its labelled page (a paragraph's
[n] reference or SourceRef from that file), and as answered first when that page is among the
first three distinct files the report cites, in reading order. Per style ("paraphrase": a
colleague's words; "words": the page's own). Tune on the `tune` split only; `held_out` is for the
final figures. Writes bench/results/research_quality_<split>.json.
"""

import argparse
import os
import sys
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

parser = argparse.ArgumentParser()
parser.add_argument("--split", choices=["tune", "held_out"], default="tune")
parser.add_argument("--limit", type=int, default=0, help="only the first N questions of each style")
parser.add_argument("--embeddings", default=os.environ.get("GROUNDWORK_EMBEDDINGS", "local"))
args = parser.parse_args()
os.environ["GROUNDWORK_EMBEDDINGS"] = args.embeddings
harness.setup_django()

from bench.manpage_quality import corpus_files, questions  # noqa: E402
from context_app import meaning, services  # noqa: E402
from context_app.models import ContextFile  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from llm_platform.sourcerefs import split_ref  # noqa: E402
from research_app.models import ResearchRun  # noqa: E402
from research_app.runs import engine  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

FIRST_CITATIONS = 3


def cited_files(report: dict) -> list[str]:
    """The files a report cites, each once, in reading order (a paragraph's [n] first, then its SourceRefs)."""
    reference_file = {ref["n"]: _filename(ref.get("sourceref") or "") for ref in report.get("references", [])}
    files: list[str] = []
    for section in report.get("sections", []):
        for paragraph in section.get("paragraphs", []):
            names = [reference_file.get(n, "") for n in paragraph.get("citations", [])]
            names += [_filename(ref) for ref in paragraph.get("sources", [])]
            files += [name for name in names if name and name not in files]
    return files


def _filename(ref: str) -> str:
    parts = split_ref(ref)
    return parts[0] if parts else ""


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Research quality bench")
    harness.load_text_embeddings()
    services.upload_files(session.context_set, [services.Upload(n, d) for n, d in corpus_files().items()])
    if embeddings.enabled():
        for file_id in ContextFile.objects.filter(context_set=session.context_set).values_list("pk", flat=True):
            meaning.embed_file(file_id)
        harness.save_text_embeddings()
    per_question = []
    for style in ("paraphrase", "words"):
        items = questions(split=args.split, style=style)
        for item in items[: args.limit or None]:
            started = time.perf_counter()
            run = engine.start_run(session, user, question=item.question)
            run = ResearchRun.objects.get(pk=run.pk)
            files = cited_files(run.report or {})
            per_question.append(
                {
                    "id": item.id,
                    "style": style,
                    "question": item.question,
                    "page": item.filename,
                    "status": run.status,
                    "nodes": run.nodes.count(),
                    "cited": item.filename in files,
                    "cited_first": item.filename in files[:FIRST_CITATIONS],
                    "cited_files": files[:6],
                    "paragraphs": sum(len(s.get("paragraphs", [])) for s in (run.report or {}).get("sections", [])),
                    "seconds": round(time.perf_counter() - started, 2),
                }
            )
            row = per_question[-1]
            mark = "+" if row["cited_first"] else ("~" if row["cited"] else "-")
            print(f"{item.id} {style:10} {mark} {item.question[:70]}", flush=True)
    figures = {"split": args.split, "embeddings": embeddings.model_key() if embeddings.enabled() else "off"}
    for style in ("paraphrase", "words"):
        rows = [row for row in per_question if row["style"] == style]
        figures[f"{style}_questions"] = len(rows)
        figures[f"{style}_cites_the_page"] = round(sum(r["cited"] for r in rows) / len(rows), 3)
        figures[f"{style}_page_in_first_{FIRST_CITATIONS}"] = round(sum(r["cited_first"] for r in rows) / len(rows), 3)
    figures["mean_paragraphs_per_report"] = round(sum(r["paragraphs"] for r in per_question) / len(per_question), 1)
    figures["median_run_seconds"] = sorted(r["seconds"] for r in per_question)[len(per_question) // 2]
    harness.write_results(f"research_quality_{args.split}", figures, per_question=per_question)


if __name__ == "__main__":
    sys.exit(main())
