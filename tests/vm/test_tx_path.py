# SPDX-License-Identifier: GPL-2.0
"""sroce's two transmit paths: direct to the driver in bursts, and the IP output path.

- With the direct path on (the default) and off (tx_direct=0), RC SEND, WRITE
  and READ between the guests are byte-verified; tx_direct counts packets
  when it is on and none when it is off.
- A packet capture on the sender sees the directly sent packets.
- A shaping qdisc (netem) on the netdev keeps every packet on the IP path:
  netem still delays them and tx_direct stays put.
"""
import re

import pytest

from guestrdma import TOOLS, client_server, configure, unload_all_rdma_links, wait_for

RDMA_TEST = TOOLS + "/sroce-rdma-test"
PARAM = "/sys/module/sroce/parameters/tx_direct"
PORT = 18540


def counter(g, name):
    return int(g.check("cat /sys/class/infiniband/sroce0/ports/1/hw_counters/%s" % name))


@pytest.fixture(scope="module")
def pair(rig):
    for g in rig.guests:
        configure(g, families=("ipv4",))
    yield rig.guests
    for g in rig.guests:
        g.set_netem("")
        g.run("echo 1 > %s 2>/dev/null; true" % PARAM)
        unload_all_rdma_links(g)


def set_direct(pair, on):
    for g in pair:
        g.check("echo %d > %s" % (1 if on else 0, PARAM))


def traffic(pair, cases=("rc_send", "rc_write", "rc_read")):
    """Byte-verified RC traffic, guest 1 the requester; returns guest 1's
    (tx_packets, tx_direct) deltas."""
    g0, g1 = pair
    before = counter(g1, "tx_packets"), counter(g1, "tx_direct")
    s, c = client_server(
        g0, "timeout -s KILL 120 %s -d sroce0 --server --port %d" % (RDMA_TEST, PORT),
        g1, "timeout -s KILL 120 %s -d sroce0 --timeout 60 --client %s --port %d %s" %
        (RDMA_TEST, g0.ip4, PORT, " ".join("--case " + c for c in cases)),
        port=PORT, timeout=150)
    assert c.ok and "RESULT: PASS" in c.out and "FAIL" not in c.out, (s, c)
    return counter(g1, "tx_packets") - before[0], counter(g1, "tx_direct") - before[1]


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "ip_path"])
def test_both_paths_carry_verified_traffic(pair, direct):
    set_direct(pair, direct)
    try:
        sent, direct_sent = traffic(pair)
    finally:
        set_direct(pair, True)
    assert sent > 0
    if direct:
        # the first packets may wait for ARP on the IP path; the bulk goes direct
        assert direct_sent > sent // 2, (sent, direct_sent)
    else:
        assert direct_sent == 0, (sent, direct_sent)


def test_packet_capture_sees_direct_packets(pair):
    g0, g1 = pair
    set_direct(pair, True)
    traffic(pair, ("rc_send",))     # neighbours resolved, paths warm
    g1.check("rm -f /tmp/tx.pcap; (setsid dumpcap -q -P -i eth0 "
             "-f 'udp dst port 4791 and src host %s' -w /tmp/tx.pcap > /tmp/txcap.log 2>&1 "
             "& echo $! > /tmp/txcap.pid)" % g1.ip4)
    try:
        wait_for(lambda: "Capturing on" in g1.run("cat /tmp/txcap.log").out, timeout=60,
                 what="dumpcap to start")
        sent, direct_sent = traffic(pair, ("rc_write",))
    finally:
        g1.run("kill -INT $(cat /tmp/txcap.pid); sleep 2; kill -9 $(cat /tmp/txcap.pid) "
               "2>/dev/null; true")
    r = g1.check("capinfos -c -M /tmp/tx.pcap")
    m = re.search(r"Number of packets:\s*(\d+)", r)
    assert m, r
    captured = int(m.group(1))
    assert direct_sent > 0, (sent, direct_sent)
    # every packet guest 1 sent to port 4791 in that run was seen, the direct ones too
    assert captured >= sent, (captured, sent, direct_sent)


def test_shaping_qdisc_keeps_the_ip_path(pair):
    g0, g1 = pair
    set_direct(pair, True)
    g1.set_netem("delay 5ms")
    try:
        rtt = g1.check("ping -c 3 -i 0.3 %s | tail -1" % g0.ip4)
        sent, direct_sent = traffic(pair, ("rc_send", "rc_write"))
    finally:
        g1.set_netem("")
    m = re.search(r"= [\d.]+/([\d.]+)/", rtt)
    assert m and float(m.group(1)) >= 5.0, rtt     # netem is in the path
    assert sent > 0 and direct_sent == 0, (sent, direct_sent)
