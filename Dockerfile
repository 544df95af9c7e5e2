# syntax=docker/dockerfile:1
# The tenantflow image: the worker (the default command) and the CLI (`tenantflow codec-server`, `tenantflow status`
# ...). Rules, checked by tests/packaging/test_dockerfile.py and hadolint:
# - two stages: the builder builds the wheel and installs it with its runtime dependencies into /opt/tenantflow;
#   the final stage is the same python slim base with that virtualenv copied in and nothing else;
# - every dependency is installed at the version constraints.txt pins (scripts/lock-constraints.sh), as run.sh does;
# - the final stage has no compiler, build tool or pip, and only the product with its [otel] extra (tracing, off
#   unless OTEL_* ask for it): no lab, tests, examples or Temporal binaries (the [lab] and [dev] extras). The
#   bench's modules stay (the CLI registers `tenantflow bench`), inert without the lab: it names the [lab] extra;
# - it runs as the unprivileged user 10001 (numeric, so Kubernetes' runAsNonRoot can check it);
# - HEALTHCHECK asks the worker's /livez (worker/health.py); Kubernetes probes /livez and /readyz instead.
# Ports: 9464 Prometheus /metrics, 9465 /livez and /readyz, 8081 when run as `tenantflow codec-server`.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY models/ models/
COPY workflows/ workflows/
COPY activities/ activities/
COPY worker/ worker/
COPY starter/ starter/
# the wheel lists the lab packages; they are built, then left out of the virtualenv below
COPY lab/ lab/
COPY bench/ bench/
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
    && python -m venv /opt/tenantflow \
    && /opt/tenantflow/bin/pip install -c constraints.txt "/wheels/tenantflow-0.1.0-py3-none-any.whl[otel]" \
    && site="$(/opt/tenantflow/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    && rm -r "$site/tenantflow/lab" \
    && /opt/tenantflow/bin/pip uninstall --yes pip

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/tenantflow/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TENANTFLOW_LOG_FORMAT=json \
    TENANTFLOW_METRICS_PORT=9464 \
    TENANTFLOW_HEALTH_PORT=9465
RUN groupadd --system --gid 10001 tenantflow \
    && useradd --system --uid 10001 --gid tenantflow --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin tenantflow \
    && python -m pip uninstall --yes --disable-pip-version-check pip setuptools wheel
COPY --from=builder /opt/tenantflow /opt/tenantflow
USER 10001:10001
EXPOSE 9464 9465
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ['TENANTFLOW_HEALTH_PORT']}/livez\", timeout=4)"]
ENTRYPOINT ["tenantflow"]
CMD ["worker"]
