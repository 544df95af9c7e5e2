"""Talking to Slurm's command-line tools: argv builders, output parsers and the exec runner.

Every command is an argv list (never a shell string) whose values are validated
first (:func:`word`, :func:`text`). Parsers turn ``sacctmgr show ... -P -n``
(pipe-separated, no header), ``scontrol show ...`` (``Key=Value`` tokens) and
``sinfo`` output into pydantic models. Durations are compared in minutes and node
lists through Slurm's compressed hostlist form (``gpu-[01-08]``), both of which
Slurm normalises on output. :class:`SlurmCtl` runs commands in the slurmctld pod
of a tenant cluster (like ``kubectl -n slurm-control exec deploy/slurmctld -c slurmctld --``);
:func:`slurmd_pods` finds the SUNK NodeSet (slurmd) pods of given nodes, where jobs run, and
:meth:`SlurmCtl.on_slurmd` runs a command in one of them (container ``slurmd_container``).
Every exec is bounded by ``exec_timeout_s``, below the activities' heartbeat timeout.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects, Manifest
from tenantflow.activities.common.settings import settings
from tenantflow.models.durations import duration_minutes
from tenantflow.models.hostlist import expand_hostlist
from tenantflow.models.targets import KubeTarget

SACCTMGR_WRITE_VERBS = frozenset({"add", "create", "modify", "update", "delete", "remove"})
UNAVAILABLE_PATTERNS = re.compile(
    r"Unable to contact slurm controller|Connection refused|Socket timed out|Problem talking to the database|"
    r"Zero Bytes were transmitted|Unable to establish|slurm_persist_conn_open|Transport endpoint|Broken pipe|"
    r"fatal: Unable to process configuration file",
    re.IGNORECASE,
)
"""Answers of a Slurm client that mean "try again". Among them the client's own failure to read ``slurm.conf``:
every ``sacctmgr``/``scontrol`` parses it and its includes first, and ``s_p_parse_file``
(SchedMD/slurm ``src/common/parse_config.c``) sizes its line buffer by ``stat()`` before it opens the file, so a
partitions include swapped for a longer one in between (the Slurm operator re-rendering it for another tenant, the
kubelet swapping a ConfigMap volume) is read in pieces: ``Parse error ... fatal: Unable to process configuration
file`` although both versions are sound. Nothing was done; the command is retried like a lost connection (a
configuration broken for good still fails, after the step's retries, with this message)."""
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,127}$")
_TEXT = re.compile(r"^[^\x00-\x1f\"'`|,=\\$;]{1,200}$")


def word(value: str | int) -> str:
    """A name or number safe as one Slurm argument value (no spaces, separators or quotes)."""
    text_value = str(value)
    if not _WORD.match(text_value):
        raise fail("Invalid", f"{text_value!r} is not a valid Slurm name or value")
    return text_value


def text(value: str) -> str:
    """Free text (a Description) safe as one argument: no quotes, pipes, commas, '=' or control characters."""
    if not _TEXT.match(value):
        raise fail("Invalid", f"{value!r} cannot be used as a Slurm description")
    return value


def words(values: Iterable[str]) -> str:
    return ",".join(word(v) for v in values)


BATCH = 100
"""Names per command that lists users (``getent passwd``, ``scontrol ... users=``, ``sacctmgr ... name=``): the
argv travels in the exec request's URL, one ``command=`` query parameter per argument, and the request line must
stay well under the 8 KiB that HTTP servers and proxies in front of an apiserver commonly accept (aiohttp's
``max_line_size`` 8190, nginx's ``large_client_header_buffers`` 8k); 100 names of the longest username the
contract allows (32 characters) keep it near 4 KiB."""


def batches(values: Sequence[str], size: int = BATCH) -> list[Sequence[str]]:
    """``values`` cut into runs of at most ``size``, in order."""
    return [values[start : start + size] for start in range(0, len(values), size)]


# ---------------------------------------------------------------- durations


def same_duration(a: str, b: str) -> bool:
    return duration_minutes(a) == duration_minutes(b)


# ---------------------------------------------------------------- parsed records


def _list(value: Any) -> Any:
    """A comma-separated column (``qos``) as its sorted values."""
    return sorted(v for v in value.split(",") if v) if isinstance(value, str) else value


class Assoc(BaseModel):
    """One row of ``sacctmgr show assoc format=ASSOC_FORMAT -P -n``: a field per column, in column order (the
    column's name is the field's alias where they differ)."""

    model_config = ConfigDict(populate_by_name=True)

    cluster: str
    account: str
    user: str = ""
    parent: str = Field("", alias="parentname")
    fairshare: str = ""
    grptres: str = ""
    grpjobs: str = ""
    maxjobs: str = ""
    grptresmins: str = ""
    qos: Annotated[list[str], BeforeValidator(_list)] = Field(default_factory=list)
    defaultqos: str = ""


class AccountRecord(BaseModel):
    """One row of ``sacctmgr show account format=ACCOUNT_FORMAT -P -n``."""

    account: str
    description: str = ""
    organization: str = ""


class Partition(BaseModel):
    """``scontrol show partition <name>`` as a key/value map with the fields we compare."""

    name: str
    fields: dict[str, str]

    def get(self, key: str) -> str:
        return self.fields.get(key, "")

    @property
    def nodes(self) -> list[str]:
        value = self.get("Nodes")
        return [] if value in ("", "(null)") else expand_hostlist(value)


class NodeState(BaseModel):
    node: str
    state: str

    @property
    def usable(self) -> bool:
        """Up and answering: not powered down (``~``), down, drained or not responding (``*``)."""
        base = self.state.rstrip("*~#%!$@^-")
        return self.state == base and base in ("idle", "mix", "alloc", "completing")


def columns(row: type[BaseModel]) -> tuple[str, ...]:
    """The ``format=`` columns whose ``-P -n`` output parses as ``row``: its fields' aliases (else names), in order."""
    return tuple(info.alias or name for name, info in row.model_fields.items())


ASSOC_FORMAT = columns(Assoc)
ACCOUNT_FORMAT = columns(AccountRecord)


def parse_pipe(output: str, columns: Iterable[str]) -> list[dict[str, str]]:
    """Rows of ``-P -n`` output as dicts; raises when a line has the wrong number of fields. Rows end at "\\n" only
    (sacctmgr ends its rows so): ``str.splitlines`` would also split inside a value at U+2028, U+0085 or \\x1c."""
    names = list(columns)
    rows = []
    for line in output.split("\n"):
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(names):
            raise ValueError(f"unexpected sacctmgr line {line!r}: {len(values)} fields, expected {len(names)}")
        rows.append(dict(zip(names, values, strict=True)))
    return rows


def parse_assocs(output: str) -> list[Assoc]:
    return [Assoc.model_validate(row) for row in parse_pipe(output, ASSOC_FORMAT)]


def parse_accounts(output: str) -> list[AccountRecord]:
    return [AccountRecord.model_validate(row) for row in parse_pipe(output, ACCOUNT_FORMAT)]


def parse_keyvalues(output: str) -> dict[str, str]:
    """``Key=Value`` tokens of ``scontrol show ...`` (values may contain '=' but no spaces)."""
    result: dict[str, str] = {}
    for token in output.split():
        key, sep, value = token.partition("=")
        if sep:
            result[key] = value
    return result


def parse_config(output: str) -> dict[str, str]:
    """``scontrol show config`` (``Key = Value`` lines, scontrol(1)) as a map; headers and lines without a
    one-word key are skipped, a value keeps any ``=`` of its own."""
    result: dict[str, str] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and len(key.split()) == 1:
            result[key.strip()] = value.strip()
    return result


def parse_partition(output: str) -> Partition | None:
    fields = parse_keyvalues(output)
    name = fields.get("PartitionName")
    return Partition(name=name, fields=fields) if name else None


def parse_node_states(output: str) -> list[NodeState]:
    """``sinfo -h -N -p P -o '%N|%t'`` rows."""
    return [NodeState(node=row["node"], state=row["state"]) for row in parse_pipe(output, ("node", "state"))]


def parse_sbatch(output: str) -> int:
    """The job id from ``sbatch --parsable`` (``123`` or ``123;cluster``)."""
    first = output.strip().split(";")[0]
    if not first.isdigit():
        raise ValueError(f"sbatch did not print a job id: {output.strip()!r}")
    return int(first)


# ---------------------------------------------------------------- argv builders


def sacctmgr_show(entity: str, where: Mapping[str, str], columns: Iterable[str]) -> list[str]:
    conditions = [f"{k}={v}" for k, v in where.items()]
    return [
        "sacctmgr",
        "-P",
        "-n",
        "show",
        entity,
        *(["where", *conditions] if conditions else []),
        f"format={','.join(columns)}",
    ]


def sacctmgr_write(
    verb: str,
    entity: str,
    name: str,
    *settings_args: str,
    where: Mapping[str, str] | None = None,
    set_mode: bool = False,
) -> list[str]:
    """``sacctmgr -i <verb> <entity> <name> [where k=v ...] [set] k=v ...``."""
    argv = ["sacctmgr", "-i", verb, entity, word(name) if name else ""]
    argv = [a for a in argv if a]
    if where:
        argv += ["where", *(f"{k}={v}" for k, v in where.items())]
    if set_mode and settings_args:
        argv.append("set")
    return argv + list(settings_args)


def is_write(argv: list[str]) -> bool:
    """True for sacctmgr commands that change accounting and for scontrol reconfigure/create/update/delete."""
    if not argv:
        return False
    if argv[0] == "sacctmgr":
        return any(a in SACCTMGR_WRITE_VERBS for a in argv[1:4])
    return argv[0] == "scontrol" and len(argv) > 1 and argv[1] in ("reconfigure", "create", "update", "delete")


# ---------------------------------------------------------------- running in the slurmctld pod


@dataclass
class SlurmCtl:
    """Runs Slurm commands in the slurmctld pod of ``target`` and remembers which of them wrote."""

    target: KubeTarget
    pod: str = ""
    writes: list[list[str]] = field(default_factory=list)

    @classmethod
    def connect(cls, target: KubeTarget) -> SlurmCtl:
        cfg = settings()
        return cls(target=target, pod=kubeclient.workload_pod(target, cfg.slurm_namespace, cfg.slurm_controller))

    def run(self, argv: list[str], *, check: bool = True) -> kubeclient.ExecOutput:
        if is_write(argv):
            self.writes.append(argv)
        cfg = settings()
        out = kubeclient.exec_in(
            self.target,
            cfg.slurm_namespace,
            self.pod,
            cfg.slurm_controller_container,
            argv,
            timeout_s=cfg.exec_timeout_s,
        )
        if check and out.exit_code != 0:
            raise command_error(argv, out)
        return out

    def config(self) -> dict[str, str]:
        """The configuration slurmctld runs with and where the pod reads it from (``SLURM_CONF``), as
        ``scontrol show config`` prints it (https://slurm.schedmd.com/scontrol.html)."""
        return parse_config(self.run(["scontrol", "show", "config"]).stdout)

    def show(self, entity: str, where: Mapping[str, str], columns: Iterable[str]) -> str:
        return self.run(sacctmgr_show(entity, where, columns)).stdout

    def on_slurmd(self, pod: str, argv: list[str]) -> kubeclient.ExecOutput:
        """Run a read-only command in the slurmd container of the NodeSet pod ``pod``."""
        cfg = settings()
        return kubeclient.exec_in(
            self.target, cfg.slurm_namespace, pod, cfg.slurmd_container, argv, timeout_s=cfg.exec_timeout_s
        )


def slurmd_pods(target: KubeTarget, nodes: Iterable[str]) -> dict[str, Manifest]:
    """The running slurmd (SUNK NodeSet) pods on ``nodes``, by node: pods matching ``slurmd_pod_selector`` in
    the Slurm namespace whose ``spec.nodeName`` is one of the nodes."""
    cfg = settings()
    wanted = set(nodes)
    found: dict[str, Manifest] = {}
    for pod in KubeObjects(target).list("Pod", cfg.slurm_namespace, label_selector=cfg.slurmd_pod_selector):
        node = (pod.get("spec") or {}).get("nodeName", "")
        if node in wanted and (pod.get("status") or {}).get("phase") == "Running":
            found.setdefault(node, pod)
    return dict(sorted(found.items()))


def command_error(argv: list[str], out: kubeclient.ExecOutput) -> ApplicationError:
    """Retryable when Slurm or slurmdbd is unreachable, non-retryable otherwise; the message names the command."""
    detail = (out.stderr.strip() or out.stdout.strip() or f"exit code {out.exit_code}")[-600:]
    return slurm_error(f"`{' '.join(argv[:5])}` failed in the slurmctld pod: {detail}", detail)


def undo_error(kind: str, name: str, detail: str) -> ApplicationError:
    """An undo write that failed: retryable while Slurm cannot be reached, for good on a refusal."""
    return slurm_error(f"could not undo Slurm {kind} {name}: {detail.strip()[-300:]}", detail)


def slurm_error(message: str, detail: str) -> ApplicationError:
    """Retryable (``Unavailable``) when ``detail`` says slurmctld or slurmdbd could not be reached, else a
    non-retryable ``SlurmCommandFailed``."""
    if UNAVAILABLE_PATTERNS.search(detail):
        return ApplicationError(message, type="Unavailable")
    return fail("SlurmCommandFailed", message)
