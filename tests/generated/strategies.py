"""Hypothesis strategies over the whole space of valid tenant contracts, and of contracts broken in one field.

A drawn contract is a plain dict (what a YAML file holds) together with the facts the tests need as oracles,
computed here from what was drawn and never by the product: byte counts of every size, minutes of every Slurm
duration, the node count. The bounds are written out from the contract's documentation (``tenantflow schema``,
docs/runbooks.md) and the upstream rules they stand for:

* sizes: Kubernetes quantities (``k8s.io/apimachinery/pkg/api/resource``: decimal ``k M G T P E``, binary
  ``Ki .. Ei``) or Weka's byte units (decimal ``KB .. EB``, binary ``KiB .. EiB``), at most 16 EiB;
* durations: Slurm's ``[days-]hours:minutes:seconds`` or ``UNLIMITED`` (``sbatch --time``);
* names: Kubernetes DNS-1123 labels for the slug and node names, POSIX-style usernames, printable text without
  the characters sacctmgr splits or strips for display names.

Every field of :class:`~tenantflow.models.tenant.TenantContract` is drawn, each with its extremes weighted in:
one node and the largest node count of each SKU, one user and 500, both storage isolations, minimum and maximum
quotas, every QoS flag combination, unlimited and finite wall times, 31-character slugs and 253-character hosts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tenantflow.models.tenant import TenantContract

SKUS = {"h100-8x": 8, "h200-8x": 8, "a100-8x": 8, "l40s-4x": 4}
"""GPUs per node of each SKU the cluster knows (docs/runbooks.md, step 1)."""
MAX_GPUS = 100_000
MAX_USERS = 500
EXBI = 2**60
MAX_BYTES = 2**64
KUBE_SUFFIXES = {
    "": 1,
    **{s: 1000 ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    **{f"{s}i": 1024 ** (i + 1) for i, s in enumerate("KMGTPE")},
}
WEKA_UNITS = {
    "B": 1,
    **{f"{s}B": 1000 ** (i + 1) for i, s in enumerate("KMGTPE")},
    **{f"{s}iB": 1024 ** (i + 1) for i, s in enumerate("KMGTPE")},
}
MEMORY_SUFFIXES = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
"""The suffixes the contract takes for container memory defaults (``^\\d+(Ki|Mi|Gi|Ti)?$``)."""
QUOTA_SUFFIXES = {**MEMORY_SUFFIXES, "Pi": 2**50}
PUBLIC_KEYS = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN+gJenIwOFt04wpDCsCqz+KtQbxmJsNrdJwfig550JP",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBlNg7hwU0RAwMTUBtHyDmeK7BK7yah9c+ly"
    "ygsbUp+ElDvwFRzZqSJKmwQEbG0rP4BvucJjZQI65DE7IjWPdLQ=",
    "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAC4pv2iFC+qpMlP0k0BLwRMKSaxzm6iYkvA"
    "y9UQMXtvIoOFwjdV+9AbkvAt8yyuOHgwj+dqr072yYreAgKlsFr0JAEDweGm3jedXAS52Onk5xKAmtG1hmWNq5xwBdE9RwKZq1QYpeGew9bXA5"
    "KpQIpj8ZKw6gMN1BcWgdibem2lcq0jDQ==",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCedwHTVsbozpIzb2OfUBJnyDmh+FqGxFGOZQMUm8F/IqsAXjsy5ccKM+obQGrMnu7bc3+B7"
    "j06sGm+ClT1kSmJ1Q1RoI+2VHXIFvn6UcceAA3akMVPMt9oWj+pf3YxPUJj2v443byZ3f7mRAlajQQc9t9YYbdfjxZdXvLE7rx3/bJqF6T0o94U"
    "jxMyd+6T3VuKHuclYvvNZaFKSXUU55xtNZ91Fjwe1XDgYJXYx7NqOh9jwMnAM+KqScX8CEI5ng4LZYeoxHzPsECGt+pzyQjO4be37da55WHdHXL"
    "nDQofsEmGJ6xNXlzMcb69LtOf3pncis8H4ia7QWX2pdAik3V7",
)
"""Public keys of every family the contract takes (made with ssh-keygen for these tests)."""
UNPRINTABLE = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
"""Unicode categories no name may hold: controls, format marks, surrogates, private use, unassigned, separators."""
SHELL_CHARACTERS = "<>{}$`\\;|&"
DESCRIPTION_CHARACTERS = ",'\"=" + SHELL_CHARACTERS
"""What sacctmgr splits at or strips from a ``Description`` (comma, quotes, ``=``), plus shell metacharacters."""


@dataclass
class Drawn:
    """A drawn contract (``data``) and what the tests expect of it, from the draw itself."""

    data: dict[str, Any]
    node_count: int
    gpus_per_node: int
    bytes: dict[str, int] = field(default_factory=dict)
    """Bytes of each size field, by dotted path (``storage.scratch.hard``)."""
    minutes: dict[str, int | None] = field(default_factory=dict)
    """Minutes of each Slurm duration, by dotted path; None for UNLIMITED."""


LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = LOWER + DIGITS


def names(first: str, middle: str, last: str, max_size: int, min_size: int = 1) -> st.SearchStrategy[str]:
    """``first`` then up to ``max_size - 2`` of ``middle`` then ``last`` (each a set of characters); one
    character of ``first`` alone when ``last`` holds it. Text strategies, because ``from_regex`` is ten times
    slower to draw."""
    inner = st.text(middle, min_size=max(min_size - 2, 0), max_size=max_size - 2)
    joined = st.tuples(st.sampled_from(first), inner, st.sampled_from(last)).map("".join)
    alone = [c for c in first if c in last]
    return st.one_of(st.sampled_from(alone), joined) if alone and min_size <= 1 else joined


def label(max_size: int = 63) -> st.SearchStrategy[str]:
    """A DNS-1123 label of at most ``max_size`` characters."""
    return names(ALNUM, ALNUM + "-", ALNUM, max_size)


def slugs() -> st.SearchStrategy[str]:
    """``tenant-<label>``, 31 characters at most, the longest drawn often."""
    return st.one_of(label(24), names(ALNUM, ALNUM + "-", ALNUM, 24, min_size=24)).map(lambda name: f"tenant-{name}")


def printable_text(forbidden: str, max_size: int) -> st.SearchStrategy[str]:
    """Printable text without ``forbidden`` that is not all whitespace (the models strip it, so ``" x "`` is
    kept as ``"x"`` and ``" "`` is empty)."""
    characters = st.characters(exclude_categories=UNPRINTABLE, exclude_characters=forbidden)
    return st.text(characters, min_size=1, max_size=max_size).filter(str.strip)


@st.composite
def sizes(draw: st.DrawFn, most: int = MAX_BYTES, units: dict[str, int] | None = None) -> tuple[str, int]:
    """A size of 1 byte to ``most`` bytes, written with one unit of ``units`` (any unit by default)."""
    table = units or {**KUBE_SUFFIXES, **WEKA_UNITS}
    unit = draw(st.sampled_from([u for u, factor in table.items() if factor <= most]))
    number = draw(st.one_of(st.just(1), st.just(most // table[unit]), st.integers(1, most // table[unit])))
    return f"{number}{unit}", number * table[unit]


@st.composite
def quota_pairs(draw: st.DrawFn) -> tuple[dict[str, str], int, int]:
    hard, hard_bytes = draw(sizes())
    soft, soft_bytes = draw(st.one_of(st.just((hard, hard_bytes)), sizes(most=hard_bytes)))
    return {"hard": hard, "soft": soft}, hard_bytes, soft_bytes


LONGEST_MINUTES = 3650 * 24 * 60


@st.composite
def durations(draw: st.DrawFn, least: int | None = 1, most: int | None = None) -> tuple[str, int | None]:
    """A Slurm duration of ``least`` to ``most`` minutes and its minutes (seconds round up, as Slurm rounds
    them); ``least`` None allows only UNLIMITED, ``most`` None allows UNLIMITED too."""
    if least is None or (most is None and draw(st.integers(0, 4)) == 0):
        return "UNLIMITED", None
    low, high = (least - 1) * 60 + 1, (most if most is not None else LONGEST_MINUTES) * 60
    seconds = draw(st.one_of(st.just(low), st.just(high), st.integers(low, high)))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{rest // 60:02d}:{rest % 60:02d}"
    if days == 0 or (days * 24 + hours < 100 and draw(st.booleans())):
        text = f"{days * 24 + hours:02d}:{clock}"
    else:
        text = f"{days}-{hours:02d}:{clock}"
    return text, -(-seconds // 60)


@st.composite
def usernames(draw: st.DrawFn, count: int) -> list[str]:
    """``count`` distinct usernames (``^[a-z][a-z0-9-]{0,31}$``); past a few, numbered from a drawn stem."""
    if count <= 8:
        name = st.tuples(st.sampled_from(LOWER), st.text(ALNUM + "-", max_size=31)).map("".join)
        return draw(st.lists(name, min_size=count, max_size=count, unique=True))
    stem = draw(st.tuples(st.sampled_from(LOWER), st.text(ALNUM + "-", max_size=27)).map("".join))
    return [f"{stem}{i}" for i in range(count)]


@st.composite
def users(draw: st.DrawFn, count: int) -> list[dict[str, Any]]:
    names = draw(usernames(count))
    domain = draw(st.tuples(label(30), st.text(LOWER, min_size=2, max_size=24)).map(".".join))
    full_name = printable_text(SHELL_CHARACTERS, 150)
    keys = st.lists(st.sampled_from(PUBLIC_KEYS), min_size=1, max_size=16)
    comment = st.text(ALNUM + LOWER.upper() + "@._+-", min_size=1, max_size=40)
    drawn = []
    for index, username in enumerate(names):
        detailed = index < 8
        user_keys = draw(keys) if detailed else [PUBLIC_KEYS[index % len(PUBLIC_KEYS)]]
        if detailed and draw(st.booleans()):
            user_keys = [f"{key} {draw(comment)}" for key in user_keys]
        entry: dict[str, Any] = {
            "username": username,
            "email": f"{username}@{domain}",
            "name": draw(full_name) if detailed else f"User {index}",
            "ssh_keys": user_keys,
        }
        if detailed and draw(st.booleans()):
            entry["adopt_existing"] = True
        drawn.append(entry)
    return drawn


def counts(most: int) -> st.SearchStrategy[int]:
    """1 to ``most``, with both ends drawn often."""
    return st.one_of(st.just(1), st.just(most), st.integers(1, most))


@st.composite
def capacities(draw: st.DrawFn) -> tuple[dict[str, Any], int, int]:
    sku = draw(st.sampled_from(sorted(SKUS)))
    per_node = SKUS[sku]
    nodes = draw(counts(MAX_GPUS // per_node))
    capacity: dict[str, Any] = {
        "sku": sku,
        "gpus": nodes * per_node,
        "partition_type": draw(st.sampled_from(["reserved", "on-demand", "spot"])),
        "term_days": draw(counts(3650)),
        "hardware_pool": draw(label()),
        "evict_on_release": draw(st.booleans()),
    }
    if nodes <= 64 and draw(st.booleans()):
        stem = draw(names(LOWER, ALNUM + ".-", "-", 21, min_size=2))
        width = draw(st.integers(1, 4))
        start = draw(st.integers(0, 99))
        capacity["nodes"] = draw(st.permutations([f"{stem}{i:0{width}d}" for i in range(start, start + nodes)]))
    return capacity, nodes, per_node


def cpu(millis: int, whole: bool) -> str:
    return f"{millis // 1000}" if whole and millis % 1000 == 0 else f"{millis}m"


@st.composite
def kube_quotas(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """A kube quota whose container defaults request no more than they limit (``ValidateLimitRange``)."""
    default_cpu = draw(st.integers(1, 10**6))
    request_cpu = draw(st.integers(1, default_cpu))
    default_memory, default_memory_bytes = draw(sizes(2**50, MEMORY_SUFFIXES))
    request_memory, _ = draw(sizes(default_memory_bytes, MEMORY_SUFFIXES))
    storage, storage_bytes = draw(sizes(2**60, QUOTA_SUFFIXES))
    quota = {
        "requests_cpu": cpu(draw(st.integers(1, 10**9)), draw(st.booleans())),
        "requests_memory": draw(sizes(2**60, QUOTA_SUFFIXES))[0],
        "limits_memory": draw(sizes(2**60, QUOTA_SUFFIXES))[0],
        "persistentvolumeclaims": draw(counts(10_000)),
        "requests_storage": storage,
        "default_cpu": cpu(default_cpu, draw(st.booleans())),
        "default_memory": default_memory,
        "default_request_cpu": cpu(request_cpu, draw(st.booleans())),
        "default_request_memory": request_memory,
    }
    return quota, storage_bytes


@st.composite
def qos(draw: st.DrawFn, gpus: int, least: int | None) -> tuple[dict[str, Any], int | None]:
    """A QoS whose MaxWall is at least ``least`` minutes (None: UNLIMITED only)."""
    wall, minutes = draw(durations(least))
    body: dict[str, Any] = {
        "priority": draw(st.one_of(st.just(0), st.just(1_000_000), st.integers(0, 1_000_000))),
        "max_wall": wall,
        "preempt_off": draw(st.booleans()),
        "deny_on_limit": draw(st.booleans()),
    }
    if draw(st.booleans()):
        body["grp_gpus"] = draw(counts(gpus))
    return body, minutes


@st.composite
def slurm_sections(draw: st.DrawFn, gpus: int, user_count: int) -> tuple[dict[str, Any], dict[str, int | None]]:
    """A Slurm section whose wall limit fits the partition's MaxTime and the normal QoS's MaxWall (the validate
    step's ``slurm.max_time``), and whose DefaultTime fits MaxTime (slurmctld drops a DefaultTime above MaxTime)."""
    wall, wall_minutes = draw(durations())
    max_time, max_minutes = draw(durations(wall_minutes))
    normal, normal_minutes = draw(qos(gpus, wall_minutes))
    interactive, interactive_minutes = draw(qos(gpus, 1))
    default, default_minutes = draw(durations(1, max_minutes))
    slurm_name = st.tuples(st.sampled_from(ALNUM), st.text(ALNUM + "_-", max_size=39)).map("".join)
    team = draw(st.one_of(st.none(), st.just(""), slurm_name))
    section: dict[str, Any] = {
        "cluster": draw(slurm_name),
        "fairshare": draw(counts(1_000_000)),
        "grp_jobs": draw(counts(1_000_000)),
        "team_fairshare": draw(counts(1_000_000)),
        "budget_gpu_minutes_total": draw(st.one_of(st.just(user_count), st.integers(user_count, 10**12))),
        "user_max_jobs": draw(counts(100_000)),
        "normal_qos": normal,
        "interactive_qos": interactive,
        "partition_max_time": max_time,
        "partition_default_time": default,
        "oversubscribe": draw(st.sampled_from(["EXCLUSIVE", "NO"])),
        "contract_wall_limit": wall,
    }
    if team is not None:
        section["team_account"] = team
    minutes = {
        "slurm.contract_wall_limit": wall_minutes,
        "slurm.partition_max_time": max_minutes,
        "slurm.partition_default_time": default_minutes,
        "slurm.normal_qos.max_wall": normal_minutes,
        "slurm.interactive_qos.max_wall": interactive_minutes,
    }
    return section, minutes


@st.composite
def hostnames(draw: st.DrawFn) -> str:
    labels = draw(st.lists(label(), min_size=1, max_size=6))
    name = ".".join(labels)
    return name if len(name) <= 253 else name[:253].rstrip(".-") or "login"


@st.composite
def contracts(draw: st.DrawFn) -> Drawn:
    """A valid contract and its expected facts (see :class:`Drawn`)."""
    capacity, node_count, per_node = draw(capacities())
    user_count = draw(st.one_of(st.just(1), st.just(MAX_USERS), st.integers(1, 12)))
    pair_home, home_hard, home_soft = draw(quota_pairs())
    pair_scratch, scratch_hard, scratch_soft = draw(quota_pairs())
    home_capacity, home_capacity_bytes = draw(sizes())
    quota, storage_bytes = draw(kube_quotas())
    pvc, pvc_bytes = draw(sizes(most=storage_bytes))
    slurm, minutes = draw(slurm_sections(capacity["gpus"], user_count))
    network: dict[str, Any] = {"isolation": draw(st.sampled_from(["network-policy", "pkey"]))}
    if network["isolation"] == "pkey" or draw(st.booleans()):
        network["pkey"] = "0x" + draw(st.text(DIGITS + "abcdefABCDEF", min_size=1, max_size=4))
    login: dict[str, Any] = {
        "replicas": draw(counts(10)),
        "chart_version": draw(st.text(DIGITS + "x.", min_size=1, max_size=12)),
    }
    if draw(st.booleans()):
        login["hostname"] = draw(hostnames())
    data = {
        "slug": draw(slugs()),
        "display_name": draw(printable_text(DESCRIPTION_CHARACTERS, 100)),
        "cluster": {
            "context": draw(st.tuples(st.sampled_from(ALNUM), st.text(ALNUM + "._@:/-", max_size=62)).map("".join))
        },
        "capacity": capacity,
        "users": draw(users(user_count)),
        "admins_group": draw(st.booleans()),
        "storage": {
            "isolation": draw(st.sampled_from(["strict-org", "shared-org"])),
            "home_per_user": pair_home,
            "scratch": pair_scratch,
            "home_filesystem_capacity": home_capacity,
            "pvc_name": draw(label()),
            "pvc_size": pvc,
        },
        "kube_quota": quota,
        "slurm": slurm,
        "network": network,
        "login": login,
    }
    return Drawn(
        data=data,
        node_count=node_count,
        gpus_per_node=per_node,
        bytes={
            "storage.home_per_user.hard": home_hard,
            "storage.home_per_user.soft": home_soft,
            "storage.scratch.hard": scratch_hard,
            "storage.scratch.soft": scratch_soft,
            "storage.home_filesystem_capacity": home_capacity_bytes,
            "storage.pvc_size": pvc_bytes,
        },
        minutes=minutes,
    )


def contract_of(drawn: Drawn) -> TenantContract:
    return TenantContract.model_validate(drawn.data)
