"""`python manage.py prune_source_texts [--dry-run]`: delete the text versions nothing needs any more.

A version stays while it is a file's current text or anything cites it (a report,
a node's results or findings, a chat message, a request suggestion, an aggregate
digest, the bundle of a run under way); see docs/decisions.md, "Cited versions are kept".
"""

from django.core.management.base import BaseCommand

from context_app import provenance


class Command(BaseCommand):
    help = "Delete superseded or deleted text versions that nothing cites; print what went."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="only print what would be deleted")

    def handle(self, *args, dry_run, **options):
        doomed = provenance.prune(dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        for item in doomed:
            self.stdout.write(f"{verb} {item['version']}  {item['filename']} ({item['status']})")
        self.stdout.write(f"{verb} {len(doomed)} text version(s) nothing cites")
