"""Smoke-test checks (activities/smoke/steps.py) on job outputs and ``scontrol show job -d`` fields.

The real jobs (as the tenant's LDAP user, in its home, on the lab's Weka mount stand-in) run in
tests/integration/test_onboarding_e2e.py.
"""

from __future__ import annotations

from tenantflow.activities.smoke import steps as smoke
from tenantflow.activities.smoke.steps import JobRun

GPU_OUT = "gpu-01\nCUDA_VISIBLE_DEVICES={cvd}\nNVIDIA H100 80GB HBM3, 81559 MiB\nGPUS={n}\nSTEP_GPUS={step}\n"


def test_parse_busbw_picks_the_4gb_row() -> None:
    out = (
        "#  size count\n  2147483648  536870912 float sum -1 1.0 97.50 97.50 0\n"
        "  4294967296  1073741824 float sum -1 1.0 60.00 112.50 0 1.0 60.0 112.5 0\n"
    )
    assert smoke.parse_busbw(out) == 112.5
    assert smoke.parse_busbw("no table") is None


def test_allocated_gpus_from_job_gres() -> None:
    assert smoke.allocated_gpus({"JOB_GRES": "gpu:8"}) == 8
    assert smoke.allocated_gpus({"JOB_GRES": "gpu:h100:2,shard:4"}) == 2
    assert smoke.allocated_gpus({"JOB_GRES": "(null)"}) is None


def test_one_allocated_gpu_seen_once_is_ok() -> None:
    finding = smoke.gpu_finding(JobRun("COMPLETED", GPU_OUT.format(cvd="0", n=1, step=1), {"JOB_GRES": "gpu:1"}), 1)
    assert finding.ok and "exactly its 1 allocated" in finding.message


def test_more_gpus_visible_than_allocated_means_no_device_constraint() -> None:
    finding = smoke.gpu_finding(JobRun("COMPLETED", GPU_OUT.format(cvd="unset", n=8, step=8), {"JOB_GRES": "gpu:1"}), 1)
    assert not finding.ok and "ConstrainDevices=yes" in finding.fix


def test_exclusive_partition_allocates_the_whole_node() -> None:
    finding = smoke.gpu_finding(
        JobRun("COMPLETED", GPU_OUT.format(cvd="0,1,2,3,4,5,6,7", n=8, step=1), {"JOB_GRES": "gpu:8"}), 1
    )
    assert finding.ok and "whole node" in finding.message


def test_exclusive_partition_without_constrain_devices_is_seen_by_the_one_gpu_step() -> None:
    """On OverSubscribe=EXCLUSIVE the job rightly sees its 8 allocated GPUs; the 1-GPU step must see 1."""
    finding = smoke.gpu_finding(
        JobRun("COMPLETED", GPU_OUT.format(cvd="0,1,2,3,4,5,6,7", n=8, step=8), {"JOB_GRES": "gpu:8"}), 1
    )
    assert not finding.ok and "all GPUs visible to a 1-GPU job" in finding.message
    assert "ConstrainDevices=yes" in finding.fix


def test_a_job_without_the_step_count_is_an_error_finding() -> None:
    assert not smoke.gpu_finding(JobRun("COMPLETED", "gpu-01\nGPUS=1\n", {"JOB_GRES": "gpu:1"}), 1).ok


def test_failed_job_is_an_error_finding() -> None:
    assert not smoke.gpu_finding(JobRun("FAILED", "", {"JOB_GRES": "gpu:1"}), 1).ok


def test_storage_on_root_filesystem_is_an_error_finding() -> None:
    header = "Filesystem     Type 1024-blocks     Used Available Capacity Mounted on\n"
    weka = header + "tenant-foo-scratch:/tenant-foo wekafs 48828125000 4 48828124996 1% /mnt/scratch/tenant-foo\n"
    root = header + "/dev/vda       ext4   264212084 25623940  80766972      25% /\n"
    assert smoke.storage_finding(JobRun("COMPLETED", f"WROTE_MB=16\n{weka}", {}), "/scratch/tenant-foo").ok
    bad = smoke.storage_finding(JobRun("COMPLETED", f"WROTE_MB=16\n{root}", {}), "/scratch/tenant-foo")
    assert not bad.ok and "volumeMount" in bad.fix


def test_a_failed_storage_job_says_so_and_shows_its_output() -> None:
    """A 7-word error line is no df row: the finding is the failed job and its output, not a wrong mount."""
    line = "/lab/slurm/spool/gpu-03/job00027/slurm_script: 5: cd: can't cd to /mnt/scratch/tenant-foo"
    bad = smoke.storage_finding(JobRun("FAILED", f"{line}\n", {}), "/mnt/scratch/tenant-foo")
    assert not bad.ok
    assert bad.message == f"job FAILED before writing and reading back /mnt/scratch/tenant-foo; output: {line}"
    assert "volumeMount" not in bad.fix


def test_storage_script_writes_the_configured_size() -> None:
    assert "count=16 " in smoke.storage_script("/scratch/t", 16)
    assert smoke.SmokeSettings.model_fields["write_mb"].default == 10240


def test_a_job_that_never_created_its_output_is_a_launch_failure_not_a_result() -> None:
    """slurmctld reports a batch launch that slurmd could not start as FAILED (the launch error as exit code); a job
    that ran and failed wrote its output first, and a finished job is never a launch failure."""
    assert JobRun(
        "FAILED", "(output unreadable: cat: x: No such file or directory)", {}, wrote_output=False
    ).launch_failed
    assert JobRun("NODE_FAIL", "", {}, wrote_output=False).launch_failed
    assert not JobRun("FAILED", "srun: error: task 0 exited 1", {}).launch_failed
    assert not JobRun("COMPLETED", "", {}, wrote_output=False).launch_failed
    assert not JobRun("TIMEOUT", "job 4 still PENDING", {}, wrote_output=False).launch_failed
