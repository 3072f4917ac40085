# SPDX-License-Identifier: GPL-2.0
"""Device kinds and pairs of them for the suites that run on both sroce and rdma_rxe.

A suite imports the module-scoped, parametrized "pair" fixture; each test then
runs once per pair of device kinds (guest 0, guest 1):

  sroce-sroce   sroce on both ends
  sroce-rxe     sroce as the server/responder, the kernel's rdma_rxe as client
  rxe-sroce     rdma_rxe as the server, sroce as the client/requester
  rxe-rxe       the harness baseline on rdma_rxe alone; only with
                SROCE_TEST_RXE_BASELINE=1 (skipped in a normal "make test")

sroce and rdma_rxe cannot share a guest (both bind UDP 4791), so interop
always puts one kind in each guest. pytest runs all tests of one pair in a
module before reconfiguring the guests for the next. KINDS parametrizes the
suites that use one device (sroce; rxe as the baseline).
"""
import os

import pytest

from guestrdma import configure_each, console_guard, on_each, unload_all_rdma_links

BASELINE = os.environ.get("SROCE_TEST_RXE_BASELINE") == "1"
_NO_BASELINE = "rxe harness baseline: set SROCE_TEST_RXE_BASELINE=1"

PAIRS = [
    pytest.param(("sroce", "sroce"), id="sroce-sroce"),
    pytest.param(("sroce", "rxe"), id="sroce-rxe"),
    pytest.param(("rxe", "sroce"), id="rxe-sroce"),
    pytest.param(("rxe", "rxe"), id="rxe-rxe",
                 marks=pytest.mark.skipif(not BASELINE, reason=_NO_BASELINE)),
]

KINDS = [pytest.param("sroce", id="sroce"),
         pytest.param("rxe", id="rxe", marks=pytest.mark.skipif(not BASELINE,
                                                               reason=_NO_BASELINE))]


class Pair:
    """server (guest 0) and client (guest 1): guestrdma.Side each."""

    def __init__(self, server, client):
        self.server, self.client = server, client
        self.kinds = (server.kind, client.kind)

    @property
    def mtu(self):
        """Largest message both ends take in one packet (UD payloads must fit)."""
        return min(self.server.mtu, self.client.mtu)


def configure_pair(rig, kinds):
    """Guest 0 and 1 get one device each of kinds[0] and kinds[1]: a Pair."""
    with console_guard(rig, "configuring " + "-".join(kinds)):
        return Pair(*configure_each(rig.guests[:len(kinds)], kinds))


def unconfigure(rig, guests, what):
    """No RDMA link left in guests (and a clean console meanwhile)."""
    with console_guard(rig, "removing " + what):
        on_each(unload_all_rdma_links, list(guests))


@pytest.fixture(scope="module", params=PAIRS)
def pair(request, rig):
    p = configure_pair(rig, request.param)
    yield p
    unconfigure(rig, rig.guests, "-".join(request.param))
