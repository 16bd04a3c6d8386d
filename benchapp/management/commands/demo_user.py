"""Create the demo team and user of `make run` and print the login."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from benchapp.models import Membership, Team


class Command(BaseCommand):
    help = "Create the demo team and user (idempotent) and print the login."

    def handle(self, *args, **options):
        path = settings.VAR_DIR / "demo_password"
        if not path.exists():
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(9))
        password = path.read_text().strip()
        team, _ = Team.objects.get_or_create(name="demo")
        user, created = get_user_model().objects.get_or_create(username="demo")
        if created or not user.check_password(password):
            user.set_password(password)
            user.save()
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": Membership.OWNER})
        self.stdout.write(f"Log in as: demo / {password}")
