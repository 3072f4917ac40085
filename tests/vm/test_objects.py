# SPDX-License-Identifier: GPL-2.0
"""Memory regions and completion queues: sroce-objects-test in a guest, cleanup
by the kernel when a process exits without destroying its objects, and a
process scribbling over its CQ ring."""
import json

import pytest

from conftest import TOOLS, add_link, unload_all_rdma_links


@pytest.fixture
def g0(rig):
    g = rig[0]
    unload_all_rdma_links(g)
    add_link(g)
    yield g
    unload_all_rdma_links(g)


def res_counts(g, dev="sroce0"):
    """Per-type object counts of `rdma res show` for dev (pd, cq, mr, ctx...)."""
    for entry in json.loads(g.check("rdma -j res show") or "[]"):
        if entry.get("ifname") == dev:
            return {k: v for k, v in entry.items() if isinstance(v, int) and k != "ifindex"}
    raise AssertionError("no rdma res entry for %s" % dev)


def test_objects_tool_passes(g0):
    r = g0.run("%s/sroce-objects-test sroce0" % TOOLS, timeout=300)
    assert r.ok, r
    assert "RESULT: PASS" in r.out, r
    assert "mr_64MiB: ok" in r.out, r
    assert "cq_size_65536: ok" in r.out, r


def test_objects_are_counted_and_released(g0):
    before = res_counts(g0)
    # A process that exits without destroying anything: the kernel cleans up.
    r = g0.run("%s/sroce-objects-test sroce0 leak" % TOOLS, timeout=120)
    assert r.ok, r
    assert "LEAKING 15 objects" in r.out, r
    assert res_counts(g0) == before


def test_scribbled_cq_ring_hurts_only_the_process(g0):
    before = res_counts(g0)
    r = g0.run("%s/sroce-objects-test sroce0 scribble" % TOOLS, timeout=120)
    assert r.ok, r
    assert "SCRIBBLED" in r.out, r
    assert "destroy: 0" in r.out, r
    assert res_counts(g0) == before
    # the device is unharmed: the full object test still passes
    r = g0.run("%s/sroce-objects-test sroce0" % TOOLS, timeout=300)
    assert "RESULT: PASS" in r.out, r
    assert g0.run("rdma link del sroce0").ok
