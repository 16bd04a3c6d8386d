"""manage.py sweep_artifacts: delete the artifact store's output objects that
no OutputBlob names, older than an hour (a rolled-back recording's)."""

from django.core.management.base import BaseCommand

from benchapp.store import artifactstore


class Command(BaseCommand):
    help = "Delete orphaned raw-output objects of rolled-back recordings (docs/operations.md)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=int,
            default=artifactstore.ORPHAN_SECONDS,
            help="seconds an unnamed object must have existed (default: an hour)",
        )

    def handle(self, *args, older_than, **options):
        deleted = artifactstore.sweep_orphans(older_than)
        self.stdout.write(f"{deleted} orphaned objects deleted")
