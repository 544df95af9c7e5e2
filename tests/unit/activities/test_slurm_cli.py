"""activities/common/slurm_cli.py: parsers fed real sacctmgr/scontrol/sinfo/sbatch output, durations, argv builders.

The outputs in ``slurm_outputs/`` come from a real Slurm 22.05 (see its README for each command).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeclient import ExecOutput
from tenantflow.activities.common.slurm_cli import (
    ACCOUNT_FORMAT,
    Assoc,
    NodeState,
    command_error,
    is_write,
    parse_accounts,
    parse_assocs,
    parse_keyvalues,
    parse_node_states,
    parse_partition,
    parse_pipe,
    parse_sbatch,
    sacctmgr_show,
    sacctmgr_write,
    same_duration,
    text,
    word,
)
from tenantflow.activities.slurm.qos import parse_qos
from tenantflow.activities.smoke.jobs import requeued
from tenantflow.models.durations import duration_minutes

OUTPUTS = Path(__file__).parent / "slurm_outputs"


def output(name: str) -> str:
    return (OUTPUTS / name).read_text()


def test_assocs_of_accounts_and_users() -> None:
    assocs = parse_assocs(output("assoc.txt"))
    assert [(a.account, a.user) for a in assocs] == [
        ("tenant-foo", ""),
        ("ml-team-foo", ""),
        ("ml-team-foo", "alice"),
        ("ml-team-foo", "bob"),
    ]
    top, team, alice, _ = assocs
    assert top == Assoc(
        cluster="production",
        account="tenant-foo",
        parent="root",
        fairshare="300",
        grptres="gres/gpu=64",
        grpjobs="200",
        qos=["interactive-foo", "normal-foo"],
        defaultqos="normal-foo",
    )
    assert team.parent == "tenant-foo" and team.fairshare == "200" and team.grptres == ""
    assert (alice.parent, alice.fairshare, alice.maxjobs, alice.grptresmins) == ("", "parent", "20", "gres/gpu=240000")


def test_qos_lists_are_sorted_whatever_order_slurm_prints() -> None:
    line = output("assoc.txt").splitlines()[0].replace("interactive-foo,normal-foo", "normal-foo,interactive-foo")
    assert "|normal-foo,interactive-foo|" in line
    assert parse_assocs(line)[0].qos == ["interactive-foo", "normal-foo"]


def test_accounts_keep_slurms_lowercased_description() -> None:
    accounts = {a.account: a for a in parse_accounts(output("account.txt"))}
    assert accounts["tenant-foo"].description == "tenant foo"
    assert accounts["ml-team-foo"].description == "tenant foo ml team"
    assert accounts["ml-team-foo"].organization == "tenant-foo"


def test_qos_rows_with_flags_and_walltime_as_slurm_prints_them() -> None:
    qos = {q.name: q for q in parse_qos(output("qos.txt"))}
    assert qos["normal-foo"].limits == {
        "Priority": "100",
        "GrpTRES": "gres/gpu=64",
        "MaxWall": "1-00:00:00",
        "Flags": "DenyOnLimit",
        "PreemptMode": "cluster",
    }
    assert qos["interactive-foo"].limits == {
        "Priority": "200",
        "GrpTRES": "gres/gpu=8",
        "MaxWall": "04:00:00",
        "Flags": "",
        "PreemptMode": "cluster",
    }
    assert {q.description for q in qos.values()} == {"tenantflow:tenant-foo"}


def test_no_rows_parse_to_nothing() -> None:
    assert parse_qos("") == [] and parse_assocs("\n") == []


def test_a_line_with_the_wrong_field_count_is_refused() -> None:
    with pytest.raises(ValueError, match="3 fields, expected 2"):
        parse_pipe("a|b|c\n", ("user", "defaultaccount"))


def test_a_row_ends_at_newline_only() -> None:
    rows = parse_pipe("tenant-foo|Acme\u2028Labs\u0085EU|acme\nml-team-foo|team|acme\n", ACCOUNT_FORMAT)
    assert [row["account"] for row in rows] == ["tenant-foo", "ml-team-foo"]
    assert rows[0]["description"] == "Acme\u2028Labs\u0085EU"


def test_partition_as_scontrol_shows_it() -> None:
    partition = parse_partition(output("partition.txt"))
    assert partition is not None and partition.name == "tenant-foo"
    assert partition.nodes == ["gpu-01", "gpu-02", "gpu-09", "gpu-10", "gpu-11"]
    assert partition.get("AllowAccounts") == "tenant-foo,ml-team-foo"
    assert partition.get("MaxTime") == "1-00:00:00"
    assert partition.get("OverSubscribe") == "EXCLUSIVE"
    assert partition.get("TRES") == "cpu=160,mem=312.50G,node=5,billing=160,gres/gpu=40"
    assert partition.get("NoSuchKey") == ""


def test_an_unknown_partition_is_none() -> None:
    assert parse_partition(output("partition_absent.txt")) is None


def test_a_partition_without_nodes_has_none() -> None:
    partition = parse_partition("PartitionName=empty\n   Nodes=(null) State=UP\n")
    assert partition is not None and partition.nodes == []


def test_job_details_as_key_values() -> None:
    job = parse_keyvalues(output("job.txt"))
    assert job["JobId"] == "1"
    assert job["JobState"] == "COMPLETED"
    assert job["ExitCode"] == "0:0"
    assert job["Partition"] == "tenant-foo"
    assert job["TresPerNode"] == "gres:gpu:1"
    assert job["TRES"] == "cpu=32,node=1,billing=32,gres/gpu=8"


def test_a_job_requeued_after_its_launch_failed_is_told_from_a_pending_one() -> None:
    held = parse_keyvalues(output("job_requeued_held.txt"))
    assert (held["JobState"], held["Reason"], held["Restarts"]) == ("PENDING", "launch_failed_requeued_held", "1")
    assert requeued(held)
    assert not requeued(parse_keyvalues(output("job.txt")))
    assert not requeued({"JobState": "PENDING", "Reason": "Resources", "Restarts": "0"})


def test_node_states_and_which_are_usable() -> None:
    states = parse_node_states(output("sinfo.txt"))
    assert [(s.node, s.state, s.usable) for s in states] == [
        ("gpu-01", "idle", True),
        ("gpu-02", "idle", True),
        ("gpu-09", "idle~", False),
        ("gpu-10", "idle~", False),
        ("gpu-11", "idle~", False),
    ]


@pytest.mark.parametrize(
    ("state", "usable"),
    [
        ("mix", True),
        ("alloc", True),
        ("completing", True),
        ("idle*", False),
        ("down*", False),
        ("drain", False),
        ("drng", False),
        ("alloc#", False),
        ("maint", False),
    ],
)
def test_usable_node_states(state: str, usable: bool) -> None:
    assert NodeState(node="gpu-01", state=state).usable is usable


def test_sbatch_job_id_with_and_without_cluster() -> None:
    assert parse_sbatch(output("sbatch.txt")) == 1
    assert parse_sbatch("4242;production\n") == 4242
    with pytest.raises(ValueError, match="did not print a job id"):
        parse_sbatch("sbatch: error: Batch job submission failed: Invalid account\n")


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        ("24:00:00", 1440),
        ("1-00:00:00", 1440),
        ("04:00:00", 240),
        ("90", 90),
        ("1:30", 2),
        ("2-12", 3600),
        ("00:00:30", 1),
        ("UNLIMITED", None),
        ("infinite", None),
    ],
)
def test_durations_in_minutes_seconds_rounding_up(value: str, minutes: int | None) -> None:
    assert duration_minutes(value) == minutes


def test_slurms_normalised_duration_equals_the_contracts() -> None:
    assert same_duration("24:00:00", "1-00:00:00")
    assert not same_duration("24:00:00", "23:59:00")


def test_a_bad_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Slurm duration"):
        duration_minutes("one day")


def test_words_and_texts_refuse_separators_and_quotes() -> None:
    assert word("ml-team-foo") == "ml-team-foo" and word(64) == "64"
    assert text("Tenant Foo ML Team") == "Tenant Foo ML Team"
    for bad in ("a b", "a,b", "a=b", "-flag", ""):
        with pytest.raises(ApplicationError):
            word(bad)
    for bad in ("Acme, Inc.", "O'Brien", "a|b", "x=y"):
        with pytest.raises(ApplicationError):
            text(bad)


def test_show_argv_is_parsable_no_header() -> None:
    assert sacctmgr_show("qos", {"names": "a,b"}, ("name", "priority")) == [
        "sacctmgr",
        "-P",
        "-n",
        "show",
        "qos",
        "where",
        "names=a,b",
        "format=name,priority",
    ]
    assert sacctmgr_show("cluster", {}, ("cluster",)) == ["sacctmgr", "-P", "-n", "show", "cluster", "format=cluster"]


def test_write_argv_never_prompts() -> None:
    assert sacctmgr_write("add", "qos", "normal-foo", "Priority=100") == [
        "sacctmgr",
        "-i",
        "add",
        "qos",
        "normal-foo",
        "Priority=100",
    ]
    assert sacctmgr_write("modify", "account", "", "Fairshare=300", where={"name": "tenant-foo"}, set_mode=True) == [
        "sacctmgr",
        "-i",
        "modify",
        "account",
        "where",
        "name=tenant-foo",
        "set",
        "Fairshare=300",
    ]


@pytest.mark.parametrize(
    ("argv", "writes"),
    [
        (["sacctmgr", "-i", "add", "qos", "q"], True),
        (["sacctmgr", "-i", "delete", "user", "where", "name=alice"], True),
        (["sacctmgr", "-P", "-n", "show", "qos"], False),
        (["scontrol", "reconfigure"], True),
        (["scontrol", "show", "partition", "p"], False),
        (["sinfo", "-h"], False),
        ([], False),
    ],
)
def test_which_commands_write(argv: list[str], writes: bool) -> None:
    assert is_write(argv) is writes


def test_a_configuration_read_during_a_swap_is_retried_and_a_refusal_is_not() -> None:
    """A Slurm client that read ``partitions.conf`` while it was swapped stops before doing anything: retryable.
    A refusal of the request itself is final."""
    torn = ExecOutput(stdout="", stderr=(OUTPUTS / "torn_config.txt").read_text(), exit_code=1)
    error = command_error(["sacctmgr", "-P", "-n", "show", "qos"], torn)
    assert (error.type, error.non_retryable) == ("Unavailable", False)
    refused = ExecOutput(stdout="", stderr=" Nothing new added.\n sacctmgr: error: Invalid account\n", exit_code=1)
    final = command_error(["sacctmgr", "-i", "add", "user", "alice"], refused)
    assert (final.type, final.non_retryable) == ("SlurmCommandFailed", True)
