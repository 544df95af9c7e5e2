"""``scontrol show config`` as the preflight reads it, and the enforcement check. ``slurm_outputs/config.txt``
comes from a real Slurm 22.05 (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenantflow.activities.common.slurm_cli import parse_config
from tenantflow.activities.slurm.enforcement import enforcement_problems

CONFIG = (Path(__file__).parent / "slurm_outputs" / "config.txt").read_text()


def test_show_config_as_slurm_prints_it() -> None:
    config = parse_config(CONFIG)
    assert config["AccountingStorageEnforce"] == "associations,limits,qos"
    assert config["AccountingStorageTRES"] == "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu"
    assert config["SLURM_CONF"] == "/etc/slurm/slurm.conf"
    assert not any(key.startswith("Configuration") for key in config)


def test_the_labs_configuration_enforces_what_onboarding_stores() -> None:
    assert enforcement_problems(parse_config(CONFIG)) == []


def with_setting(key: str, value: str) -> dict[str, str]:
    return parse_config(CONFIG) | {key: value}


@pytest.mark.parametrize("enforce", ["associations,qos", "associations", "none", "(null)"])
def test_enforce_without_limits_is_refused_with_the_fix(enforce: str) -> None:
    problems = enforcement_problems(with_setting("AccountingStorageEnforce", enforce))
    assert [p.message for p in problems] == [
        f"AccountingStorageEnforce={enforce} lacks limits: slurmctld stores the tenant's GrpTRES and MaxJobs but "
        "never enforces them"
    ]
    assert problems[0].fix.startswith("set AccountingStorageEnforce=associations,limits,qos in slurm.conf")


def test_safe_is_listed_with_limits_and_passes() -> None:
    assert enforcement_problems(with_setting("AccountingStorageEnforce", "associations,limits,qos,safe")) == []


def test_tres_without_gres_gpu_is_refused_with_the_fix() -> None:
    problems = enforcement_problems(
        with_setting("AccountingStorageTRES", "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu:h100")
    )
    assert len(problems) == 1
    assert problems[0].message.startswith("AccountingStorageTRES=cpu,mem,")
    assert "does not track gres/gpu" in problems[0].message
    assert "add gres/gpu to AccountingStorageTRES" in problems[0].fix


def test_both_missing_are_both_named() -> None:
    config = {k: v for k, v in parse_config(CONFIG).items() if not k.startswith("AccountingStorage")}
    assert [p.message.split("=")[0] for p in enforcement_problems(config)] == [
        "AccountingStorageEnforce",
        "AccountingStorageTRES",
    ]
