"""The Dockerfile and docker-compose.yml run web, worker and beat as an
unprivileged user (no Docker engine here: the files are read and checked)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_dockerfile_ends_as_an_unprivileged_user():
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    users = [ln.split(None, 1)[1] for ln in lines if ln.startswith("USER ")]
    assert users, "the Dockerfile has no USER directive"
    assert users[-1].split(":")[0] not in ("root", "0")
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"useradd --system --uid 10001", text)
    assert "chown -R benchboard:benchboard /var/lib/benchboard" in text


def test_compose_runs_app_services_as_that_user():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("web", "worker", "beat"):
        user = str(compose["services"][name].get("user", ""))
        assert user == "10001:10001", f"{name} runs as {user or 'the image default'}"
        assert "/var/lib/benchboard" in str(compose["services"][name]["volumes"])
        assert (
            compose["services"][name]["environment"]["BENCHBOARD_VAR_DIR"] == "/var/lib/benchboard"
        )
