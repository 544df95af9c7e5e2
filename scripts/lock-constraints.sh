#!/usr/bin/env bash
# Regenerate constraints.txt: the exact version of every distribution `pip install -e '.[lab,dev]'` brings, resolved
# afresh in a throw-away virtualenv (so a dependency added to pyproject.toml, or a newer release its specifier
# allows, is taken). run.sh and the Dockerfile install with `-c constraints.txt`; run this after changing the
# dependencies in pyproject.toml and commit both files together:
#   scripts/lock-constraints.sh
set -euo pipefail
cd "$(dirname "$0")/.."

py=$(command -v python3.11 || command -v python3)
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT
"$py" -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet --disable-pip-version-check -e '.[lab,dev,mutation]'
{
  echo "# Every distribution the development install (pip install -e '.[lab,dev]') and the mutation extra bring, at the version resolved"
  echo "# when this file was made, with $("$scratch/venv/bin/python" --version). run.sh and the Dockerfile install with"
  echo "# -c constraints.txt. Do not edit by hand: regenerate with scripts/lock-constraints.sh after a dependency change."
  "$scratch/venv/bin/pip" freeze --exclude-editable --disable-pip-version-check
} >constraints.txt.new
mv constraints.txt.new constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) distributions pinned"
