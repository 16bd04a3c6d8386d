"""Pre-run checks at plan save (benchapp.plans.prerun), against real services: a real
MariaDB with max_connections lowered and read by a real connection test, the
sandbox's path rules, the team's credentials, name resolution."""

import os
import pwd
import shutil
import subprocess
import tempfile

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.models import Credential, Plan
from benchapp.plans.planning import PlanRefused, check_untrusted
from tests.benchapp.ui_data import make_credential, make_target
from tests.support.dbtargets import mariadb_database, mariadb_sql  # noqa: F401
from tests.support.private_services import private_mariadb  # noqa: F401
from tests.support.sshd import sshd  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return client


def sysbench(threads, target="small-db", **extra):
    return {
        "name": "oltp",
        "tool": "sysbench",
        "targets": [{"name": target}],
        "params": {"test": "oltp_read_only", "table_size": 100, "time": 1},
        "axes": {"threads": threads},
        **extra,
    }


@pytest.fixture
def small_db(team, owner_client, private_mariadb):  # noqa: F811
    """A target on a private MariaDB that accepts 20 connections, tested once."""

    subprocess.run(
        [
            "mariadb",
            "-h127.0.0.1",
            f"-P{private_mariadb.port}",
            "-uroot",
            "-e",
            "SET GLOBAL max_connections = 20; CREATE DATABASE sbtest",
        ],
        check=True,
        timeout=30,
    )
    target = make_target(team, name="small-db", port=private_mariadb.port, database="sbtest")
    assert owner_client.post(f"/targets/{target.pk}/test/").status_code == 200
    target.refresh_from_db()
    return target


def test_connection_test_stores_max_connections(small_db):
    assert small_db.last_check_ok is True
    assert small_db.last_check_facts["db"]["max_connections"] == 20


def test_threads_above_max_connections_are_refused_at_save(api, small_db):
    response = api.post("/api/plans/", {"document": sysbench([4, 100])}, format="json")
    assert response.status_code == 400
    (message,) = response.json()["document"]
    assert message == (
        "axes.threads: threads 100 opens 100 connections to small-db, whose server accepts 20 "
        "(max_connections at its last connection test). Lower threads to at most 20, or raise "
        "max_connections on the server (SET GLOBAL max_connections = N) and test the "
        "connection of small-db again."
    )
    assert not Plan.objects.exists()


def test_threads_near_max_connections_are_saved_with_a_warning(api, small_db):
    response = api.post("/api/plans/", {"document": sysbench([4, 18])}, format="json")
    assert response.status_code == 201
    (warning,) = response.json()["warnings"]
    assert warning.startswith("axes.threads: threads 18 takes 18 of the 20 connections small-db")
    assert "Lower threads to at most 16" in warning
    ok = api.post("/api/plans/", {"document": sysbench([4, 16])}, format="json")
    assert ok.status_code == 201 and ok.json()["warnings"] == []


def test_raising_the_limit_and_testing_again_lifts_the_refusal(
    api,
    owner_client,
    small_db,
    private_mariadb,  # noqa: F811
):

    assert api.post("/api/plans/", {"document": sysbench([100])}, format="json").status_code == 400
    subprocess.run(
        [
            "mariadb",
            "-h127.0.0.1",
            f"-P{private_mariadb.port}",
            "-uroot",
            "-e",
            "SET GLOBAL max_connections = 200",
        ],
        check=True,
        timeout=30,
    )
    owner_client.post(f"/targets/{small_db.pk}/test/")
    assert api.post("/api/plans/", {"document": sysbench([100])}, format="json").status_code == 201


def test_the_limit_is_real(small_db, private_mariadb):  # noqa: F811
    """What the refusal predicts: 30 connections at once to that server fail
    (mysqlslap says so on stderr, though it exits 0)."""

    done = subprocess.run(
        [
            "mysqlslap",
            "-h127.0.0.1",
            f"-P{private_mariadb.port}",
            "-uroot",
            "--concurrency=30",
            "--query=SELECT SLEEP(1)",
            "--create-schema=mysql",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "1040 - Too many connections" in done.stderr


def test_password_env_is_refused_at_save(api):
    doc = {
        "name": "env",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "t",
                "kind": "mysql",
                "host": "127.0.0.1",
                "user": "root",
                "password_env": "DB_PASSWORD",
            }
        ],
        "params": {"auto_generate_sql": True, "number_of_queries": 10},
    }
    response = api.post("/api/plans/", {"document": doc}, format="json")
    assert response.status_code == 400
    (message,) = response.json()["document"]
    assert message.startswith("targets[0].password_env: password_env (DB_PASSWORD) reads the")
    assert "Store the password under Credentials and write credential: NAME" in message


def fio(filename, target="disk"):
    return {
        "name": "fio",
        "tool": "fio",
        "targets": [{"name": target}],
        "client": {"on": "target"},
        "params": {"filename": filename, "bs": "4k", "size": "1M", "rw": "read", "runtime": 1},
    }


@pytest.mark.parametrize(
    "filename, refused",
    [
        ("/etc/passwd", True),
        ("/srv/bench/../../etc/passwd", True),
        ("/srv/bench/file", False),
        ("relative-file", False),
        ("/tmp/scratch-file", False),  # the sandbox's /tmp is the scratch directory
    ],
)
def test_fio_filename_outside_the_allowed_directories(team, filename, refused):
    make_target(
        team, name="disk", kind="host", host="", port=None, user="", data_dirs=["/srv/bench"]
    )
    if not refused:
        assert check_untrusted(fio(filename), team)[1] == []
        return
    with pytest.raises(PlanRefused) as caught:
        check_untrusted(fio(filename), team)
    assert caught.value.param == "params.filename"
    if ".." not in filename:
        assert caught.value.message == (
            f"'{filename}' is outside the scratch directory and the target's data "
            "directories (/srv/bench); use a relative path. Or ask an operator (staff) to "
            "add the directory to target disk's data directories."
        )


@pytest.fixture
def tested_disk(team, owner_client, sshd):  # noqa: F811
    """A host target reached over SSH (a host of the team's own, where the
    worker's scratch limit does not apply), tested once: its last connection
    test read the directory's free space with df."""
    directory = tempfile.mkdtemp(prefix="bb-free-", dir="/var/tmp")
    os.chown(directory, pwd.getpwnam(sshd.user).pw_uid, -1)
    key = Credential.objects.create(team=team, name="ssh-key", kind=Credential.SSH_KEY)
    key.set_secret(sshd.client_key)
    key.save()
    target = make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        directory=directory,
        ssh_host=sshd.host,
        ssh_port=sshd.port,
        ssh_user=sshd.user,
        ssh_credential=key,
        known_host_key=sshd.host_key,
        data_dirs=[directory],
    )
    assert owner_client.post(f"/targets/{target.pk}/test/").status_code == 200
    target.refresh_from_db()
    assert target.last_check_ok, target.last_check_error
    yield target
    shutil.rmtree(directory, ignore_errors=True)


def test_fio_files_bigger_than_the_free_space_are_refused_with_the_numbers(api, tested_disk):
    directory = tested_disk.directory
    disk = tested_disk.last_check_facts["disk"]
    free = os.statvfs(directory)
    # df's figure is the free space a non-root user may use, as statvfs's f_bavail.
    assert abs(disk["free_bytes"] - free.f_bavail * free.f_frsize) < 2**30
    plan = fio(f"{directory}/testfio")
    plan["params"].update(size="10T", numjobs=2)
    response = api.post("/api/plans/", {"document": plan}, format="json")
    assert response.status_code == 400
    (message,) = response.json()["document"]
    assert message == (
        f"params.size: size 10T × numjobs 2 = 20,480.0 GB of files in {directory} on disk, "
        f"which had {disk['free_bytes'] / 2**30:,.1f} GB free at its last connection test: fio "
        "would stop with 'No space left on device'. Lower size to fit, or free space and test "
        "the connection of disk again."
    )
    plan["params"].update(size="16M", numjobs=1)
    response = api.post("/api/plans/", {"document": plan}, format="json")
    assert response.status_code == 201, response.json()


def test_free_space_is_not_judged_for_files_elsewhere(team, tested_disk):
    """Relative files are in the scratch directory, another file system."""
    plan = fio("relative-file")
    plan["params"]["size"] = "10T"
    assert check_untrusted(plan, team)[1] == []


S5_STUDY = """\
name: myisam-update
tool: mysqlslap
targets: [{name: m2-4xlarge, kind: mysql, host: db.internal, user: scott, credential: scott-pw}]
params: {engine: myisam, auto_generate_sql: true, add_autoincrement: true, number_int_cols: 3,
         number_char_cols: 8, concurrency: 8, auto_generate_sql_execute_number: 10000, load_type: update}
axes:
  auto_generate_sql_write_number: [10000, 1000000]
repeat: 3
"""


def test_s5_study_import_names_the_missing_credential_then_the_unknown_host(owner_client, team):
    page = owner_client.post("/plans/import/", {"text": S5_STUDY})
    assert page.status_code == 200 and not Plan.objects.exists()
    html = page.content.decode()
    assert (
        "targets[0].credential: credential &#x27;scott-pw&#x27; does not exist in team alpha"
        in html
    )
    cred = make_credential(team, name="scott-pw")
    # A stored credential goes only where an admin bound it (docs/trust-model.md).
    page = owner_client.post("/plans/import/", {"text": S5_STUDY})
    assert not Plan.objects.exists()
    assert "is not bound to db.internal:3306" in page.content.decode()
    cred.host_patterns = ["db.internal:3306"]
    cred.save()
    page = owner_client.post("/plans/import/", {"text": S5_STUDY}, follow=True)
    assert Plan.objects.get().name == "myisam-update"
    html = page.content.decode()
    assert "Likely to fail: targets[0].host: host db.internal does not resolve here" in html


def test_failed_last_check_is_a_warning(team):
    make_target(team, name="down", last_check_ok=False, last_check_error="connection refused")
    doc = {**sysbench([1], target="down")}
    warnings = check_untrusted(doc, team)[1]
    assert warnings == [
        "targets[0]: target down failed its last connection test (connection refused). "
        "Fix it and press Test connection on its page."
    ]


def test_operator_plan_files_are_not_checked(team):
    """runplan's plans (origin cli) may use password_env: only the web/API save checks."""
    from benchapp.plans.planning import validate_document

    doc = {
        "name": "env",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "t",
                "kind": "mysql",
                "host": "127.0.0.1",
                "user": "root",
                "password_env": "DB_PASSWORD",
            }
        ],
        "params": {"auto_generate_sql": True, "number_of_queries": 10},
    }
    assert validate_document(doc, team).targets[0].password_env == "DB_PASSWORD"


def test_builder_preview_carries_warnings(owner_client, small_db):
    data = {
        "name": "oltp",
        "tool": "sysbench",
        "targets": ["small-db"],
        "repeat": "1",
        "order": "sequential",
        "param-sysbench-test": "oltp_read_only",
        "param-sysbench-table_size": "100",
        "param-sysbench-time": "1",
        "axis-0-name": "threads",
        "axis-0-values": "4, 18",
    }
    preview = owner_client.post("/plans/preview.json", data).json()
    assert preview["valid"] is True
    assert [w.split(":")[0] for w in preview["warnings"]] == ["axes.threads"]
    data["axis-0-values"] = "4, 100"
    preview = owner_client.post("/plans/preview.json", data).json()
    assert preview["valid"] is False
    assert "whose server accepts 20" in preview["errors"]["axis-0-values"][0]


def test_mysqlslap_drops_an_existing_schema_it_is_pointed_at(mariadb_database):  # noqa: F811
    """The fact scratch_schema rests on, with the real tool: a table in the
    schema named by --create-schema is gone after an auto-generated run."""
    mariadb_sql(f"CREATE TABLE {mariadb_database}.keep (i INT)")
    subprocess.run(
        ["mysqlslap", "-h127.0.0.1", "-uroot", f"--create-schema={mariadb_database}", "-a"]
        + ["--number-of-queries=10", "--concurrency=1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert mariadb_sql(f"SHOW DATABASES LIKE '{mariadb_database}'") == ""


def mysqlslap(**params):
    return {
        "name": "slap",
        "tool": "mysqlslap",
        "targets": [{"name": "local-mariadb"}],
        "params": {"number_of_queries": 10, **params},
    }


@pytest.mark.parametrize(
    "database, params, refused",
    [
        ("bench", {"create_schema": "bench"}, "bench"),
        ("mysqlslap", {}, "mysqlslap"),  # the tool's default schema
        ("bench", {"create_schema": "bb_s1"}, None),
        ("bench", {}, None),
    ],
)
def test_mysqlslap_on_the_targets_own_database_is_refused(team, database, params, refused):
    make_target(team, database=database)
    if refused is None:
        assert check_untrusted(mysqlslap(**params), team)[1] == []
        return
    with pytest.raises(PlanRefused) as caught:
        check_untrusted(mysqlslap(**params), team)
    assert caught.value.param == "params.create_schema"
    assert caught.value.message.startswith(
        f"mysqlslap drops schema {refused} before and after its run, and that is "
        "local-mariadb's database: its tables would be lost."
    )


@pytest.fixture
def slap_db(team, owner_client, private_mariadb):  # noqa: F811
    """A target whose user may create and use only schemas named bb_s...,
    tested once (the test read its grants)."""
    sql = (
        "CREATE USER slap@'%'; GRANT SELECT, INSERT, UPDATE, CREATE, DROP ON `bb\\_s%`.*"
        " TO slap@'%';"
        " GRANT INSERT ON other.* TO slap@'%'"
    )
    subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{private_mariadb.port}", "-uroot", "-e", sql],
        check=True,
        timeout=30,
    )
    target = make_target(team, name="slapdb", port=private_mariadb.port, user="slap")
    assert owner_client.post(f"/targets/{target.pk}/test/").status_code == 200
    target.refresh_from_db()
    assert target.last_check_ok, target.last_check_error
    return target


def slap_as(port: int, schema: str) -> subprocess.CompletedProcess:
    argv = ["mysqlslap", "-h127.0.0.1", f"-P{port}", "-uslap", f"--create-schema={schema}"]
    argv += ["-a", "--number-of-queries=10", "--concurrency=1"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_mysqlslap_schema_rights_are_read_and_predicted(team, slap_db, private_mariadb):  # noqa: F811
    assert slap_db.last_check_facts["db"]["schema_grants"] == [
        {"schema": "*", "privileges": ["USAGE"]},
        {"schema": "other", "privileges": ["INSERT"]},
        {"schema": "bb\\_s%", "privileges": ["SELECT", "INSERT", "UPDATE", "CREATE", "DROP"]},
    ]
    document = {
        "name": "slap",
        "tool": "mysqlslap",
        "targets": [{"name": "slapdb"}],
        "params": {"number_of_queries": 10},
        "axes": {"create_schema": ["bb_s1", "other"]},
    }
    assert check_untrusted(document, team)[1] == [
        "axes.create_schema: user slap may not create and use schema other on slapdb (its "
        "grants at the last connection test), as mysqlslap does. Fix: GRANT CREATE, DROP, "
        "INSERT, SELECT, UPDATE ON `other`.* TO the user, or set create_schema to a schema it "
        "may use, then test the connection again."
    ]
    # The prediction is the tool's own answer.
    assert slap_as(private_mariadb.port, "bb_s1").returncode == 0
    refused = slap_as(private_mariadb.port, "other")
    assert refused.returncode != 0 and "Access denied" in refused.stderr
