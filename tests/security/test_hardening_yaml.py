"""YAML aliases are refused in plan documents at every entry point, before
anything is expanded (a 400-byte alias bomb would otherwise expand to
billions of nodes), and oversized documents are refused before parsing."""

import subprocess
import sys

import pytest
import yaml
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runners import safeyaml
from runners.errors import ValidationError
from runners.plan import load_plan

BOMB = "name: bomb\ntool: mysqlslap\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n"
    for i in range(8)
)

PLAN = (
    "name: ok\ntool: mysqlslap\ntargets: [{name: local, kind: mysql, host: 127.0.0.1, "
    "user: root}]\nparams: {auto_generate_sql: true}\n"
)


def test_the_bomb_is_small_and_plain_yaml_would_expand_it():
    assert len(BOMB) < 700
    assert yaml.safe_load("a: &a [1, 2]\nb: [*a, *a]\n")["b"] == [[1, 2], [1, 2]]


def test_loader_refuses_aliases_and_names_the_line():
    with pytest.raises(safeyaml.AliasRefused) as exc:
        safeyaml.load(BOMB)
    assert "aliases" in exc.value.problem and exc.value.problem_mark.line == 3
    assert safeyaml.load(PLAN)["name"] == "ok"
    assert safeyaml.load("a: &x 1\n")["a"] == 1  # an anchor alone expands nothing


def test_loader_refuses_oversized_documents():
    text = "a: " + "x" * safeyaml.MAX_DOCUMENT_BYTES
    with pytest.raises(safeyaml.DocumentTooLarge, match="the limit is"):
        safeyaml.load(text)


def test_load_plan_refuses_the_bomb():
    with pytest.raises(ValidationError, match="aliases .* are not allowed"):
        load_plan(BOMB)


def test_cli_refuses_the_bomb(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    result = subprocess.run(
        [sys.executable, "-m", "runners", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "aliases" in result.stdout + result.stderr


def test_import_page_refuses_the_bomb(owner_client, team):
    response = owner_client.post("/plans/import/", {"text": BOMB})
    assert response.status_code == 200
    assert "aliases (*name) are not allowed" in response.content.decode()
    assert not team.plans.exists()


def test_yaml_edit_mode_refuses_the_bomb(owner_client, team, owner):
    assert owner_client.post("/plans/import/", {"text": PLAN}).status_code == 302
    plan = team.plans.get()
    response = owner_client.post(f"/plans/{plan.pk}/edit/", {"mode": "yaml", "text": BOMB})
    assert "aliases (*name) are not allowed" in response.content.decode()
    plan.refresh_from_db()
    assert plan.name == "ok"


@pytest.mark.parametrize("path", ["/api/plans/", "/api/runs/"])
def test_api_refuses_the_bomb(owner, team, path):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    response = api.post(path, {"document": BOMB}, format="json")
    assert response.status_code == 400
    assert "aliases" in str(response.json())
    assert not team.plans.exists()
