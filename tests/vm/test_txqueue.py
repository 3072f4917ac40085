# SPDX-License-Identifier: GPL-2.0
"""Every packet of a QP leaves through one transmit queue of a multi-queue netdev.

sroce's packets belong to a socket that caches no queue (it is never connected),
so the stack would choose a queue for each one:
by the sending CPU where the netdev has an XPS map. A QP sends from the process
that rings its doorbell and from softirq wherever its peer's packets are
received, so on a multi-queue NIC its packets could take several queues and
reach the wire out of order. This needs two CPUs, so the suite boots a guest
of its own (-smp 2).

In it, a veth pair with two queues each way joins init_net (va, device sa) to
namespace B (vb, device sb). XPS sends what CPU 0 transmits on va through
queue 0 and what CPU 1 transmits through queue 1; RPS hands everything va
receives to CPU 1. The client runs on CPU 0, so its doorbells transmit on CPU 0
while the completer and the responder, run by received packets, transmit on
CPU 1. An mq qdisc on va counts the packets of each queue. No IPv6 and static
neighbours on the pair: what crosses it is RoCE and perftest's TCP exchange.

The same guest runs many QPs' traffic at once on its two CPUs: every other
suite boots one-CPU guests, where the requester, the completer, the
responder, the ACK tasklet, the timers, the work items and the provider
never run at the same time.
"""
import os
import re
import time

import pytest

from guestrdma import REPO, TOOLS, client_server, console_guard, gid_index, rigmod, wait_all
from test_netns import InNs
from test_rdma_semantics import HOST_CASES

SETUP = """
ip netns add B
ip link add va numtxqueues 2 numrxqueues 2 type veth peer name vb numtxqueues 2 numrxqueues 2
ip link set vb netns B
sysctl -qw net.ipv6.conf.va.disable_ipv6=1
ip netns exec B sysctl -qw net.ipv6.conf.vb.disable_ipv6=1
ip addr add 10.78.0.1/24 dev va && ip link set va up
ip -n B link set lo up && ip -n B addr add 10.78.0.2/24 dev vb && ip -n B link set vb up
ip neigh replace 10.78.0.2 lladdr $(ip -n B -br link show vb | awk '{print $3}') dev va nud permanent
ip -n B neigh replace 10.78.0.1 lladdr $(ip -br link show va | awk '{print $3}') dev vb nud permanent
tc qdisc replace dev va root handle 1: mq
echo 1 > /sys/class/net/va/queues/tx-0/xps_cpus
echo 2 > /sys/class/net/va/queues/tx-1/xps_cpus
echo 2 > /sys/class/net/va/queues/rx-0/rps_cpus
echo 2 > /sys/class/net/va/queues/rx-1/rps_cpus
rdma link add sa type sroce netdev va
ip netns exec B rdma link add sb type sroce netdev vb
"""


@pytest.fixture(scope="module")
def txq_rig():
    r = rigmod.Rig(guests=1, smp=2, outdir=os.path.join(REPO, "build", "vm", "test-txqueue"),
                   install_tree=os.environ.get("SROCE_TEST_INSTALL_TREE") or None)
    r.start()
    try:
        g = r[0]
        assert g.check("nproc").strip() == "2"
        g.check(SETUP, timeout=120)
        yield r
    finally:
        r.stop()
    bad = r.bad_console_lines()
    assert not bad, "guest console shows kernel problems while stopping:\n" + "\n".join(bad)


@pytest.fixture
def guest(txq_rig):
    """The guest, its console checked for each test (conftest does so for the
    session rig's guests only)."""
    with console_guard(txq_rig, "this test ran"):
        yield txq_rig[0]


def queue_packets(g):
    """Packets sent through each of va's transmit queues (the mq qdisc's classes)."""
    out = g.check("tc -s class show dev va")
    found = re.findall(r"class mq 1:(\d+) .*?\n\s*Sent \d+ bytes (\d+) pkt", out)
    assert len(found) == 2, out
    return {int(q): int(n) for q, n in found}


def tx_packets(g):
    return int(g.read_file("/sys/class/infiniband/sa/ports/1/hw_counters/tx_packets"))


@pytest.mark.parametrize("tool,args", [
    ("ib_write_lat", "-s 64 -n 300 -F"),
    ("ib_write_bw", "-s 4096 -n 3000 -F"),
])
def test_one_queue_per_qp(guest, tool, args):
    g, b = guest, InNs(guest, "B")
    q0, t0 = queue_packets(g), tx_packets(g)
    srv, cli = client_server(
        b, "%s -d sb -x %d %s" % (tool, gid_index(b, "sb", addr="10.78.0.2"), args),
        g, "taskset -c 0 %s -d sa -x %d %s 10.78.0.2" % (
            tool, gid_index(g, "sa", addr="10.78.0.1"), args), timeout=180)
    assert srv.ok and cli.ok, (srv, cli)
    q1, t1 = queue_packets(g), tx_packets(g)
    per_queue = {q: q1[q] - q0[q] for q in q1}
    roce = t1 - t0
    # The RoCE packets alone are hundreds; the TCP exchange is a few dozen
    # packets at most, on whichever queue its socket chose.
    assert roce >= 300, roce
    assert max(per_queue.values()) >= roce, (
        "the QP's %d packets were spread over va's queues: %s" % (roce, per_queue))


def test_concurrent_traffic_on_two_cpus(guest):
    """Both directions at once, unpinned: RDMA WRITE bandwidth on 4 QPs each way,
    READ bandwidth on 2 QPs each way, rping's verified READs and WRITEs
    (64 KiB), sroce-rdma-test's two-host RC and SRQ cases (every byte and
    completion checked) and qperf's verified atomics, for about 20 s. Every
    program must succeed and the console stay clean (console_guard).

    The load overflows CPU 1's backlog queue (RPS hands it all of va's
    packets; netdev_max_backlog 1000): several hundred packets are dropped
    per run, as on a lossy link. RC retransmits; UC and UD lose the message
    by definition, so their cases, checked elsewhere, stay out of this run."""
    g, b = guest, InNs(guest, "B")
    cases = " ".join("--case %s" % c for c in HOST_CASES if not c.startswith(("uc_", "ud_")))
    ga, gb = gid_index(g, "sa", addr="10.78.0.1"), gid_index(b, "sb", addr="10.78.0.2")
    # -F: a failed clock calibration (TCG) voids perftest's figures but does
    # not fail the run; the traffic is what counts here
    bw = "%s -d %s -x %d -q %d -s 65536 -D 20 -F -p %d %s"
    servers = [b.spawn(bw % ("ib_write_bw", "sb", gb, 4, 19001, "")),
               g.spawn(bw % ("ib_read_bw", "sa", ga, 2, 19002, "")),
               b.spawn("for i in 1 2; do rping -s -a 10.78.0.2 -C 200 -S 65000 -V -p 19010 "
                       "|| exit 1; done"),
               b.spawn("for i in 1 2; do %s/sroce-rdma-test -d sb --gid %d --server --port 19020 "
                       "|| exit 1; done" % (TOOLS, gb))]
    qperf = b.spawn("qperf -lp 19030")
    try:
        time.sleep(2)
        clients = [g.spawn(bw % ("ib_write_bw", "sa", ga, 4, 19001, "10.78.0.2")),
                   b.spawn(bw % ("ib_read_bw", "sb", gb, 2, 19002, "10.78.0.1")),
                   g.spawn("for i in 1 2; do sleep 1; rping -c -a 10.78.0.2 -C 200 -S 65000 -V "
                           "-p 19010 || exit 1; done"),
                   g.spawn("for i in 1 2; do sleep 1; %s/sroce-rdma-test -d sa --gid %d "
                           "--client 10.78.0.2 --port 19020 %s || exit 1; done" % (TOOLS, ga,
                                                                                  cases)),
                   g.spawn("for i in 1 2; do qperf -cm1 -lp 19030 -t 3 10.78.0.2 "
                           "ver_rc_compare_swap ver_rc_fetch_add rc_bi_bw || exit 1; done")]
        results = wait_all(servers + clients, 300)
    finally:
        qperf.kill()
        qperf.wait(10)
    failed = [r for r in results if r.rc != 0]
    assert not failed, failed
    tests = [r for r in results if "sroce-rdma-test" in r.cmd]
    assert all(r.out.count("RESULT: PASS") == 2 for r in tests), tests
    q = results[-1]
    assert q.out.count("ver_rc_fetch_add:") == 2, q
