"""Which runs a user sees (those of the sessions they see), and the text versions runs cite."""

from collections.abc import Iterator

from context_app.provenance import versions_in
from workspaces.selectors import parse_uuid

from .models import ResearchNode, ResearchRun


def visible_run(user, run_id) -> ResearchRun | None:
    pk = parse_uuid(run_id)
    if pk is None:
        return None
    runs = ResearchRun.objects.select_related("session__team")
    if not user.is_staff:
        runs = runs.filter(session__team__members=user)
    return runs.filter(pk=pk).first()


def cited_source_versions() -> Iterator[str]:
    """The text versions runs cite (context_app.provenance retention): reports' references and
    paragraphs, coverage records' files, nodes' results and findings, and the bundles of runs
    still under way (their report will pin its SourceRefs through them)."""
    for report in ResearchRun.objects.filter(report__isnull=False).values_list("report", flat=True).iterator():
        yield from versions_in(report)
    for coverage in ResearchRun.objects.filter(coverage__isnull=False).values_list("coverage", flat=True).iterator():
        yield from versions_in(coverage)
    for results, findings in ResearchNode.objects.values_list("results", "findings").iterator():
        yield from versions_in(results)
        yield from versions_in(findings)
    open_runs = ResearchRun.objects.exclude(status__in=ResearchRun.FINISHED).filter(context_bundle__isnull=False)
    for bundle in open_runs.values_list("context_bundle", flat=True).iterator():
        yield from (v for v in (bundle or {}).get("source_versions", {}).values() if v)
