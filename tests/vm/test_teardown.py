# SPDX-License-Identifier: GPL-2.0
"""Tearing sroce down while RC traffic flows in both directions."""
import time

import pytest

from conftest import (add_link, client_server, gid_index, listening, unload_all_rdma_links,
                      wait_for)

def _traffic_running(g, dev):
    out = g.check("cat /sys/class/infiniband/%s/ports/1/hw_counters/tx_packets" % dev)
    return int(out.strip())


@pytest.mark.parametrize("how", ["link-del", "rmmod", "netdev-down"])
def test_teardown_under_traffic(rig, how):
    """Remove the device (after a netdev flap, or with the module) in the middle of
    RC traffic in both directions: removal completes, the kernel stays clean (the
    console check), and a fresh device carries verified traffic again."""
    g0, g1 = rig[0], rig[1]
    for g in (g0, g1):
        unload_all_rdma_links(g)
        add_link(g)
    gid0, gid1 = gid_index(g0, "sroce0"), gid_index(g1, "sroce0")
    procs = []
    try:
        # g0 writes to g1 and g1 reads from g0 at the same time.
        procs.append(g1.spawn("ib_write_bw -d sroce0 -x %d -F -s 65536 -n 1000000 -p 18611"
                              % gid1))
        procs.append(g0.spawn("ib_read_bw -d sroce0 -x %d -F -s 65536 -n 1000000 -p 18612"
                              % gid0))
        wait_for(lambda: listening(g1, 18611) and listening(g0, 18612), timeout=60,
                 what="perftest servers listening")
        procs.append(g0.spawn("ib_write_bw -d sroce0 -x %d -F -s 65536 -n 1000000 -p 18611 %s"
                              % (gid0, g1.ip4)))
        procs.append(g1.spawn("ib_read_bw -d sroce0 -x %d -F -s 65536 -n 1000000 -p 18612 %s"
                              % (gid1, g0.ip4)))
        start = _traffic_running(g0, "sroce0")
        wait_for(lambda: _traffic_running(g0, "sroce0") > start + 2000, timeout=90,
                 what="traffic on sroce0")
        if how == "link-del":
            g0.check("rdma link del sroce0", timeout=120)
        elif how == "rmmod":
            g0.check("rdma link del sroce0 && modprobe -r sroce", timeout=120)
        else:
            g0.check("ip link set eth0 down", timeout=60)
            time.sleep(3)
            g0.check("ip link set eth0 up", timeout=60)
            g0.check("rdma link del sroce0", timeout=120)
        # The applications on g0 lose their device: its mappings are zapped
        # and IB_EVENT_DEVICE_FATAL is queued, which perftest never reads, so
        # some of them spin until killed, as they would on hardware; their
        # peers may wait forever in perftest's TCP handshake. Whatever ends
        # by itself must not claim success.
        for p in procs:
            r = p.wait(timeout=30)
            if not r.timeout:
                assert r.rc != 0, r
        procs = []
        assert "sroce0" not in g0.run("rdma link show").out
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
    # The device comes back and works.
    for g in (g0, g1):
        unload_all_rdma_links(g)
        add_link(g)
    wait_for(lambda: g0.run("ping -c1 -W1 %s" % g1.ip4).ok, timeout=30, what="ping")
    srv, cli = client_server(
        g0, "ibv_rc_pingpong -d sroce0 -g %d -c -n 20" % gid_index(g0, "sroce0"),
        g1, "ibv_rc_pingpong -d sroce0 -g %d -c -n 20 %s" % (gid_index(g1, "sroce0"), g0.ip4),
        port=18515)
    assert srv.ok and cli.ok, (srv, cli)
    assert "20 iters in" in cli.out, cli
    for g in (g0, g1):
        unload_all_rdma_links(g)
