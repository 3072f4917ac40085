# SPDX-License-Identifier: GPL-2.0
"""Pairs of device kinds for the two-guest suites (test_verbs.py, test_rdmacm.py).

A suite imports the module-scoped, parametrized "pair" fixture (and both_ok);
each test then runs once per pair of device kinds (guest 0, guest 1):

  sroce-sroce   sroce on both ends
  sroce-rxe     sroce as the server/responder, the kernel's rdma_rxe as client
  rxe-sroce     rdma_rxe as the server, sroce as the client/requester
  rxe-rxe       the harness baseline on rdma_rxe alone; only with
                SROCE_TEST_RXE_BASELINE=1 (skipped in a normal "make test")

sroce and rdma_rxe cannot share a guest (both bind UDP 4791), so interop
always puts one kind in each guest. pytest runs all tests of one pair in a
module before reconfiguring the guests for the next.
"""
import os

import pytest

from conftest import active_mtu, add_link, gid_index, unload_all_rdma_links, wait_for

BASELINE = os.environ.get("SROCE_TEST_RXE_BASELINE") == "1"
DEVNAME = {"sroce": "sroce0", "rxe": "rxe0"}

PAIRS = [
    pytest.param(("sroce", "sroce"), id="sroce-sroce"),
    pytest.param(("sroce", "rxe"), id="sroce-rxe"),
    pytest.param(("rxe", "sroce"), id="rxe-sroce"),
    pytest.param(("rxe", "rxe"), id="rxe-rxe",
                 marks=pytest.mark.skipif(not BASELINE, reason="rxe<->rxe harness baseline: "
                                          "set SROCE_TEST_RXE_BASELINE=1")),
]


class Side:
    """One end of a pair: a guest with one RDMA device of one kind."""

    def __init__(self, guest, kind):
        self.guest, self.kind, self.dev = guest, kind, DEVNAME[kind]
        self.gid = {}
        self.mtu = None

    def __repr__(self):
        return "%s:%s" % (self.guest.name, self.dev)


class Pair:
    def __init__(self, server, client):
        self.server, self.client = server, client

    @property
    def mtu(self):
        """Largest message both ends take in one packet (UD payloads must fit)."""
        return min(self.server.mtu, self.client.mtu)


def configure(g, kind):
    """Unload every RDMA link in g, then add the one device of kind on eth0."""
    unload_all_rdma_links(g)
    if kind == "rxe":
        g.check("modprobe rdma_rxe")
    add_link(g, DEVNAME[kind], "eth0", kind)
    side = Side(g, kind)

    def gids():
        try:
            return {f: gid_index(g, side.dev, ipv6=(f == "ipv6")) for f in ("ipv4", "ipv6")}
        except AssertionError:
            return None
    # ib_core fills the GID table from the netdev's addresses asynchronously.
    side.gid = wait_for(gids, timeout=30, what="IPv4 and IPv6 RoCE v2 GIDs on %s" % side.dev)
    side.mtu = active_mtu(g, side.dev)
    return side


@pytest.fixture(scope="module", params=PAIRS)
def pair(request, rig):
    kinds = request.param
    rig.mark_consoles()
    sides = [configure(g, k) for g, k in zip(rig.guests, kinds)]
    bad = rig.bad_console_lines()
    if bad:
        pytest.fail("guest console shows kernel problems while configuring %s:\n%s" %
                    ("-".join(kinds), "\n".join(bad)))
    yield Pair(*sides)
    rig.mark_consoles()
    for g in rig.guests:
        unload_all_rdma_links(g)
    bad = rig.bad_console_lines()
    if bad:
        pytest.fail("guest console shows kernel problems while removing %s:\n%s" %
                    ("-".join(kinds), "\n".join(bad)))


def both_ok(s, c):
    assert c.rc == 0, "client failed: %r\nserver: %r" % (c, s)
    assert s.rc == 0, "server failed: %r\nclient: %r" % (s, c)
