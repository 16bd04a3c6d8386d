"""The Debian package list is generated from the registries and is the only one."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from runners import packages
from runners.providers import aws_ec2
from runners.tools import TOOLS

ROOT = Path(__file__).resolve().parents[2]
# Files that install packages and must take them from the generated list.
INSTALLERS = ["Dockerfile", "docker-compose.yml", "scripts/system-packages.sh"]


def test_generated_package_list_is_current():
    """`python -m runners packages --debian` writes what is committed."""
    printed = subprocess.run(
        [sys.executable, "-m", "runners", "packages", "--debian"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == (ROOT / packages.GENERATED).read_text()


def test_every_tool_package_and_the_sandbox_are_listed():
    listed = (ROOT / packages.GENERATED).read_text().split()
    for module in TOOLS.values():
        assert module.PACKAGE in listed
    assert "bubblewrap" in listed


@pytest.mark.parametrize("path", INSTALLERS)
def test_installers_read_the_generated_list_and_name_no_tool_package(path):
    text = (ROOT / path).read_text()
    assert "debian-packages.txt" in text
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for name in packages.worker_packages():
        assert not re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w.-])", text), (path, name)


def test_ec2_hosts_install_every_tool():
    assert set(packages.host_packages()) <= set(aws_ec2.PACKAGES)


def test_system_packages_script_reads_the_list(tmp_path):
    """The install script, run as a non-root user with everything present, exits 0;
    its TOOLS line expands to the generated list (bash -x shows the assignment)."""
    trace = subprocess.run(
        ["bash", "-x", str(ROOT / "scripts/system-packages.sh"), "--tools"],
        capture_output=True,
        text=True,
    )
    assigned = [line for line in trace.stderr.splitlines() if "TOOLS=" in line]
    assert assigned, trace.stderr
    for name in packages.worker_packages():
        assert name in assigned[0]
