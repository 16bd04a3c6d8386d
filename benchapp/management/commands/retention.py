"""manage.py retention: apply the retention settings now (beat does it every
BENCHBOARD_RETENTION_SECONDS); --series-days/--raw-days override them."""

from django.core.management.base import BaseCommand

from benchapp.store import retention


class Command(BaseCommand):
    help = "Downsample old per-second series and expire old raw outputs (docs/operations.md)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--series-days", type=int, help="override BENCHBOARD_SERIES_RETENTION_DAYS"
        )
        parser.add_argument("--raw-days", type=int, help="override BENCHBOARD_RAW_RETENTION_DAYS")

    def handle(self, *args, series_days=None, raw_days=None, **options):
        for name, days in (("--series-days", series_days), ("--raw-days", raw_days)):
            if days is not None and days < 0:
                self.stderr.write(f"{name} must be 0 (off) or more")
                raise SystemExit(2)
        done = retention.apply(series_days=series_days, raw_days=raw_days)
        self.stdout.write(f"{done['series']} series downsampled, {done['raw']} raw outputs expired")
