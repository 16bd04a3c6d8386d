"""manage.py move_artifacts: move raw outputs recorded before the artifact
store (kept in Artifact.stdout/stderr) into it. Safe to interrupt and run
again: each artifact moves in its own transaction, and a moved one is skipped.
"""

from django.core.management.base import BaseCommand
from django.db.models import Q

from benchapp.models import Artifact
from benchapp.store import artifactstore


class Command(BaseCommand):
    help = "Move raw outputs kept in the database into the artifact store (BENCHBOARD_ARTIFACTS)."

    def handle(self, *args, **options):
        pending = Artifact.objects.filter(~Q(stdout="") | ~Q(stderr="")).order_by("pk")
        artifacts = streams = 0
        for artifact_id in list(pending.values_list("pk", flat=True)):
            try:
                streams += artifactstore.move_to_store(artifact_id)
            except artifactstore.StoreError as exc:
                self.stderr.write(f"artifact {artifact_id} not moved: {exc}")
                continue
            artifacts += 1
        self.stdout.write(f"{artifacts} artifacts moved ({streams} streams) to the artifact store")
