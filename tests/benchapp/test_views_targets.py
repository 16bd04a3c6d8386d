"""Targets pages: scoping, CRUD, validation, test connection (real MariaDB,
real sshd) and trust on first use."""

import pytest

from benchapp.models import Credential, Target
from tests.benchapp.ui_data import assert_no_canary, make_credential, make_target
from tests.support.sshd import sshd  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def target(team):
    return make_target(team, credential=None)


def valid_post(**over):
    data = {"name": "db1", "kind": "mysql", "host": "127.0.0.1", "port": "3306", "user": "root",
            "database": "", "ssh_port": "22", "provision": "", "nodes": ""}
    return {**data, **over}


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_target_pages_for_team_members(request, persona, target):
    client = request.getfixturevalue(persona)
    assert target.name in client.get("/targets/").content.decode()
    for url in (f"/targets/{target.pk}/", f"/targets/{target.pk}/edit/", "/targets/new/"):
        assert client.get(url).status_code == 200, url


def test_target_list_outsider_sees_own_team_only(outsider_client, target):
    response = outsider_client.get("/targets/")
    assert target.name not in response.content.decode()
    assert "No targets yet" in response.content.decode()


@pytest.mark.parametrize("method,url", [
    ("get", "/targets/{pk}/"), ("get", "/targets/{pk}/edit/"), ("post", "/targets/{pk}/edit/"),
    ("post", "/targets/{pk}/delete/"), ("post", "/targets/{pk}/test/"),
    ("post", "/targets/{pk}/accept-key/")])
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
    response = owner_client.post("/targets/new/", valid_post(price_per_hour="0.25"))
    target = Target.objects.get(team=team, name="db1")
    assert response.url == f"/targets/{target.pk}/"
    assert (target.host, target.port, str(target.price_per_hour)) == ("127.0.0.1", 3306, "0.2500")


def test_target_create_errors_inline(owner_client, target):
    response = owner_client.post("/targets/new/", valid_post(name="local-mariadb", host=""))
    html = response.content.decode()
    assert response.status_code == 200
    assert "already has a target with this name" in html
    assert "A database target needs a host" in html


def test_target_create_refuses_bad_host_through_plan_rules(owner_client):
    response = owner_client.post("/targets/new/", valid_post(host="db;rm -rf"))
    assert response.status_code == 200 and "has-error" in response.content.decode()
    assert not Target.objects.filter(name="db1").exists()


def test_target_credential_choices_are_team_scoped(owner_client, team, outsider):
    other = make_credential(outsider.teams.first(), name="foreign")
    response = owner_client.post("/targets/new/", valid_post(credential=str(other.pk)))
    assert "Select a valid choice" in response.content.decode()


def test_target_provision_yaml_round_trips(owner_client, team):
    owner_client.post("/targets/new/", valid_post(
        name="rds", host="", provision="{provider: aws_rds, engine: mysql, instance_class: db.t3.micro}"))
    target = Target.objects.get(name="rds")
    assert target.provision["instance_class"] == "db.t3.micro"
    assert "db.t3.micro" in owner_client.get(f"/targets/{target.pk}/edit/").content.decode()


def test_target_edit_and_delete(member_client, target):
    member_client.post(f"/targets/{target.pk}/edit/", valid_post(name="renamed"))
    target.refresh_from_db()
    assert target.name == "renamed"
    assert member_client.post(f"/targets/{target.pk}/delete/").status_code == 302
    assert not Target.objects.filter(pk=target.pk).exists()


def test_target_test_connection_reads_mariadb_facts(owner_client, target):
    response = owner_client.post(f"/targets/{target.pk}/test/")
    html = response.content.decode()
    assert "Connected from this server" in html, html[html.find("<main"):][:2000]
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
    target = make_target(team, name="box", kind="host", host="127.0.0.1", port=None,
                         ssh_host="127.0.0.1", ssh_port=sshd.port, ssh_user="root",
                         ssh_credential=key)
    from runners.executors import ssh

    expected = ssh.fingerprint(ssh.parse_key_line(sshd.host_key))
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
    Membership.objects.create(team=second, user=owner)
    make_target(second, name="beta-db")
    html = owner_client.get("/targets/").content.decode()
    assert "local-mariadb" in html and "beta-db" not in html
    owner_client.post("/team/switch/", {"team": second.pk, "next": "/targets/"})
    html = owner_client.get("/targets/").content.decode()
    assert "beta-db" in html and "local-mariadb" not in html
    owner_client.post("/targets/new/", valid_post(name="made-in-beta"))
    assert Target.objects.get(name="made-in-beta").team == second


def test_target_test_connection_of_a_provisioned_target(owner_client, team):
    target = make_target(team, name="rds", host="", provision={"provider": "aws_rds"})
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "provisioned when a run starts" in html
