# syntax=docker/dockerfile:1
# Both stages use the same base image: the virtual environment built in the first stage links to
# its interpreter by path.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
# Compilers only here, for any dependency without a wheel for the target platform. Not pinned to
# a version: the Debian release follows PYTHON_IMAGE, and a pin would break when it moves.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/arc-hooks
WORKDIR /src
# The product only: pyproject's package list also names `arc_sim`, the simulated world, which
# is not copied, so the wheel holds `hooks` alone (tests/test_dockerfile.py builds it this way).
COPY pyproject.toml README.md ./
COPY hooks ./hooks
# Install from a built wheel, not the source tree, so the image holds exactly what is released.
# pip compiles bytecode at install time, which matters because the root filesystem is read-only
# at run time. The installers leave the environment with the build.
RUN /opt/arc-hooks/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/arc-hooks/bin/pip install /wheels/*.whl \
    && /opt/arc-hooks/bin/pip uninstall --yes setuptools pip

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="arc-hooks" \
      org.opencontainers.image.description="actions-runner-controller's legacy API as Metacontroller hooks" \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed numeric id, so Kubernetes can check runAsNonRoot without a passwd lookup. The base
# image's own installers go too: nothing is installed at run time.
RUN groupadd --system --gid 10001 arc-hooks \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin arc-hooks \
    && python -m pip uninstall --yes pip setuptools wheel
COPY --from=builder /opt/arc-hooks /opt/arc-hooks
ENV PATH=/opt/arc-hooks/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["arc-hooks"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
