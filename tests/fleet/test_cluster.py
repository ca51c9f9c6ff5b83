"""Connecting to a Ray cluster: a real two-node cluster on this machine."""

from __future__ import annotations

import pytest

from codeloop.errors import FleetError
from codeloop.fleet import cluster
from tests.fleet.ray_nodes import LocalRayCluster

pytestmark = pytest.mark.slow


def test_an_address_with_no_cluster_is_a_fleet_error_naming_it() -> None:
    if cluster.connected():
        pytest.skip("this process is already connected to a cluster")
    with pytest.raises(FleetError, match=r"127\.0\.0\.1:9") as err:
        cluster.connect("127.0.0.1:9")
    assert "ray status" in err.value.hint


def test_connect_reaches_both_nodes_and_runs_tasks_on_each(
        ray_cluster: LocalRayCluster) -> None:
    import ray

    assert cluster.connected()
    cluster.connect(ray_cluster.address)  # a second connect is a no-op, not an error
    alive = [node for node in ray.nodes() if node["Alive"]]
    assert len(alive) == 2

    @ray.remote(num_cpus=1)
    def where() -> str:
        return str(ray.get_runtime_context().get_node_id())

    nodes = set(ray.get([where.remote() for _ in range(8)]))
    assert nodes <= {node["NodeID"] for node in alive}
