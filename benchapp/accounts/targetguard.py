"""The app's own services, kept out of every benchmark's reach.

Builds the runners.netguard.Guard the worker and the save checks use from
the settings: the database and the broker (from their URLs), the web server
(BENCHBOARD_PORT on this machine), plus the operator's allow/deny networks
(BENCHBOARD_TARGET_ALLOW_NETWORKS, BENCHBOARD_TARGET_DENY_NETWORKS).
"""

from __future__ import annotations

from django.conf import settings

from runners.endpoint import address
from runners.engines import DEFAULT_PORTS
from runners.errors import ValidationError
from runners.netguard import Guard, Service, service_from_url

DATABASE = "the app's database"
BROKER = "the app's broker"
WEB = "the app's web server"


def protected_services() -> tuple[Service, ...]:
    services = []
    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("sqlite3"):
        host = db.get("HOST") or ""
        default = 3306 if "mysql" in db["ENGINE"] else DEFAULT_PORTS["postgres"]
        # No host or a socket directory: the database is on this machine.
        services.append(
            Service(
                DATABASE,
                "localhost" if not host or host.startswith("/") else host,
                int(db.get("PORT") or default),
            )
        )
    broker = settings.CELERY_BROKER_URL
    if broker.startswith(("redis://", "rediss://")):
        service = service_from_url(BROKER, broker, DEFAULT_PORTS["redis"])
        if service is not None:
            services.append(service)
    if settings.BENCHBOARD_WEB_PORT:
        services.append(Service(WEB, "localhost", settings.BENCHBOARD_WEB_PORT))
    return tuple(services)


def guard() -> Guard:
    return Guard(
        protected_services(),
        tuple(settings.BENCHBOARD_TARGET_ALLOW_NETWORKS),
        tuple(settings.BENCHBOARD_TARGET_DENY_NETWORKS),
    )


def check_plan(spec) -> None:
    """ValidationError naming the first plan target (or its SSH host) the guard refuses.

    Provisioned targets have no address yet (checked when a cell connects);
    a name that does not resolve now is checked again then.
    """
    checker = guard()
    for index, target in enumerate(spec.targets):
        if target.provision is not None:
            continue
        addresses = []
        where = address(target)  # the one address its clients connect to
        if target.kind != "host" and not (where.socket and target.ssh is not None):
            # A socket on this machine is this machine; on an SSH host it is the team's.
            addresses.append(("socket" if where.socket else "host", where.host, where.port))
        if target.ssh is not None:
            addresses.append(("ssh.host", target.ssh.host, target.ssh.port))
        for key, host, port in addresses:
            problem = checker.allows_at_save(host or "localhost", port)
            if problem:
                raise ValidationError(f"targets[{index}].{key}", problem)
