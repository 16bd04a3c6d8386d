"""Table checksums before each measure of a snapshot-restoring plan, run
inline against a private mariadbd that the plan's commands stop and start."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runners.cell import run_cell
from runners.checksums import differences
from runners.context import CellContext
from runners.errors import ValidationError
from runners.plan import expand, load_plan
from tests.support.private_services import scripted_mariadb  # noqa: F401


def test_differences_name_each_changed_table():
    assert differences({"a": "1", "b": "2"}, {"a": "1", "b": "2"}) == []
    assert differences({"a": "1", "b": "2"}, {"a": "9", "c": "3"}) == [
        "a: 1 -> 9",
        "b: 2 -> absent",
        "c: absent -> 3",
    ]


def _plan(server, **prepare):
    return load_plan(
        {
            "name": "snap",
            "tool": "sysbench",
            "targets": [
                {
                    "name": "db",
                    "kind": "mysql",
                    "host": "127.0.0.1",
                    "port": server.port,
                    "user": "root",
                    "database": "bench",
                }
            ],
            "params": {"test": "oltp_insert", "tables": 1, "table_size": 200, "time": 1},
            "axes": {"threads": [1, 2]},
            "prepare": {
                "once": True,
                "snapshot_datadir": True,
                "datadir": str(server.datadir),
                "snapshot_dir": str(server.snapshot),
                "service_manager": "command",
                "stop_command": ["sh", str(server.stop_script)],
                "start_command": ["sh", str(server.start_script)],
                **prepare,
            },
            "timeout": 120,
        }
    )


def test_a_cell_whose_data_is_not_the_snapshots_fails(scripted_mariadb):  # noqa: F811
    plan = _plan(scripted_mariadb)
    first, second = expand(plan)
    with CellContext(plan) as ctx:
        one = run_cell(plan, first, ctx)
        assert one.status == "succeeded", one.error
        reference = one.facts["data_checksums"]
        assert set(reference) == {"sbtest1"}
        ctx.checksums["db"] = {"sbtest1": "12345"}  # as if the restore had brought other data
        two = run_cell(plan, second, ctx)
    assert two.status == "failed"
    assert two.error == (
        f"the data differs from the snapshot's: sbtest1: 12345 -> {reference['sbtest1']}"
    )  # the restore did bring back the snapshot
    assert "measure" not in [p.phase for p in two.phases]


@pytest.mark.parametrize(
    "prepare, message",
    [
        ({"stop_command": "sh stop.sh"}, "expected a list of arguments"),
        ({"service_manager": "systemctl"}, "goes with stop_command"),
        ({"stop_command": []}, "goes with stop_command"),
    ],
)
def test_command_service_manager_is_validated(tmp_path, prepare, message):
    paper = SimpleNamespace(
        port=3307,
        datadir=tmp_path / "d",
        snapshot=tmp_path / "s",
        stop_script=tmp_path / "stop.sh",
        start_script=tmp_path / "start.sh",
    )
    with pytest.raises(ValidationError, match=message):
        _plan(paper, **prepare)
