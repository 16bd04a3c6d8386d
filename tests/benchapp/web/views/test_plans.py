"""Plan builder and plan pages: generated parameter form, axes, overrides,
preview, inline errors, templates, import/export, clone, run now."""

import json

import pytest
import yaml

from benchapp.models import Credential, Plan, Run
from benchapp.plans.planning import save_plan, validate_document
from benchapp.plans.templates_plans import get_template, plan_templates
from benchapp.web.forms import PlanForm, initial_from_document
from benchapp.web.forms_templates import TemplateForm
from runners.plan import count_cells, expand, load_plan
from tests.benchapp.ui_data import DEMO, assert_no_canary, form_data, make_credential, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(team):
    return make_target(team)


@pytest.fixture
def plan(team, stored, owner):
    return save_plan(team, DEMO, user=owner)


def builder_data(team, **over):
    data = {
        "name": "two-axis",
        "tool": "mysqlslap",
        "targets": ["local-mariadb"],
        "repeat": "1",
        "order": "sequential",
        "extra": "",
        "param-mysqlslap-auto_generate_sql_add_autoincrement": "true",
        "param-mysqlslap-number_of_queries": "20",
        "axis-0-name": "load_type",
        "axis-0-values": "read, key",
        "axis-1-name": "concurrency",
        "axis-1-values": "1, 2",
    }
    return {**data, **over}


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_plan_pages_for_team_members(request, persona, plan):
    client = request.getfixturevalue(persona)
    assert plan.name in client.get("/plans/").content.decode()
    for url in (
        "/plans/new/",
        f"/plans/{plan.pk}/",
        f"/plans/{plan.pk}/edit/",
        f"/plans/{plan.pk}/yaml/",
        "/plans/import/",
    ):
        assert client.get(url).status_code == 200, url


def test_plan_list_outsider_sees_own_team_only(outsider_client, plan):
    html = outsider_client.get("/plans/").content.decode()
    assert plan.name not in html and "No plans yet" in html


@pytest.mark.parametrize(
    "method,url",
    [
        ("get", "/plans/{pk}/"),
        ("get", "/plans/{pk}/edit/"),
        ("post", "/plans/{pk}/edit/"),
        ("get", "/plans/{pk}/yaml/"),
        ("post", "/plans/{pk}/clone/"),
        ("post", "/plans/{pk}/delete/"),
        ("post", "/plans/{pk}/run/"),
        ("post", "/plans/{pk}/schedule/"),
    ],
)
def test_plan_object_pages_outsider_gets_404(outsider_client, plan, method, url):
    assert getattr(outsider_client, method)(url.format(pk=plan.pk)).status_code == 404
    assert Plan.objects.filter(pk=plan.pk).exists() and not Run.objects.exists()


def test_plan_list_query_count(owner_client, team, stored, django_assert_max_num_queries):
    for i in range(15):
        save_plan(team, {**DEMO, "name": f"plan-{i}"})
    with django_assert_max_num_queries(8):
        response = owner_client.get("/plans/")
    assert response.content.decode().count("plan-") >= 15


def test_builder_fields_come_from_tool_params(owner_client):
    html = owner_client.get("/plans/new/").content.decode()
    from runners.tools import MEASURED_TOOLS, get_tool

    for tool in MEASURED_TOOLS:
        for name in get_tool(tool).PARAMS:
            assert f'name="param-{tool}-{name}"' in html
    # types, defaults, help text and choices of one parameter
    assert "Load type of the generated SQL" in html and "default (mixed)" in html
    assert '<option value="key">key</option>' in html
    assert "an integer &gt;= 1" in html  # Param.describe() of iterations


def test_builder_creates_the_plan_document(owner_client, team, stored, owner):
    response = owner_client.post(
        "/plans/new/",
        builder_data(
            team,
            **{
                "override-0-when": "load_type=key",
                "override-0-set": "number_of_queries=40",
                "repeat": "2",
                "order": "interleaved",
            },
        ),
    )
    plan = Plan.objects.get(team=team, name="two-axis")
    assert response.url == f"/plans/{plan.pk}/"
    doc = plan.document
    assert doc["params"] == {"auto_generate_sql_add_autoincrement": True, "number_of_queries": 20}
    assert doc["axes"] == {"load_type": ["read", "key"], "concurrency": [1, 2]}
    assert doc["overrides"] == [{"when": {"load_type": "key"}, "set": {"number_of_queries": 40}}]
    assert (doc["repeat"], doc["order"]) == (2, "interleaved")
    assert doc["targets"][0]["host"] == "127.0.0.1"  # the stored target, filled in
    assert plan.created_by == owner


@pytest.mark.parametrize(
    "over,field,message",
    [
        ({"axis-0-values": "read, bogus"}, "axis-0-values", "&#x27;bogus&#x27; is not allowed"),
        (
            {"param-mysqlslap-number_of_queries": "lots"},
            "param-mysqlslap-number_of_queries",
            "expected an integer",
        ),
        (
            {"param-mysqlslap-auto_generate_sql_add_autoincrement": ""},
            None,
            "key needs add_autoincrement",
        ),
        ({"axis-1-values": ""}, "axis-1-values", "give both an axis"),
        (
            {"override-0-when": "load_type=key", "override-0-set": "nonsense"},
            "override-0-set",
            "name=value",
        ),
        ({"repeat": "0"}, "repeat", "greater than or equal to 1"),
        ({"extra": "timeout: [oops"}, "extra", "not valid YAML"),
        ({"extra": "axes: {}"}, "extra", "with the form fields above"),
        ({"targets": []}, "targets", ""),
    ],
)
def test_builder_errors_are_inline(owner_client, team, stored, over, field, message):
    response = owner_client.post("/plans/new/", builder_data(team, **over))
    html = response.content.decode()
    assert response.status_code == 200 and not Plan.objects.exists()
    assert message in html
    if field:
        start = html.index(f'id="field-{field}"')
        assert "has-error" in html[start - 40 : start] and message in html[start : start + 3000]


def test_preview_counts_cells_and_lists_the_first(owner_client, team, stored):
    response = owner_client.post("/plans/preview.json", builder_data(team, repeat="3"))
    data = response.json()
    assert data["valid"] and data["count"] == 12
    assert [c["key"] for c in data["cells"][:3]] == ["concurrency=1,load_type=read"] * 3
    assert len(data["cells"]) == 8
    assert load_plan(data["yaml"]).axes == {"load_type": ["read", "key"], "concurrency": [1, 2]}
    # mysqlslap states no duration: 10 s per cell plus 3 s overhead (benchapp.plans.estimates)
    assert data["estimate"] == {
        "seconds": 12 * 13,
        "known": False,
        "cost": None,
        "cost_hours": None,
        "client_hosts": 1,
    }


def test_preview_counts_the_client_hosts_of_a_client_hosts_axis(owner_client, team, stored):
    data = owner_client.post(
        "/plans/preview.json",
        builder_data(
            team,
            extra="client: [{local: true, count: 3}]",
            **{"axis-1-name": "client_hosts", "axis-1-values": "1, 3"},
        ),
    ).json()
    assert data["valid"], data
    assert [c["key"] for c in data["cells"][:2]] == [
        "client_hosts=1,load_type=read",
        "client_hosts=3,load_type=read",
    ]
    assert data["estimate"]["client_hosts"] == 3


def test_preview_errors_name_the_field(owner_client, team, stored):
    data = owner_client.post(
        "/plans/preview.json", builder_data(team, **{"axis-1-values": "1, zero"})
    ).json()
    assert data == {
        "valid": False,
        "errors": {"axis-1-values": ["'zero' is not allowed: expected an integer >= 1 <= 100000"]},
    }


def test_preview_estimate_uses_duration_and_prices(owner_client, team):
    make_target(team, name="pg", kind="postgres", port=5433, user="postgres", price_per_hour="3.60")
    data = owner_client.post(
        "/plans/preview.json",
        {
            "name": "pg",
            "tool": "pgbench",
            "targets": ["pg"],
            "repeat": "1",
            "order": "sequential",
            "param-pgbench-time": "57",
            "axis-0-name": "client",
            "axis-0-values": "1, 2",
        },
    ).json()
    assert data["count"] == 2
    # Billed as the budget check bills it: the target's 3.60/h for one whole hour.
    assert data["estimate"] == {
        "seconds": 120,
        "known": True,
        "cost": 3.6,
        "cost_hours": 1.0,
        "client_hosts": 1,
    }


def test_preview_refuses_plans_over_the_cell_limit(owner_client, team, stored, settings):
    settings.BENCHBOARD_CELL_LIMIT = 3
    data = owner_client.post("/plans/preview.json", builder_data(team)).json()
    assert not data["valid"] and "the limit is 3" in json.dumps(data)


def test_preview_needs_post_and_login(owner_client):
    from django.test import Client

    assert owner_client.get("/plans/preview.json").status_code == 405
    assert Client().post("/plans/preview.json", {}).status_code == 302  # to login


# -- scenario templates bound to your targets (issue 17) ----------------------------

QUICK_CELLS = {
    "s1-rds-classes-mysqlslap": 20,
    "s2-oltp-vs-cpu-stress": 3,
    "s3-ebs-raid0-fio": 4,  # 2 block sizes × 2 patterns (6 s each; volumes need provisioning)
    "s4-managed-mysql-threads": 16,  # targets interleaved, each twice
    "s5-myisam-update": 6,
}


@pytest.fixture
def disk(team, tmp_path):
    """A host target on this server, in a directory an operator allowed."""
    return make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        data_dirs=[str(tmp_path)],
        directory=f"{tmp_path}/fio",
    )


def bound(team, template, preset="quick", account="", **roles) -> dict:
    """The plan document TemplateForm makes of these role choices (account:
    the cloud account of provisioned roles)."""
    form = TemplateForm(
        {"preset": preset, "account": account, **{f"role-{r}": str(v) for r, v in roles.items()}},
        team=team,
        template=template,
    )
    assert form.is_valid(), form.errors
    return form.document


def bind_url(template, preset="quick", **roles):
    query = "&".join(f"role-{role}={value}" for role, value in roles.items())
    return f"/plans/new/?template={template['slug']}&preset={preset}&{query}"


def test_template_page_asks_which_target_plays_each_role(owner_client, team, stored, disk):
    html = owner_client.get("/plans/new/?template=s4-managed-mysql-threads").content.decode()
    for role in ("rds-mysql", "galera-3node"):
        assert f'name="role-{role}"' in html
    assert f'<option value="{stored.pk}">local-mariadb — 127.0.0.1:3306</option>' in html
    assert f'value="{disk.pk}"' not in html  # a host target cannot play a MySQL role
    assert 'value="quick"' in html and 'value="study"' in html
    assert "This field is required" not in html and "Please fix" not in html


def test_template_page_offers_the_scenarios_provisioning(owner_client, team):
    html = owner_client.get("/plans/new/?template=s1-rds-classes-mysqlslap").content.decode()
    assert "Provision it: aws_rds mysql db.t1.micro" in html
    assert "No MySQL / MariaDB target yet" not in html  # the spec is a choice
    html = owner_client.get("/plans/new/?template=s5-myisam-update").content.decode()
    assert "No MySQL / MariaDB target yet" in html


@pytest.mark.parametrize("template", plan_templates(), ids=lambda t: t["slug"])
def test_template_bound_to_your_targets_opens_valid_and_saves(
    owner_client, team, stored, disk, template
):
    roles = {r["name"]: (disk if r["kind"] == "host" else stored).pk for r in template["roles"]}
    url = bind_url(template, **roles)
    page = owner_client.get(url)
    html = page.content.decode()
    assert f'value="{template["document"]["name"]}-quick"' in html, html[:3000]
    assert "has-error" not in html and "several targets" not in html
    response = owner_client.post(url, form_data(page.context["form"]))
    assert response.status_code == 302, response.content.decode()[:3000]
    saved = Plan.objects.get(team=team, name=f"{template['document']['name']}-quick")
    spec = validate_document(saved.document, team)
    assert count_cells(spec) == QUICK_CELLS[template["slug"]]
    assert {t.name for t in spec.targets} <= {"local-mariadb", "disk", *roles}
    assert not any(t.provision for t in spec.targets) and spec.client.provision is None


STUDY_CELLS = {
    "s1-rds-classes-mysqlslap": 20,
    "s2-oltp-vs-cpu-stress": 10,
    "s3-ebs-raid0-fio": 8,
    "s4-managed-mysql-threads": 40,
    "s5-myisam-update": 6,
}


@pytest.mark.parametrize("template", plan_templates(), ids=lambda t: t["slug"])
def test_template_study_preset_binds_to_your_targets(team, stored, disk, template, settings):
    # S3's study writes 64 jobs × 5G on the worker: an operator with that disk raises the limit.
    settings.BENCHBOARD_SANDBOX_SCRATCH_MB = 512 * 1024
    roles = {r["name"]: (disk if r["kind"] == "host" else stored).pk for r in template["roles"]}
    document = bound(team, template, "study", **roles)
    assert count_cells(validate_document(document, team)) == STUDY_CELLS[template["slug"]]
    assert document["name"] == f"{template['document']['name']}-study"


def _but_schema(params: dict) -> dict:
    """A cell's params but its scratch schema (one per target in S1)."""
    return {k: v for k, v in params.items() if k != "create_schema"}


@pytest.mark.parametrize("preset", ["quick", "study"])
@pytest.mark.parametrize("slug", ["s1-rds-classes-mysqlslap", "s4-managed-mysql-threads"])
def test_templates_comparing_targets_interleave_them_twice(team, stored, slug, preset):
    """Each combination runs on one target then the other, at least twice:
    a comparison of the targets never rests on one repeat each, nor on
    targets measured an hour apart."""
    template = get_template(slug)
    document = bound(team, template, preset, **{r["name"]: stored.pk for r in template["roles"]})
    cells = expand(validate_document(document, team))
    targets = document["axes"]["target"]
    assert len(targets) == 2
    for first, second in zip(cells[::2], cells[1::2]):
        assert [first.target, second.target] == targets  # side by side
        assert _but_schema(first.params) == _but_schema(second.params)  # the same load
    repeats = {}
    for cell in cells:
        repeats.setdefault((cell.key, cell.target), []).append(cell.repeat)
    assert all(r == [1, 2] for r in repeats.values()), repeats
    half = len(cells) // 2
    assert {c.repeat for c in cells[:half]} == {1}  # every pair once before any twice


@pytest.mark.parametrize("preset", ["quick", "study"])
@pytest.mark.parametrize("slug", ["s1-rds-classes-mysqlslap", "s5-myisam-update"])
def test_mysqlslap_templates_run_in_scratch_schemas(team, stored, slug, preset):
    """mysqlslap drops its schema before and after a run: never its default
    (`mysqlslap`), never the target's database."""
    template = get_template(slug)
    document = bound(team, template, preset, **{r["name"]: stored.pk for r in template["roles"]})
    spec = validate_document(document, team)
    schemas = {cell.params["create_schema"] for cell in expand(spec)}
    assert schemas and all(s.startswith("bb_s") for s in schemas)


def test_template_one_target_in_two_roles_becomes_a_named_copy(owner_client, team, stored):
    template = get_template("s1-rds-classes-mysqlslap")
    document = bound(team, template, micro=stored.pk, **{"m2-4xlarge-iops": stored.pk})
    assert document["targets"][0] == {"name": "local-mariadb"}
    assert document["targets"][1] == {
        "name": "m2-4xlarge-iops",
        "kind": "mysql",
        "host": "127.0.0.1",
        "port": 3306,
        "user": "root",
    }
    assert document["axes"]["target"] == ["local-mariadb", "m2-4xlarge-iops"]
    assert "client" not in document  # the provisioned client goes with the provisioned targets


def test_template_provisioning_choice_keeps_the_scenarios_spec(owner_client, team):
    """Provisioned roles keep the scenario's spec and name the team's cloud
    account the form asks for (never the worker's own identity)."""
    template = get_template("s1-rds-classes-mysqlslap")
    roles = {"role-micro": "provision", "role-m2-4xlarge-iops": "provision"}
    form = TemplateForm({"preset": "study", **roles}, team=team, template=template)
    assert not form.is_valid() and "Choose the cloud account" in str(form.errors)
    Credential.objects.create(team=team, name="aws-lab", kind=Credential.ACCOUNT_KINDS[0])
    document = bound(
        team,
        template,
        "study",
        micro="provision",
        account="aws-lab",
        **{"m2-4xlarge-iops": "provision"},
    )
    named = [
        {k: v for k, v in t["provision"].items() if k != "aws_credential"}
        for t in document["targets"]
    ]
    assert named == [t["provision"] for t in template["document"]["targets"]]
    assert {t["provision"]["aws_credential"] for t in document["targets"]} == {"aws-lab"}
    assert "aws_credential" not in str(template["document"]["targets"])  # the template untouched
    assert document["params"]["number_of_queries"] == 10000


def test_template_study_of_s3_on_the_worker_is_over_the_default_scratch_limit(team, disk):
    template = get_template("s3-ebs-raid0-fio")
    form = TemplateForm(
        {"preset": "study", "role-c1-medium": str(disk.pk)}, team=team, template=template
    )
    assert not form.is_valid()
    assert "size 5G × numjobs 64 = 327,680 MB" in str(form.errors)
    assert "BENCHBOARD_SANDBOX_SCRATCH_MB" in str(form.errors)


def test_template_fio_works_in_the_host_targets_directory(owner_client, team, disk, settings):
    settings.BENCHBOARD_SANDBOX_SCRATCH_MB = 512 * 1024  # the study's 64 × 5G on this disk
    template = get_template("s3-ebs-raid0-fio")
    document = bound(team, template, "study", **{"c1-medium": disk.pk})
    assert document["params"]["directory"] == disk.directory
    assert "filename" not in document["params"]
    assert list(document["axes"]) == ["bs", "rw"]  # volumes are striped only when provisioned
    assert document["params"]["size"] == "5G"  # the study's size


def test_template_study_preset_of_s4_is_sysbench_1x_at_real_size(owner_client, team, stored):
    template = get_template("s4-managed-mysql-threads")
    document = bound(team, template, "study", **{"rds-mysql": stored.pk, "galera-3node": stored.pk})
    assert "sysbench_version" not in document
    assert document["params"] == {"test": "oltp_read_write", "table_size": 1000000, "time": 120}
    assert document["axes"]["threads"] == [4, 16, 64, 128, 256]


def test_template_refuses_another_teams_target(owner_client, team, outsider):
    foreign = make_target(outsider.teams.first(), name="theirs")
    template = get_template("s5-myisam-update")
    html = owner_client.get(bind_url(template, **{"m2-4xlarge": foreign.pk})).content.decode()
    assert "Select a valid choice" in html
    assert 'name="role-m2-4xlarge"' in html  # still the role form, not the builder


def test_builder_fio_on_a_host_target_defaults_to_its_directory(owner_client, team, disk):
    data = {
        "name": "disk-io",
        "tool": "fio",
        "targets": ["disk"],
        "repeat": "1",
        "order": "sequential",
        "extra": "",
        "param-fio-rw": "randread",
        "param-fio-size": "4M",
    }
    assert owner_client.post("/plans/new/", data).status_code == 302
    assert Plan.objects.get(name="disk-io").document["params"]["directory"] == disk.directory


def test_edit_round_trips_a_saved_plan(owner_client, team, plan):
    form = PlanForm(initial=initial_from_document(plan.document, team), team=team)
    data = form_data(form)
    assert data["targets"] == ["local-mariadb"]  # the stored target stays a reference
    data["axis-1-values"] = "1, 2, 4"
    assert owner_client.post(f"/plans/{plan.pk}/edit/", data).status_code == 302
    plan.refresh_from_db()
    assert plan.document["axes"]["concurrency"] == [1, 2, 4]
    assert (
        load_plan(plan.document).params
        == load_plan(
            DEMO | {"targets": [{"name": "local-mariadb", "kind": "mysql", "host": "127.0.0.1"}]}
        ).params
    )


def test_yaml_mode_saves_the_document(owner_client, team, plan):
    text = yaml.safe_dump({**plan.document, "repeat": 3})
    response = owner_client.post(f"/plans/{plan.pk}/edit/", {"mode": "yaml", "text": text})
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.document["repeat"] == 3


def test_yaml_mode_errors_name_the_key(owner_client, plan):
    text = yaml.safe_dump({**plan.document, "axes": {"concurrency": [0]}})
    html = owner_client.post(
        f"/plans/{plan.pk}/edit/", {"mode": "yaml", "text": text}
    ).content.decode()
    assert "axes.concurrency[0]: 0 is not allowed" in html


def test_import_paste_and_upload(owner_client, team, stored):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = owner_client.post("/plans/import/", {"text": yaml.safe_dump(DEMO)})
    assert response.status_code == 302
    upload = SimpleUploadedFile("p.yaml", yaml.safe_dump({**DEMO, "name": "uploaded"}).encode())
    assert owner_client.post("/plans/import/", {"file": upload}).status_code == 302
    assert set(team.plans.values_list("name", flat=True)) == {"demo-mysqlslap", "uploaded"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "Paste a plan or choose a file"),
        ("- a\n- b", "A plan is a mapping"),
        ("name: x\ntool: nope", "tool: "),
        ("name: [x", "not valid YAML"),
        (
            "name: x\ntool: mysqlslap\ntargets: [{name: a, host: h, password: s3cret}]",
            "secrets are never inline",
        ),
    ],
)
def test_import_errors(owner_client, stored, text, message):
    response = owner_client.post("/plans/import/", {"text": text})
    assert response.status_code == 200 and message in response.content.decode()


def test_export_is_the_plan_file(member_client, plan):
    response = member_client.get(f"/plans/{plan.pk}/yaml/")
    assert response["Content-Disposition"] == 'attachment; filename="demo-mysqlslap.yaml"'
    assert load_plan(response.content.decode()) == load_plan(plan.document)


def test_export_and_pages_never_hold_secrets(owner_client, team):
    cred = make_credential(team)
    make_target(team, credential=cred)
    plan = save_plan(team, DEMO)
    for url in (f"/plans/{plan.pk}/yaml/", f"/plans/{plan.pk}/", f"/plans/{plan.pk}/edit/"):
        response = owner_client.get(url)
        assert_no_canary(response)
    assert "credential: db-pw" in owner_client.get(f"/plans/{plan.pk}/yaml/").content.decode()


def test_clone_opens_the_copy_in_the_builder(owner_client, team, plan):
    response = owner_client.post(f"/plans/{plan.pk}/clone/")
    copy = Plan.objects.get(name="demo-mysqlslap (copy)")
    assert response.url == f"/plans/{copy.pk}/edit/"
    assert load_plan(copy.document).axes == load_plan(plan.document).axes


def test_delete_keeps_runs(owner_client, team, plan):
    from benchapp.runs.orchestration import start_run

    run = start_run(team, plan.document, plan=plan)
    assert owner_client.post(f"/plans/{plan.pk}/delete/").status_code == 302
    assert not Plan.objects.filter(pk=plan.pk).exists() and Run.objects.filter(pk=run.pk).exists()


def test_run_now_starts_a_run_and_opens_it(member_client, member, plan):
    response = member_client.post(f"/plans/{plan.pk}/run/")
    run = Run.objects.get(plan=plan)
    assert response.url == f"/runs/{run.pk}/"
    assert (run.created_by, run.cells.count(), run.origin) == (member, 4, "manual")


def test_run_now_refused_plan_shows_why(owner_client, plan, settings):
    settings.BENCHBOARD_CELL_LIMIT = 2
    response = owner_client.post(f"/plans/{plan.pk}/run/", follow=True)
    assert "This plan cannot start" in response.content.decode()
    assert not Run.objects.exists()


def test_builder_makes_adaptive_repeats_and_edits_them_back(owner_client, team, stored):
    response = owner_client.post(
        "/plans/new/",
        builder_data(
            team,
            **{
                "name": "adaptive",
                "repeat": "3",
                "repeat_until_cv": "0.03",
                "repeat_max": "10",
                "repeat_metric": "qps",
            },
        ),
    )
    plan = Plan.objects.get(team=team, name="adaptive")
    assert response.url == f"/plans/{plan.pk}/"
    assert plan.document["repeat"] == {"min": 3, "until_cv": 0.03, "max": 10, "metric": "qps"}
    assert count_cells(load_plan(plan.document)) == 40  # max per combination
    form = PlanForm(initial=initial_from_document(plan.document, team), team=team)
    data = form_data(form)
    assert (data["repeat"], data["repeat_until_cv"], data["repeat_max"], data["repeat_metric"]) == (
        "3",
        "0.03",
        "10",
        "qps",
    )
    assert owner_client.post(f"/plans/{plan.pk}/edit/", data).status_code == 302
    plan.refresh_from_db()
    assert plan.document["repeat"]["metric"] == "qps"


@pytest.mark.parametrize(
    "over,field,message",
    [
        (
            {"repeat_until_cv": "0.03", "repeat_max": "10", "repeat_metric": "tps"},
            "repeat_metric",
            "not a metric of this tool",
        ),
        ({"repeat_until_cv": "0.03", "repeat_metric": "qps"}, "repeat_max", "required"),
        (
            {"repeat": "5", "repeat_until_cv": "0.03", "repeat_max": "4", "repeat_metric": "qps"},
            "repeat_max",
            "less than min",
        ),
        (
            {"repeat": "1", "repeat_until_cv": "0.03", "repeat_max": "4", "repeat_metric": "qps"},
            "repeat",
            "between 2 and 100",
        ),
        (
            {"repeat_until_cv": "2", "repeat_max": "4", "repeat_metric": "qps"},
            "repeat_until_cv",
            "fraction between 0 and 1",
        ),
    ],
)
def test_builder_adaptive_repeat_errors_are_inline(
    owner_client, team, stored, over, field, message
):
    response = owner_client.post("/plans/new/", builder_data(team, **{"repeat": "3", **over}))
    html = response.content.decode()
    assert response.status_code == 200 and not Plan.objects.exists()
    start = html.index(f'id="field-{field}"')
    assert "has-error" in html[start - 40 : start] and message in html[start : start + 3000]
