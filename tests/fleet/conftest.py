"""The `ray_cluster` fixture: a head and a worker node on this machine, shared by a module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fleet.ray_nodes import LocalRayCluster, NoRay, wait_for_alive_nodes


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalRayCluster]:
    """A two-node Ray cluster (1 CPU each); this process is connected to it as a driver."""
    from codeloop.fleet import cluster

    try:
        nodes = LocalRayCluster(workers=1)
    except NoRay as exc:
        if os.environ.get("CODELOOP_REQUIRE_RAY") == "1":  # CI: never skip silently
            pytest.fail(f"CODELOOP_REQUIRE_RAY=1 but: {exc}")
        pytest.skip(f"no Ray cluster for this test: {exc}")
    saved = {name: os.environ.get(name) for name in nodes.driver_env}
    # Ray reads the auth mode when it initialises its config, so set it before ray.init.
    os.environ.update(nodes.driver_env)
    try:
        cluster.connect(nodes.address)
        wait_for_alive_nodes(2)
        yield nodes
    finally:
        cluster.disconnect()
        nodes.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
