"""manage.py workers: the pool of worker hosts from the command line
(docs/operations.md, "Worker hosts"): list them, drain or resume one,
forget one that no live worker heartbeats for."""

from django.core.management.base import BaseCommand, CommandError

from benchapp.runs import workerpool


class Command(BaseCommand):
    help = "List, drain, resume or forget worker hosts (docs/operations.md, Worker hosts)."

    def add_arguments(self, parser):
        parser.add_argument("action", nargs="?", default="list", choices=workerpool.ACTIONS)
        parser.add_argument("host_id", nargs="?", help="a host's id, as `workers` lists it")

    def handle(self, *args, action="list", host_id=None, **options):
        if action == "list":
            for h in workerpool.overview():
                tools = ", ".join(f"{t} {v}" for t, v in h.tools.items()) or "no tools"
                self.stdout.write(
                    f"{h.host_id}\t{h.state}\t{h.busy}/{h.slots} busy\t{h.version}\t{tools}"
                )
            return
        host = workerpool.get_host(host_id or "")
        if host is None:
            raise CommandError(f"no worker host {host_id!r} (see `manage.py workers`)")
        try:
            said = workerpool.ACTIONS[action](host)
        except workerpool.PoolRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(said)
