"""Make an operator: a staff user who also owns a team (created if needed).

    python manage.py makeoperator alice --team ops

`createsuperuser` alone gives a user without a team, whose dashboard is
"Not found". A new user's password is asked for on the terminal (never in
argv); with --no-input it is left unusable until `manage.py changepassword`.
"""

import getpass

from django.core.management.base import BaseCommand, CommandError

from benchapp.accounts.operators import make_operator


class Command(BaseCommand):
    help = "Make USER staff (an operator) and an owner of --team, creating either if needed."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--team", required=True, help="team name; created if missing")
        parser.add_argument(
            "--no-input",
            action="store_false",
            dest="interactive",
            help="do not ask for a new user's password (set it with changepassword)",
        )

    def handle(self, username, team, interactive, **options):
        username, team = username.strip(), team.strip()
        if not username or not team:
            raise CommandError("both a user name and a team name are needed")
        password = self._password(username) if interactive else None
        op = make_operator(username, team, password)
        self.stdout.write(
            f"{'Created' if op.created_user else 'Updated'} user {op.user.username}: "
            f"{'already staff' if op.was_staff else 'now staff'} (operator), "
            f"owner of team {op.team.name}{' (new team)' if op.created_team else ''}."
        )
        if op.created_user and not password:
            self.stdout.write(f"Set a password: python manage.py changepassword {username}")

    def _password(self, username):
        """A new user's password from the terminal; None for an existing user."""
        from django.contrib.auth import get_user_model

        if get_user_model().objects.filter(username=username).exists():
            return None
        first = getpass.getpass(f"Password for new user {username}: ")
        if first != getpass.getpass("Password (again): "):
            raise CommandError("the passwords do not match; nothing was changed")
        return first or None
