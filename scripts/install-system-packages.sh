#!/usr/bin/env bash
# Install the Debian packages the tenantflow lab's real daemons need (slapd, munge, MariaDB, Slurm with
# libpmix-dev, whose libpmix.so the mpi/pmix plugin loads for the smoke test's `srun --mpi=pmix`; tmux;
# iproute2 for the loopback quickack route that keeps Slurm RPCs fast; libnss-extrausers so the host
# resolves the lab's LDAP users from /var/lib/extrausers, see lab/daemons/host_users.py; nginx as the
# TLS-terminating gRPC proxy of tests/worker/test_temporal_tls.py; openssh-client, whose ssh-keygen signs
# approval proofs for keys held by ssh-agent or a passphrase and checks ours in tests/security; chromium, the
# headless browser tests/ui drives through playwright).
#
# Idempotent; run as root on Debian 12. No daemon is started: a policy-rc.d denies every
# invoke-rc.d call for the duration of the install, and the previous policy-rc.d (if any) is
# restored afterwards. `apt-get update` runs at most once, and only when something is missing.
set -euo pipefail

PACKAGES=(
  slapd ldap-utils munge mariadb-server slurmdbd slurmctld slurmd slurm-client
  slurm-wlm-basic-plugins slurm-wlm-mysql-plugin slurmrestd libpmix-dev tmux iproute2 libnss-extrausers nginx
  openssh-client chromium
)
POLICY=/usr/sbin/policy-rc.d
BACKUP="$POLICY.tenantflow-saved"

log() { echo "install-system-packages: $*"; }

if [[ $EUID -ne 0 ]]; then
  log "must run as root" >&2
  exit 1
fi

wanted=("${PACKAGES[@]}")
if ! command -v kubectl >/dev/null 2>&1; then
  wanted+=(kubernetes-client)
fi

missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#wanted[@]} packages already installed; nothing to do"
  exit 0
fi
log "missing: ${missing[*]}"

restore_policy() {
  if [[ -e $BACKUP ]]; then
    mv -f "$BACKUP" "$POLICY"
    log "restored previous $POLICY"
  else
    rm -f "$POLICY"
    log "removed temporary $POLICY"
  fi
}

if [[ -e $POLICY ]]; then
  cp -p "$POLICY" "$BACKUP"
fi
trap restore_policy EXIT
printf '#!/bin/sh\n# written by tenantflow install-system-packages.sh: never start daemons\nexit 101\n' >"$POLICY"
chmod 0755 "$POLICY"
log "wrote $POLICY (daemons will not be started)"

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
apt-get update -q
log "apt-get install ${missing[*]}"
apt-get install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
log "installed ${#missing[@]} package(s)"
