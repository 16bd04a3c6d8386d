"""The fio "Permission denied" predicted before any run, in a real browser:
Test connection on a host target whose directory the sandbox user cannot
write names the fix, and a plan saved for that target says on its page that
it is likely to fail, with the same fix."""

import os
import shutil
import tempfile

import pytest

from tests.benchapp.ui_data import make_target
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def root_dir():
    """A directory an operator gave the target, owned by root, mode 0755."""
    path = tempfile.mkdtemp(prefix="bb-e2e-perm-", dir="/var/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_fio_permission_is_shown_before_the_run(page, live_server, owner, team, root_dir, settings):  # noqa: F811
    user = settings.BENCHBOARD_SANDBOX_USER
    fix = f"Fix: chown {user} {root_dir}"
    target = make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        directory=root_dir,
        data_dirs=[root_dir],
    )
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/targets/{target.pk}/")
    page.click("text=Test connection")
    page.wait_for_load_state("networkidle")
    assert fix in page.inner_text("main")

    page.goto(f"{live_server.url}/plans/import/")
    page.fill("#id_text", PLAN.format(directory=root_dir))
    page.click("main button[type=submit]")
    page.wait_for_url(f"{live_server.url}/plans/*/")
    warning = page.locator("ul.messages li.warning").inner_text()
    assert warning.startswith("Likely to fail: targets[0]: target disk failed its last connection")
    assert f"the sandbox user {user} cannot write {root_dir}" in warning
    assert fix in warning
    screenshot(page, "fio-permission-predicted")


PLAN = """\
name: disk-read
tool: fio
targets: [{{name: disk}}]
client: {{on: target}}
params: {{filename: {directory}/testfio, size: 16M, bs: 4k, rw: read, runtime: 1}}
"""
