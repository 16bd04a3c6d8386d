"""Targets pages: scoping, CRUD, validation, test connection (real MariaDB,
real sshd) and trust on first use."""

import pytest

from benchapp.models import Credential, Target
from tests.benchapp.ui_data import assert_no_canary, make_credential, make_target, target_post
from tests.support.sshd import sshd  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def target(team):
    return make_target(team, credential=None)


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_target_pages_for_team_members(request, persona, target):
    client = request.getfixturevalue(persona)
    assert target.name in client.get("/targets/").content.decode()
    editing = 200 if persona == "owner_client" else 403  # editing targets is for admins
    for url, status in (
        (f"/targets/{target.pk}/", 200),
        (f"/targets/{target.pk}/edit/", editing),
        ("/targets/new/", editing),
    ):
        assert client.get(url).status_code == status, url


def test_target_list_outsider_sees_own_team_only(outsider_client, target):
    response = outsider_client.get("/targets/")
    assert target.name not in response.content.decode()
    assert "No targets yet" in response.content.decode()


@pytest.mark.parametrize(
    "method,url",
    [
        ("get", "/targets/{pk}/"),
        ("get", "/targets/{pk}/edit/"),
        ("post", "/targets/{pk}/edit/"),
        ("post", "/targets/{pk}/delete/"),
        ("post", "/targets/{pk}/test/"),
        ("post", "/targets/{pk}/accept-key/"),
    ],
)
def test_target_object_pages_outsider_gets_404(outsider_client, target, method, url):
    assert getattr(outsider_client, method)(url.format(pk=target.pk)).status_code == 404
    assert Target.objects.filter(pk=target.pk).exists()


def test_target_list_query_count(owner_client, team, django_assert_max_num_queries):
    cred = make_credential(team)
    for i in range(20):
        make_target(team, name=f"t{i}", credential=cred, ssh_host="h", ssh_credential=cred)
    with django_assert_max_num_queries(8):
        response = owner_client.get("/targets/")
    assert response.content.decode().count("key not accepted") == 20
    assert_no_canary(response)


def test_target_create(owner_client, team):
    response = owner_client.post("/targets/new/", target_post(price_per_hour="0.25"))
    target = Target.objects.get(team=team, name="db1")
    assert response.url == f"/targets/{target.pk}/"
    assert (target.host, target.port, str(target.price_per_hour)) == ("127.0.0.1", 3306, "0.2500")


def test_target_telemetry_can_be_turned_off_and_plans_carry_it(owner_client, team):
    from benchapp.plans.planning import resolve_stored_targets
    from runners.plan import load_plan

    post = target_post()
    del post["telemetry"]  # the box unticked: a browser sends nothing
    owner_client.post("/targets/new/", post)
    target = Target.objects.get(team=team, name="db1")
    assert target.telemetry is False
    page = owner_client.get(f"/targets/{target.pk}/").content.decode()
    assert 'data-role="telemetry-off"' in page
    doc = resolve_stored_targets({"name": "p", "tool": "mysqlslap", "targets": ["db1"]}, team)
    assert doc["targets"][0]["telemetry"] is False
    assert load_plan(doc).targets[0].telemetry is False

    owner_client.post(f"/targets/{target.pk}/edit/", target_post())
    target.refresh_from_db()
    assert target.telemetry is True
    doc = resolve_stored_targets({"name": "p", "tool": "mysqlslap", "targets": ["db1"]}, team)
    assert "telemetry" not in doc["targets"][0]


def test_target_create_errors_inline(owner_client, target):
    response = owner_client.post("/targets/new/", target_post(name="local-mariadb", host=""))
    html = response.content.decode()
    assert response.status_code == 200
    assert "already has a target with this name" in html
    assert "A database target needs a host" in html


def test_target_create_refuses_bad_host_through_plan_rules(owner_client):
    response = owner_client.post("/targets/new/", target_post(host="db;rm -rf"))
    assert response.status_code == 200 and "has-error" in response.content.decode()
    assert not Target.objects.filter(name="db1").exists()


def test_target_credential_choices_are_team_scoped(owner_client, team, outsider):
    other = make_credential(outsider.teams.first(), name="foreign")
    response = owner_client.post("/targets/new/", target_post(credential=str(other.pk)))
    assert "Select a valid choice" in response.content.decode()


def test_target_provision_yaml_round_trips(owner_client, team):
    owner_client.post(
        "/targets/new/",
        target_post(
            name="rds",
            host="",
            provision="{provider: aws_rds, engine: mysql, instance_class: db.t3.micro,"
            " aws_credential: aws-lab}",
        ),
    )
    target = Target.objects.get(name="rds")
    assert target.provision["instance_class"] == "db.t3.micro"
    assert "db.t3.micro" in owner_client.get(f"/targets/{target.pk}/edit/").content.decode()


def test_target_edit_and_delete(owner_client, target):
    owner_client.post(f"/targets/{target.pk}/edit/", target_post(name="renamed"))
    target.refresh_from_db()
    assert target.name == "renamed"
    assert owner_client.post(f"/targets/{target.pk}/delete/").status_code == 302
    assert not Target.objects.filter(pk=target.pk).exists()


def test_target_test_connection_reads_mariadb_facts(owner_client, target):
    response = owner_client.post(f"/targets/{target.pk}/test/")
    html = response.content.decode()
    assert "Connected from this server" in html, html[html.find("<main") :][:2000]
    assert "server_version" in html and "MariaDB" in html and "mysqlslap" in html


def test_target_test_connection_shows_exact_error(owner_client, team):
    target = make_target(team, name="closed", port=1)
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "Connection failed" in html
    assert "Can&#x27;t connect to server on &#x27;127.0.0.1&#x27;" in html or "(111" in html


def test_target_test_connection_wrong_password_never_shows_it(owner_client, team):
    cred = make_credential(team)
    target = make_target(team, name="pw", credential=cred)
    response = owner_client.post(f"/targets/{target.pk}/test/")
    assert "Access denied" in response.content.decode()
    assert_no_canary(response)


def test_target_trust_on_first_use_then_ssh_facts(owner_client, team, sshd):  # noqa: F811
    key = make_credential(team, name="ssh-key", secret=sshd.client_key, kind=Credential.SSH_KEY)
    target = make_target(
        team,
        name="box",
        kind="host",
        host="127.0.0.1",
        port=None,
        ssh_host="127.0.0.1",
        ssh_port=sshd.port,
        ssh_user="root",
        ssh_credential=key,
    )
    from runners.executors import hostkeys

    expected = hostkeys.fingerprint(hostkeys.parse_key_line(sshd.host_key))
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "Unknown SSH host key" in html and expected in html
    assert owner_client.post(f"/targets/{target.pk}/accept-key/").status_code == 302
    target.refresh_from_db()
    assert target.known_host_key == sshd.host_key
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "Connected from root@127.0.0.1" in html and "Kernel" in html
    assert expected in html
    assert "BEGIN OPENSSH PRIVATE KEY" not in html


def test_target_accept_key_without_test_is_refused(owner_client, team):
    target = make_target(team, name="box", ssh_host="127.0.0.1")
    response = owner_client.post(f"/targets/{target.pk}/accept-key/", follow=True)
    assert "No host key is waiting" in response.content.decode()
    target.refresh_from_db()
    assert target.known_host_key == ""


def test_team_switcher_scopes_the_lists(owner_client, owner, target):
    from benchapp.models import Membership, Team

    second = Team.objects.create(name="beta")
    Membership.objects.create(team=second, user=owner, role=Membership.ADMIN)
    make_target(second, name="beta-db")
    html = owner_client.get("/targets/").content.decode()
    assert "local-mariadb" in html and "beta-db" not in html
    owner_client.post("/team/switch/", {"team": second.pk, "next": "/targets/"})
    html = owner_client.get("/targets/").content.decode()
    assert "beta-db" in html and "local-mariadb" not in html
    owner_client.post("/targets/new/", target_post(name="made-in-beta"))
    assert Target.objects.get(name="made-in-beta").team == second


def test_target_test_connection_of_a_provisioned_target(owner_client, team):
    target = make_target(team, name="rds", host="", provision={"provider": "aws_rds"})
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "provisioned when a run starts" in html


# -- every kind creatable (issue 17) ---------------------------------------------------


def test_target_create_host_needs_its_directory(owner_client):
    html = owner_client.post(
        "/targets/new/", target_post(name="disk", kind="host", host="", port="", user="")
    ).content.decode()
    assert "A host target needs the directory the tools work in." in html
    assert not Target.objects.filter(name="disk").exists()


def test_target_create_local_host_directory_outside_data_dirs_says_operator(owner_client):
    html = owner_client.post(
        "/targets/new/",
        target_post(name="disk", kind="host", host="", port="", user="", directory="/srv/bench"),
    ).content.decode()
    assert (
        "/srv/bench is not inside one of this target&#x27;s data directories (none yet): the "
        "tools may only write on this server where an operator (staff) has allowed it"
    ) in html
    assert not Target.objects.filter(name="disk").exists()


def test_target_host_directory_inside_operator_data_dir_is_saved(owner_client, team, tmp_path):
    target = make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        directory="",
        data_dirs=[str(tmp_path)],
    )
    response = owner_client.post(
        f"/targets/{target.pk}/edit/",
        target_post(
            name="disk", kind="host", host="", port="", user="", directory=f"{tmp_path}/fio"
        ),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    target.refresh_from_db()
    assert (target.directory, target.data_dirs) == (f"{tmp_path}/fio", [str(tmp_path)])
    html = owner_client.get(f"/targets/{target.pk}/").content.decode()
    assert f"{tmp_path}/fio" in html


def test_target_ssh_host_directory_is_a_path_on_that_host(owner_client, team):
    target = make_target(
        team,
        name="box",
        kind="host",
        host="10.0.0.5",
        port=None,
        user="",
        allow_custom_scripts=True,
    )
    response = owner_client.post(
        f"/targets/{target.pk}/edit/",
        target_post(
            name="box",
            kind="host",
            host="10.0.0.5",
            port="",
            user="",
            ssh_host="10.0.0.5",
            ssh_user="ops",
            directory="/data/fio",
            allow_custom_scripts="on",
        ),
    )  # the box as shown
    assert response.status_code == 302, response.content.decode()[:3000]
    target.refresh_from_db()
    assert target.directory == "/data/fio"


@pytest.mark.parametrize(
    "directory,message",
    [
        ("data/fio", "An absolute path"),
        ("/srv/../etc", "An absolute path"),
        ("/etc", "/etc is a system directory"),
    ],
)
def test_target_directory_refuses_bad_paths(owner_client, directory, message):
    html = owner_client.post(
        "/targets/new/",
        target_post(name="disk", kind="host", host="", port="", user="", directory=directory),
    ).content.decode()
    assert message in html
    assert not Target.objects.filter(name="disk").exists()


@pytest.mark.parametrize(
    "kind,port", [("redis", "6380"), ("postgres", "5433")]
)  # not the app's own
def test_target_create_every_database_kind(owner_client, team, kind, port):
    response = owner_client.post(
        "/targets/new/", target_post(name="db", kind=kind, host="127.0.0.1", port=port, user="")
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Target.objects.get(team=team, name="db").kind == kind


def test_api_creates_a_host_target_with_its_directory(owner_client, team, tmp_path):
    from rest_framework.test import APIClient

    from benchapp.models import Membership

    user = Membership.objects.filter(team=team).first().user
    client = APIClient()
    client.force_authenticate(user)
    refused = client.post(
        "/api/targets/", {"name": "disk", "kind": "host", "directory": "/srv/bench"}, format="json"
    )
    assert refused.status_code == 400
    assert "an operator (staff) has allowed it" in str(refused.json())


def test_target_link_speed_and_cloud_instance_round_trip_into_plans(owner_client, team):
    from benchapp.plans.planning import resolve_stored_targets
    from runners.plan import load_plan

    cloud = "{provider: aws_rds, db_instance: shop-db-1, region: eu-west-1, aws_credential: aws}"
    response = owner_client.post("/targets/new/", target_post(link_mbit="50", cloud_instance=cloud))
    assert response.status_code == 302, response.content.decode()[:3000]
    target = Target.objects.get(team=team, name="db1")
    assert target.link_mbit == 50
    assert target.cloud_instance["db_instance"] == "shop-db-1"
    page = owner_client.get(f"/targets/{target.pk}/").content.decode()
    assert "50 Mb/s" in page and "shop-db-1" in page
    assert "shop-db-1" in owner_client.get(f"/targets/{target.pk}/edit/").content.decode()
    doc = resolve_stored_targets({"name": "p", "tool": "mysqlslap", "targets": ["db1"]}, team)
    spec = load_plan(doc).targets[0]
    assert spec.link_mbit == 50
    assert spec.cloud_instance == {
        "provider": "aws_rds",
        "db_instance": "shop-db-1",
        "region": "eu-west-1",
        "aws_credential": "aws",
    }


@pytest.mark.parametrize(
    "cloud, message",
    [
        ("{provider: aws_rds}", "the DB instance identifier"),
        ("{provider: aws_rds, db_instance: db-1, zone: a}", "unknown key"),
        ("{provider: static, db_instance: db-1}", "static has no monitoring to read"),
        ("{provider: nowhere}", "required: one of"),
        ("[aws_rds]", "Expected a mapping"),
    ],
)
def test_target_cloud_instance_is_refused_with_its_reason(owner_client, team, cloud, message):
    response = owner_client.post("/targets/new/", target_post(cloud_instance=cloud))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Target.objects.filter(team=team, name="db1").exists()


def test_api_sets_a_targets_cloud_instance_and_link_speed(owner_client, team):
    from rest_framework.test import APIClient

    from benchapp.models import Membership

    client = APIClient()
    client.force_authenticate(Membership.objects.filter(team=team).first().user)
    body = {"name": "shop", "kind": "mysql", "host": "shop.example", "link_mbit": 1000}
    # A stored target's cloud resource names the team's account (docs/trust-model.md).
    cloud = {"provider": "aws_rds", "db_instance": "shop-db-1", "aws_credential": "aws-lab"}
    unnamed = {"provider": "aws_rds", "db_instance": "shop-db-1"}
    refused = client.post("/api/targets/", {**body, "cloud_instance": unnamed}, format="json")
    assert refused.status_code == 400 and "aws_credential" in str(refused.json())
    created = client.post("/api/targets/", {**body, "cloud_instance": cloud}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["cloud_instance"] == cloud
    assert created.json()["link_mbit"] == 1000
    refused = client.patch(
        f"/api/targets/{created.json()['id']}/",
        {"cloud_instance": {"provider": "aws_rds", "db_instance": "1-bad", "aws_credential": "x"}},
        format="json",
    )
    assert refused.status_code == 400
    assert "DB instance identifier" in str(refused.json())
    assert Target.objects.get(name="shop").cloud_instance == cloud


@pytest.mark.parametrize(
    "fields",
    [
        {"host": "db;rm -rf"},  # the plan validator's rule
        {"name": "local-mariadb", "host": ""},  # the name taken, and no host
        {"kind": "host", "host": "", "port": "", "user": "", "directory": "/etc"},
        {"kind": "host", "host": "", "port": "", "user": "", "directory": "/srv/bench"},
        {"data_dirs": "/srv/bench"},  # an operator's field, set by a team owner
    ],
)
def test_api_and_form_refuse_a_bad_target_with_the_same_message(owner, team, target, fields):
    """One set of rules (benchapp.plans.targetrules): the page's form and the API
    refuse the same target naming the same fields with the same messages."""
    from rest_framework.test import APIClient

    from benchapp.web.forms_targets import TargetForm

    post = target_post(**fields)
    form = TargetForm(post, team=team, user=owner)
    assert not form.is_valid()
    client = APIClient()
    client.force_authenticate(owner)
    body = {k: v for k, v in post.items() if v != ""}
    if "data_dirs" in body:
        body["data_dirs"] = body["data_dirs"].split(",")
    response = client.post("/api/targets/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {field: list(messages) for field, messages in form.errors.items()}
    assert not Target.objects.exclude(pk=target.pk).exists()
