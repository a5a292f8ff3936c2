"""`liza_validate` (SPEC §8): `VALID`, or one `INVALID: ...` line per violation, like the
original liza-validate.sh."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_valid_file_is_valid(manage, valid_dir):
    run = manage("liza_validate", file=str(valid_dir / ".liza" / "state.yaml"))

    assert (run.code, run.out_lines) == (0, ["VALID"])


def test_the_seed_example_is_invalid_line_by_line(manage, example_dir):
    run = manage("liza_validate", file=str(example_dir / ".liza" / "state.yaml"))

    assert run.code == 1
    assert len(run.out_lines) == 2
    assert run.out_lines[0] == (
        "INVALID: task-7: CLAIMED task must have lease_expires (lease_expires is missing)"
    )
    assert run.out_lines[1].startswith("INVALID: agent coder-1: No two agents assigned")


def test_now_judges_the_leases_at_that_time(manage, valid_dir):
    # An hour after task-7's lease (16:36) ran out, and long after coder-1's (14:57).
    run = manage(
        "liza_validate", file=str(valid_dir / ".liza" / "state.yaml"), now="2025-01-17T17:36:00Z"
    )

    assert run.code == 1
    assert [line.split(": ")[1] for line in run.out_lines] == ["task-7", "agent coder-1"]
    assert "CLAIMED task must have valid lease_expires" in run.out_lines[0]
    assert "Agent WORKING must have lease_expires in future" in run.out_lines[1]


def test_a_project_is_validated_through_its_export(manage, valid_dir):
    manage("liza_import", str(valid_dir), project="seed")

    assert manage("liza_validate", project="seed").out_lines == ["VALID"]
    late = manage("liza_validate", project="seed", now="2025-01-17T17:36:00Z")
    assert late.code == 1 and len(late.out_lines) == 2


def test_a_file_that_is_not_yaml_is_invalid(manage, tmp_path):
    path = tmp_path / "state.yaml"
    path.write_text("goal: {id: goal-1\ntasks: [\n", encoding="utf-8")

    run = manage("liza_validate", file=str(path))

    assert run.code == 1
    assert len(run.out_lines) == 1
    assert run.out_lines[0].startswith(f"INVALID: {path}: not valid YAML: line ")


def test_a_state_that_is_not_a_mapping_is_invalid(manage, tmp_path):
    path = tmp_path / "state.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")

    run = manage("liza_validate", file=str(path))

    assert run.code == 1
    assert run.out_lines[0].startswith("INVALID: state: ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"project": "nope"}, "no project 'nope'"),
        ({"file": "/nonexistent/state.yaml"}, "/nonexistent/state.yaml: no such file"),
        ({"file": "x.yaml", "now": "tomorrow"}, "--now 'tomorrow' is not an ISO 8601 timestamp"),
    ],
)
def test_bad_arguments_are_clear_errors(manage, options, message):
    run = manage("liza_validate", **options)

    assert run.code == 1
    assert message in run.err and run.out == ""
