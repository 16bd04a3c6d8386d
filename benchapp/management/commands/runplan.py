"""`manage.py runplan FILE [--wait] [--json]`: start a plan file through the workers."""

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchapp.analysis.documents import result_document
from benchapp.models import Run, Team
from benchapp.runs import orchestration
from benchapp.runs.progress import run_progress
from runners.errors import ValidationError


class Command(BaseCommand):
    help = "Start a plan file on the workers; with --wait, show progress and the results."

    def add_arguments(self, parser):
        parser.add_argument("file", help="plan file (YAML or JSON)")
        parser.add_argument("--team", help="team name (default: the only team, or 'default')")
        parser.add_argument("--wait", action="store_true", help="wait until the run finishes")
        parser.add_argument(
            "--json", action="store_true", help="with --wait: print the result document as JSON"
        )
        parser.add_argument(
            "--timeout", type=float, default=None, help="give up waiting after S seconds"
        )

    def handle(self, *args, **options):
        team = self._team(options["team"])
        try:
            text = Path(options["file"]).read_text()
            run = orchestration.start_run(team, text, origin="cli")
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc.strerror}") from None
        except ValidationError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"run #{run.pk} started: {run.cells.count()} cells")
        if not options["wait"]:
            return
        run = self._wait(run, options["timeout"])
        if options["json"]:
            self.stdout.write(json.dumps(result_document(run), indent=2, default=str))
        else:
            self._table(run)
        if run.status != Run.SUCCEEDED:
            sys.exit(1)

    def _team(self, name):
        if name:
            team = Team.objects.filter(name=name).first()
            if team is None:
                raise CommandError(f"no team named {name!r}")
            return team
        teams = list(Team.objects.all()[:2])
        if len(teams) == 1:
            return teams[0]
        return Team.objects.get_or_create(name="default")[0]

    def _wait(self, run, timeout):
        start = time.monotonic()
        while True:
            run.refresh_from_db()
            progress = run_progress(run)
            self._bar(progress)
            if not run.is_active:
                self.stderr.write("")
                return run
            if timeout and time.monotonic() - start > timeout:
                raise CommandError(f"run #{run.pk} still {run.status} after {timeout:g} s")
            time.sleep(1)

    def _bar(self, p):
        width = 30
        filled = int(width * p["percent"] / 100)
        eta = f" ETA {p['eta_s']:.0f}s" if p["eta_s"] is not None else ""
        self.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {p['done']}/{p['total']} "
            f"{p['phase'] or p['status']}{eta}   ",
            ending="",
        )
        self.stderr.flush()

    def _table(self, run):
        doc = result_document(run)
        names = []
        for cell in doc["cells"]:
            names += [m for m in cell["metrics"] if m not in names]
        names = names[:6]
        self.stdout.write(f"run #{run.pk} {run.name}: {run.get_status_display()}")
        header = ["cell", "rep", "status"] + names
        self.stdout.write("  ".join(f"{h:>14}" for h in header))
        for cell in doc["cells"]:
            key = ",".join(f"{k}={v}" for k, v in cell["axes"].items()) or "-"
            row = [key[:14], str(cell["repeat"]), cell["status"]]
            row += [f"{cell['metrics'][n]:.4g}" if n in cell["metrics"] else "" for n in names]
            self.stdout.write("  ".join(f"{v:>14}" for v in row))
            if cell["error"]:
                self.stdout.write(f"{'':>14}  error: {cell['error']}")
