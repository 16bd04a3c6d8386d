"""Benchboard's data model (DESIGN.md, "Data model").

Every object belongs to one team; access helpers in benchapp.accounts.access return
objects of the current user's teams or 404. Models hold fields, small
properties and QuerySet methods; domain operations live in
benchapp.runs.orchestration and friends.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from benchapp import crypto
from runners.engines import DEFAULT_KIND, TARGET_KIND_LABELS
from runners.errors import ValidationError
from runners.plan import Plan as PlanSpec
from runners.plan import load_plan
from runners.providers import credential_kinds


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )
    # Guard rails for cloud spend (issue 6): a run is refused before any create call.
    max_cloud_resources = models.PositiveIntegerField(default=20)
    max_run_cost = models.DecimalField(max_digits=10, decimal_places=2, default=100)
    # Fair share (issue 25): empty means the operator's default
    # (BENCHBOARD_TEAM_MAX_RUNNING_CELLS, BENCHBOARD_TEAM_MAX_ACTIVE_RUNS).
    max_running_cells = models.PositiveIntegerField(
        null=True, blank=True, help_text="Cells sent or running at once; empty: the site default."
    )
    max_active_runs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Queued or running runs at once; empty: the site default."
    )

    def __str__(self):
        return self.name

    @property
    def running_cells_limit(self) -> int:
        if self.max_running_cells is not None:
            return self.max_running_cells
        return settings.BENCHBOARD_TEAM_MAX_RUNNING_CELLS

    @property
    def active_runs_limit(self) -> int:
        if self.max_active_runs is not None:
            return self.max_active_runs
        return settings.BENCHBOARD_TEAM_MAX_ACTIVE_RUNS


class Membership(models.Model):
    """A user's role in a team. Owner is kept for existing rows and counts as admin."""

    VIEWER, MEMBER, ADMIN, OWNER = "viewer", "member", "admin", "owner"
    ROLE_RANK = {VIEWER: 0, MEMBER: 1, ADMIN: 2, OWNER: 2}
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(
        max_length=10,
        default=MEMBER,
        choices=[(VIEWER, "Viewer"), (MEMBER, "Member"), (ADMIN, "Admin"), (OWNER, "Owner")],
    )

    def allows(self, role: str) -> bool:
        """True when this membership's role is at least `role`."""
        return self.ROLE_RANK[self.role] >= self.ROLE_RANK[role]

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership")]


class Credential(models.Model):
    """A secret: SSH private key, DB password, a cloud account's keys. Write-only outside this class."""

    SSH_KEY, PASSWORD = "ssh_key", "password"
    # A cloud account's keys (each provider's CREDENTIAL_KIND): never sent to a target.
    ACCOUNT_KINDS = tuple(kind for kind, _ in credential_kinds())
    KINDS = [(SSH_KEY, "SSH private key"), (PASSWORD, "Password"), *credential_kinds()]

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="credentials")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=KINDS)
    # For an account: the key id (not secret) lives here, the secret key encrypted.
    username = models.CharField(max_length=200, blank=True)
    encrypted = models.TextField(editable=False)
    fingerprint = models.CharField(max_length=40, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    # Where the secret may be sent besides the stored targets that name it as
    # their credential or SSH credential (docs/trust-model.md, credential
    # binding). Set by team admins only.
    bound_targets = models.ManyToManyField("Target", blank=True, related_name="bound_credentials")
    # "host", "host:port" or "unix:/path" patterns (shell wildcards in the host).
    host_patterns = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="credential_name")]

    def __str__(self):
        return f"{self.name} ({self.get_kind_display()}, {self.fingerprint})"

    def __repr__(self):
        return f"<Credential {self.pk} {self.name!r}>"

    def set_secret(self, plain: str) -> None:
        self.encrypted = crypto.encrypt(plain)
        self.fingerprint = crypto.fingerprint(plain)

    def secret(self) -> str:
        return crypto.decrypt(self.encrypted)


class Target(models.Model):
    """A named system under test: static endpoint/host or a provisioning spec."""

    KINDS = list(TARGET_KIND_LABELS.items())  # the engines' registry's target kinds

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="targets")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=KINDS, default=DEFAULT_KIND)
    host = models.CharField(max_length=255, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    user = models.CharField(max_length=100, blank=True)
    database = models.CharField(max_length=100, blank=True)
    credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    ssh_host = models.CharField(max_length=255, blank=True)
    ssh_port = models.PositiveIntegerField(default=22)
    ssh_user = models.CharField(max_length=100, blank=True)
    ssh_credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    known_host_key = models.TextField(blank=True)
    nodes = models.JSONField(default=list, blank=True)
    via = models.CharField(max_length=100, blank=True)
    provision = models.JSONField(default=dict, blank=True)
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    notes = models.TextField(blank=True)
    # Trust model (docs/trust-model.md): on a team host reached over SSH, a
    # team admin may allow code-running features (custom scripts, snapshot/
    # restore, service stop/start). Never honoured for execution on the worker.
    allow_custom_scripts = models.BooleanField(default=False)
    # Absolute directories on the worker host a sandboxed local tool may write
    # (fio files, a data directory). Only operators (staff) may set them.
    data_dirs = models.JSONField(default=list, blank=True)
    # A host target's directory fio works in (plans default fio's `directory`
    # to it): over SSH a path on that host; on the worker host it must lie in
    # one of data_dirs, the only places the sandbox lets a local tool write.
    directory = models.CharField(max_length=255, blank=True)
    # Host and database telemetry while its cells measure (docs/telemetry.md):
    # off for a host where even a once-a-second shell loop is unwelcome.
    telemetry = models.BooleanField(default=True)
    # The link speed of the target's host (Mb/s), declared for the network
    # rule when its interfaces report none or not the real one (a veth says
    # 10000, a virtio NIC nothing; a cloud sells "up to" a rate).
    link_mbit = models.PositiveIntegerField(null=True, blank=True)
    # An existing cloud resource this target is, for its monitoring
    # ({provider, its id, region, credential}; runners.plantargets.read_cloud_instance).
    cloud_instance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The last "test connection": when, whether it connected, and its error.
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_check_ok = models.BooleanField(null=True, blank=True)
    last_check_error = models.TextField(blank=True)
    # What the last connection test read that a plan save checks against
    # (benchapp.plans.prerun): {"db": {"max_connections": 151, ...}}; {} when it failed.
    last_check_facts = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="target_name")]
        ordering = ["name"]

    def __str__(self):
        return self.name


class TypedDocument:
    """The one reader of a stored plan document as typed facts (Plan and Run)."""

    @property
    def spec(self) -> PlanSpec:
        """`document` read by runners.plan.load_plan, once per object: a priced
        results page read each run's document three times (1.4 ms each for the
        S1 template). A document this version cannot read (an imported run's
        record of axes) raises the same ValidationError each time, also read
        once. Assigning a new document (refresh_from_db, planning.save_plan)
        reads it again; edit a copy, never the stored dict in place."""
        cached = self.__dict__.get("_spec")
        if cached is None or cached[0] is not self.document:
            try:
                read = load_plan(self.document)
            except ValidationError as error:
                read = error
            cached = self.__dict__["_spec"] = (self.document, read)
        if isinstance(cached[1], ValidationError):
            raise cached[1].with_traceback(None)
        return cached[1]


class Plan(TypedDocument, models.Model):
    """A plan document (DESIGN.md "Plan files"); runs freeze a copy of it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="plans")
    name = models.CharField(max_length=200)
    tool = models.CharField(max_length=20)
    document = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # History (issue 14): plans of a team with the same non-empty study label
    # share one history; a pinned run is the reference the trend page marks.
    study = models.CharField(max_length=100, blank=True)
    baseline_run = models.ForeignKey(
        "Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    confirm_alerts = models.BooleanField(default=False)  # re-run cells of new bad alerts

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self):
        return self.name


class RunQuerySet(models.QuerySet):
    def for_team(self, team):
        return self.filter(team=team)

    def active(self):
        return self.filter(status__in=Run.ACTIVE)


class Run(TypedDocument, models.Model):
    """One execution of a plan. `document` is frozen at start."""

    QUEUED, PROVISIONING, RUNNING = "queued", "provisioning", "running"
    SUCCEEDED, PARTIAL, FAILED, CANCELLED = (
        "succeeded",
        "completed_with_failures",
        "failed",
        "cancelled",
    )
    STATUSES = [
        (s, s.replace("_", " "))
        for s in (QUEUED, PROVISIONING, RUNNING, SUCCEEDED, PARTIAL, FAILED, CANCELLED)
    ]
    ACTIVE = (QUEUED, PROVISIONING, RUNNING)

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    name = models.CharField(max_length=200)
    tool = models.CharField(max_length=20)
    document = models.JSONField()
    status = models.CharField(max_length=25, choices=STATUSES, default=QUEUED)
    origin = models.CharField(max_length=20, default="manual")  # manual|schedule|api|cli|import
    concurrency = models.PositiveIntegerField(default=0)  # 0: no per-run limit
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Targets whose data is prepared (plan `prepare: {once: true}`): shared by
    # every worker that runs a cell of this run.
    prepared_targets = models.JSONField(default=list, blank=True)
    # What retention did to this run (benchapp.store.retention): {"series": {"at",
    # "days"}, "raw": {"at", "days"}}; the run and cell pages say it.
    retention = models.JSONField(default=dict, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self):
        return f"#{self.pk} {self.name}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class Environment(models.Model):
    """One distinct environment snapshot (runners.environment: database variables,
    host settings, cloud, tools), stored once and named by the sha256 of its
    canonical JSON: a nightly run whose machines did not change adds a
    reference from each cell, not a copy. Redacted before it is stored."""

    hash = models.CharField(max_length=64, primary_key=True)
    content = models.JSONField()
    size = models.PositiveIntegerField()  # bytes of the canonical JSON
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.hash[:12]


class Cell(models.Model):
    """One combination of axis values and one repetition."""

    QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
        "queued",
        "running",
        "succeeded",
        "failed",
        "cancelled",
    )
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)]
    TERMINAL = (SUCCEEDED, FAILED, CANCELLED)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="cells")
    index = models.PositiveIntegerField()  # execution order
    key = models.CharField(max_length=500)  # stable combination key "rw=read,volumes=2"
    repeat = models.PositiveIntegerField(default=1)
    axes = models.JSONField(default=dict)
    target_name = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=QUEUED)
    phase = models.CharField(max_length=20, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    phase_started_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    command = models.TextField(blank=True)  # masked
    tool_version = models.CharField(max_length=100, blank=True)
    facts = models.JSONField(default=dict, blank=True)
    client_bound = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    # "transient" (retried with backoff) or "permanent" (never retried); "" without error.
    error_kind = models.CharField(max_length=10, blank=True)
    output_tail = models.TextField(blank=True)  # live tail of the current phase, masked
    # runners.frozen.freeze(plan, cell): all the cell needs to run, fixed at
    # start_run; stored split (runners.frozen.split): its large parts are
    # references to the run's FrozenPart rows. Read it through
    # benchapp.store.frozenparts, never directly.
    spec = models.JSONField(default=dict, blank=True)
    # Adaptive repeats (`repeat: {min, max, until_cv, metric}`): once the cell's
    # combination stopped, how many repeats ran and why (runners.repeats.Stop.to_dict).
    repeat_stop = models.JSONField(default=dict, blank=True)
    # The machines this cell loads (runners.isolation), set when it is sent:
    # [[key, label], ...]; held as locks unless its plan says `isolation: target`.
    machines = models.JSONField(default=list, blank=True)
    # The environment the cell ran in (read before its measure), shared by hash.
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.PROTECT, related_name="cells"
    )

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "key", "repeat"], name="one_cell_per_combination"
            )
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"]),
            # dispatch: the first queued cell of each target
            models.Index(
                fields=["run", "status", "target_name", "index"], name="cell_next_per_target"
            ),
        ]

    def __str__(self):
        return f"{self.key} #{self.repeat}"

    @property
    def duration(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


def new_share_token() -> str:
    return secrets.token_urlsafe(24)


class Comparison(models.Model):
    """A saved selection of runs/cells with chart settings, optionally shared."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="comparisons")
    name = models.CharField(max_length=200)
    runs = models.ManyToManyField(Run, related_name="comparisons", blank=True)
    cells = models.JSONField(default=list, blank=True)  # optional cell ids narrowing the runs
    chart_settings = models.JSONField(default=dict, blank=True)  # pivot/chart settings, baseline
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # sha256 of the token; the token itself is shown once, when shared.
    share_token_hash = models.CharField(max_length=64, null=True, blank=True, unique=True)
    shared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name

    def share(self) -> str:
        """Create a new share token (revoking any earlier one); return it."""
        token = new_share_token()
        self.share_token_hash = crypto.hash_token(token)
        self.shared_at = timezone.now()
        self.save(update_fields=["share_token_hash", "shared_at"])
        return token

    def revoke(self) -> None:
        self.share_token_hash = None
        self.shared_at = None
        self.save(update_fields=["share_token_hash", "shared_at"])


class CellLock(models.Model):
    """One thing a sent or running cell holds alone: its team's target, or a
    machine whose load would change its figure (benchapp.runs.machines names
    them), across runs, plans and teams.

    `key` is the identity ("target 7 disk", "server 10.0.0.5:3306", "host
    db1.example:22"), `label` what the run page shows. A cell takes all its
    locks or none with a compare-and-set UPDATE (free, or lease expired), so
    it works on PostgreSQL and SQLite alike; the holder renews the lease with
    its heartbeat, so a worker that dies releases its locks when the lease
    runs out.
    """

    key = models.CharField(max_length=400, unique=True)
    label = models.CharField(max_length=400, blank=True)
    holder = models.ForeignKey(
        Cell, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)


class SkippedTick(models.Model):
    """A scheduled start that did not start a run, and why (the plan's
    previous scheduled run was still active): shown on the plan and
    schedule pages."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="skipped_ticks")
    at = models.DateTimeField(default=timezone.now)
    active_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.CharField(max_length=300)

    class Meta:
        ordering = ["-at"]


# Models by area, each in a module of its own (size); importing them here registers them.
# Cloud resources and prices (benchapp.cloud).
from benchapp.models_cloud import CloudResource, PriceEntry  # noqa: E402,F401

# Histories and alerts (benchapp.histories).
from benchapp.models_history import (  # noqa: E402,F401
    Alert,
    AlertDelivery,
    HistoryState,
    Notifier,
    RunPoints,
    SeriesKey,
)

# The pool of worker hosts (benchapp.runs.workerpool).
from benchapp.models_pool import CellPlacement, WorkerHost, WorkerProcess  # noqa: E402,F401

# A cell's recorded results (benchapp.runs.recording and the stores write them).
from benchapp.models_results import (  # noqa: E402,F401
    Artifact,
    CellMeasurements,
    CellProfile,
    CellSeries,
    FrozenPart,
    MeasureKey,
    OutputBlob,
    RunMetric,
)
