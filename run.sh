#!/usr/bin/env bash
# The two commands of tenantflow, from nothing:
#   ./run.sh demo   install what is needed, start the Temporal dev server and the lab,
#                   onboard examples/tenant-foo.yaml end to end, print the handover sheet
#   ./run.sh test   install what is needed, then lint, type-check and run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

setup() {
  # the Debian packages (lab daemons) install beside the Python ones: apt mostly waits on downloads and dpkg
  local system_pid=
  if [ "$(id -u)" = 0 ]; then
    bash scripts/install-system-packages.sh >/dev/null &
    system_pid=$!
  fi
  local py
  py=$(command -v python3.11 || command -v python3)
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  local stamp=.venv/.tenantflow-installed
  # every distribution at the version constraints.txt pins (scripts/lock-constraints.sh regenerates it)
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
    # uv at its pinned version, then everything with uv: it fetches and unpacks in parallel where pip took a minute;
    # it uses the venv's interpreter, never downloads one, and byte-compiles what it installs as pip would
    .venv/bin/pip install --quiet --disable-pip-version-check -c constraints.txt uv
    UV_PYTHON_DOWNLOADS=never .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python \
      -c constraints.txt -e '.[lab,dev]'
    touch "$stamp"
  fi
  [ -z "$system_pid" ] || wait "$system_pid"
  typecheck_tree
}

# mypy names modules by folder: it checks the tenantflow.* namespace through links to the top-level folders
typecheck_tree() {
  mkdir -p build/typecheck/tenantflow
  for pkg in models workflows activities worker starter lab bench; do
    ln -sfn "../../../$pkg" "build/typecheck/tenantflow/$pkg"
  done
}

lint() {
  .venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy && .venv/bin/lint-imports
}

case "${1:-}" in
  demo)
    setup
    exec .venv/bin/tenantflow demo "${@:2}"
    ;;
  test)
    setup
    # the linters run beside the suite; the suite runs its files on TENANTFLOW_TEST_WORKERS processes (each
    # worker starts the labs and servers its files need; 5 on 2 cores, because the slow files mostly wait on
    # daemons, restarts and injected latency); both must pass
    mkdir -p build
    lint >build/lint.log 2>&1 &
    lint_pid=$!
    # hundreds of Python processes (workers, CLI calls, lab servers) import this tree: where the environment sets
    # PYTHONDONTWRITEBYTECODE (this workplace's sessions do), each would compile it from source again, and each
    # xdist worker would rewrite every test module's asserts again; so write the bytecode once, and pytest's
    # rewritten modules with one collection before the workers start
    unset PYTHONDONTWRITEBYTECODE
    .venv/bin/python -m compileall -q -j 0 models workflows activities worker starter lab bench tests >/dev/null
    .venv/bin/pytest --collect-only -q "${@:2}" >/dev/null 2>&1 || true
    tests=0
    .venv/bin/pytest -n "${TENANTFLOW_TEST_WORKERS:-5}" --dist loadfile --no-loadscope-reorder "${@:2}" || tests=$?
    linted=0
    wait "$lint_pid" || linted=$?
    echo "== lint (ruff, ruff format, mypy, lint-imports) =="
    cat build/lint.log
    [ "$linted" = 0 ] || { echo "lint failed" >&2; exit "$linted"; }
    exit "$tests"
    ;;
  *)
    echo "usage: $0 demo|test [args...]" >&2
    exit 2
    ;;
esac
