"""The lab's real Slurm: the runbook's sacctmgr calls, partitions.conf + reconfigure, and real jobs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tenantflow.lab.daemons.slurm import SlurmCommandError, SlurmHandle

pytestmark = pytest.mark.slurm

ASSOC_FORMAT = "format=account,user,fairshare,grptres,grpjobs,maxjobs,grptresmins,qos,defaultqos"


def assoc_rows(slurm: SlurmHandle, *where: str) -> list[str]:
    out = slurm.run("sacctmgr", "show", "assoc", *where, ASSOC_FORMAT, "-P", "-n").stdout
    return out.splitlines()


def test_cluster_is_registered(slurm: SlurmHandle) -> None:
    out = slurm.run("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster,controlport").stdout
    assert out.strip() == f"production|{slurm.ports.slurmctld}"


def test_runbook_accounts_qos_and_users(slurm: SlurmHandle) -> None:
    run = slurm.run
    run("sacctmgr", "-i", "add", "account", "tenant-foo", "Description=Tenant Foo", "Organization=tenant-foo",
        "Cluster=production", "Fairshare=300", "GrpTRES=gres/gpu=64", "GrpJobs=200")  # fmt: skip
    run("sacctmgr", "-i", "add", "account", "ml-team-foo", "parent=tenant-foo",
        "Description=Tenant Foo ML Team", "Fairshare=200")  # fmt: skip
    run("sacctmgr", "-i", "add", "qos", "normal-foo", "Priority=100", "GrpTRES=gres/gpu=64",
        "MaxWall=24:00:00", "Flags=DenyOnLimit")  # fmt: skip
    run("sacctmgr", "-i", "add", "qos", "interactive-foo", "Priority=200", "GrpTRES=gres/gpu=8",
        "MaxWall=04:00:00", "PreemptMode=OFF")  # fmt: skip
    run("sacctmgr", "-i", "modify", "account", "tenant-foo", "set", "qos=normal-foo,interactive-foo",
        "DefaultQOS=normal-foo")  # fmt: skip
    run("sacctmgr", "-i", "add", "user", "alice", "Account=ml-team-foo", "DefaultAccount=ml-team-foo",
        "Fairshare=parent", "DefaultQOS=normal-foo", "qos=normal-foo,interactive-foo", "MaxJobs=20",
        "GrpTRESMins=gres/gpu=240000")  # fmt: skip
    assert assoc_rows(slurm, "account=tenant-foo", "user=") == [
        "tenant-foo||300|gres/gpu=64|200|||interactive-foo,normal-foo|normal-foo"
    ]
    assert assoc_rows(slurm, "user=alice") == [
        "ml-team-foo|alice|parent|||20|gres/gpu=240000|interactive-foo,normal-foo|normal-foo"
    ]
    with pytest.raises(SlurmCommandError, match="bad qos"):
        run("sacctmgr", "-i", "add", "user", "bob", "Account=ml-team-foo", "qos=normal,interactive")

    run("sacctmgr", "-i", "delete", "user", "alice")
    run("sacctmgr", "-i", "delete", "account", "ml-team-foo")
    run("sacctmgr", "-i", "delete", "account", "tenant-foo")
    run("sacctmgr", "-i", "delete", "qos", "normal-foo,interactive-foo")
    assert assoc_rows(slurm, "account=tenant-foo") == []
    assert "normal-foo" not in run("sacctmgr", "-n", "-P", "show", "qos", "format=name").stdout.split()


def test_gpu_nodes_are_cloud_nodes(slurm: SlurmHandle) -> None:
    out = slurm.run("sinfo", "-h", "-N", "-p", "lab", "-o", "%N %t %G").stdout.splitlines()
    states = {line.split()[0]: line.split()[1] for line in out}
    assert len(states) == 16
    assert {states[n] for n in states if n not in slurm.slurmd_nodes} == {"idle~"}
    assert {states[n] for n in slurm.slurmd_nodes} == {"idle"}
    assert all(line.endswith("gpu:8") for line in out)


def test_partition_from_partitions_conf_after_reconfigure(slurm: SlurmHandle) -> None:
    assert slurm.run("sinfo", "-h", "-p", "tenant-baz").stdout == ""
    slurm.write_partitions(
        "PartitionName=tenant-baz Nodes=gpu-[09-16] AllowAccounts=tenant-baz Default=NO State=UP "
        "MaxTime=24:00:00 DefaultTime=01:00:00 PreemptMode=OFF OverSubscribe=EXCLUSIVE\n"
    )
    slurm.reconfigure()
    assert slurm.run("sinfo", "-h", "-p", "tenant-baz", "-o", "%P %a %l %D %t %N").stdout.split() == [
        "tenant-baz", "up", "1-00:00:00", "8", "idle~", "gpu-[09-16]"
    ]  # fmt: skip
    shown = slurm.run("scontrol", "show", "partition", "tenant-baz").stdout
    assert "Nodes=gpu-[09-16]" in shown
    assert "AllowAccounts=tenant-baz" in shown
    assert "MaxTime=1-00:00:00" in shown


def wait_for_job(slurm: SlurmHandle, job_id: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = slurm.run("scontrol", "show", "job", job_id, "-o").stdout
        if "JobState=COMPLETED" in state or "JobState=FAILED" in state:
            return state
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} not finished: {state}")


def test_jobs_run_on_slurmd_nodes(slurm: SlurmHandle, tmp_path: Path) -> None:
    slurm.write_partitions(
        "PartitionName=tenant-smoke Nodes=gpu-[01-02] AllowAccounts=tenant-smoke State=UP OverSubscribe=NO\n"
    )
    slurm.reconfigure()
    slurm.run("sacctmgr", "-i", "add", "account", "tenant-smoke", "GrpTRES=gres/gpu=16")
    slurm.run("sacctmgr", "-i", "add", "user", "root", "account=tenant-smoke")
    submit = [
        "sbatch",
        "--parsable",
        "--partition=tenant-smoke",
        "--account=tenant-smoke",
        f"--chdir={tmp_path}",
    ]
    show_gpus = 'echo "$SLURMD_NODENAME CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"'
    one = slurm.run(*submit, "--gres=gpu:1", "--time=00:05:00", "--output=one.out",
                    "--wrap", show_gpus).stdout.strip()  # fmt: skip
    two = slurm.run(*submit, "--nodes=2", "--ntasks-per-node=2", "--gres=gpu:8", "--output=two.out",
                    "--wrap", 'srun sh -c "echo $SLURMD_NODENAME:\\$SLURM_PROCID"').stdout.strip()  # fmt: skip
    for job_id in (one, two):
        assert "JobState=COMPLETED" in wait_for_job(slurm, job_id)
    first = (tmp_path / "one.out").read_text().split()
    assert first[0] in slurm.slurmd_nodes
    assert first[1] == "CUDA_VISIBLE_DEVICES=0"
    assert len((tmp_path / "two.out").read_text().split()) == 4
