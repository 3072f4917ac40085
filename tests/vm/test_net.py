# SPDX-License-Identifier: GPL-2.0
"""The RoCE v2 receive path: UDP port 4791, validation, per-port counters.

sroce0 lives in guest 0 on eth0; guest 1 sends crafted frames with
sroce-pktgen over AF_PACKET (no RDMA module needed there). No QPs exist yet,
so every valid packet is counted as rx_no_qp, CNPs as rx_cnp, and each
malformation in its own rx_drop_<reason> counter.
"""
import json
import shlex
import time

import pytest

from guestrdma import (TOOLS, Capture, add_link, del_netdevs, hw_counters,
                       unload_all_rdma_links, wait_for)

PKTGEN = TOOLS + "/sroce-pktgen"
COUNTERS = "/sys/class/infiniband/sroce0/ports/1/hw_counters"

# mode -> the counter its packets must land in ("none": the IP/UDP stack drops
# them before they reach the port 4791 socket, so no sroce counter moves)
MODES = {
    "valid": "rx_no_qp",
    "cnp": "rx_cnp",
    "icrc": "rx_drop_icrc",
    "trunc_bth": "rx_drop_trunc_bth",
    "trunc_hdrs": "rx_drop_trunc_hdrs",
    "tver": "rx_drop_tver",
    "opcode_unknown": "rx_drop_opcode_unknown",
    "opcode_unsupported": "rx_drop_opcode_unsupported",
    "payload": "rx_drop_payload",
    "pad": "rx_drop_pad",
    "align": "rx_drop_align",
    "udp_len": "rx_drop_udp_len",
    "ip_options": "rx_drop_ip_options",
    "ip6_exthdr": "rx_drop_ip_proto",
    "ip_version": "none",
    "udp_len_long": "none",
}
# modes that reach port 4791 the generic way (IP and UDP input), not directly
# at GRO (rx_direct): IP options or IPv6 extension headers, a UDP length short
# of the datagram
GENERIC_V4 = {"ip_options", "udp_len"}
GENERIC_V6 = {"ip6_exthdr", "udp_len"}
MODES6 = ["valid", "cnp", "icrc", "trunc_bth", "trunc_hdrs", "tver", "pad", "udp_len",
          "ip6_exthdr", "ip_version"]

DROP_REASONS = ["trunc_ip", "ip_version", "ip_hdr_len", "ip_options", "ip_len", "ip_frag",
                "ip_proto", "trunc_udp", "udp_len", "udp_port", "trunc_bth", "tver",
                "opcode_unknown", "opcode_unsupported", "trunc_hdrs", "payload", "pad",
                "align", "icrc"]
TRANSPORT_COUNTERS = ["tx_packets", "tx_bytes", "tx_err", "retry", "seq_nak_rcvd",
                      "rnr_nak_rcvd", "seq_nak_sent", "rnr_nak_sent", "dup_req",
                      "out_of_sequence", "ack_coalesced", "ackreq_skipped", "fetch_by_timer"]
# transport drops: packets that passed the validator but that a QP (or the
# GSI/UD path) refused; listed in hw_counters before the validator's reasons
TRANSPORT_DROPS = ["rx_drop_peer", "rx_drop_pkey", "rx_drop_psn", "rx_drop_ud_len",
                   "rx_drop_mtu", "rx_drop_uc", "rx_drop_dup_read", "rx_drop_qkey",
                   "rx_drop_no_recv"]
# congestion control (test_congestion.py): not outcomes of a packet, rx_cnp is
CC_COUNTERS = ["np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled",
               "rp_cnp_ignored", "rp_rate_reductions"]
# on-demand paging (test_objects.py): page events, not packet outcomes
ODP_COUNTERS = ["odp_waits", "odp_fault_pages", "odp_invalidated_pages"]
ALL_COUNTERS = (["rx_packets", "rx_bytes", "rx_nonlinear", "rx_direct", "rx_cnp", "rx_no_qp",
                 "rx_drop_nomem"] +
                TRANSPORT_COUNTERS + ["rx_stale"] + TRANSPORT_DROPS + CC_COUNTERS +
                ODP_COUNTERS +
                ["rx_drop_" + r for r in DROP_REASONS])
# every packet the socket gets ends in exactly one of these (no QPs exist here;
# the transport drops are outcomes too)
OUTCOMES = [c for c in ALL_COUNTERS
            if c not in ["rx_packets", "rx_bytes", "rx_nonlinear", "rx_direct"] +
            TRANSPORT_COUNTERS +
            CC_COUNTERS +
            ODP_COUNTERS]


@pytest.fixture
def pair(rig):
    g0, g1 = rig[0], rig[1]
    for g in (g0, g1):
        unload_all_rdma_links(g)
    add_link(g0)
    yield g0, g1
    for g in (g0, g1):
        unload_all_rdma_links(g)
    del_netdevs(g0, "dummy0")


@pytest.fixture(scope="module")
def _port_owner(rig):
    """Takes the links down at the end of the module if port made them."""
    yield
    for g in (rig[0], rig[1]):
        unload_all_rdma_links(g)


@pytest.fixture
def port(rig, _port_owner):
    """Like pair, but sroce0 is kept from one test to the next (the counter tests
    compare deltas): made afresh only when a test left anything else behind."""
    g0, g1 = rig[0], rig[1]
    links = [ln.split() for ln in g0.run("rdma link show").out.splitlines()]
    if [(f[1], f[-1]) for f in links if f[:1] == ["link"]] != [("sroce0/1", "eth0")] or \
            g1.check("rdma link show").strip():
        for g in (g0, g1):
            unload_all_rdma_links(g)
        add_link(g0)
    return g0, g1


def counters(g, dev="sroce0"):
    res = hw_counters(g, dev)
    assert res, "%s: no hw_counters for %s" % (g.name, dev)
    return res


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}


def pktgen(g1, g0, mode, n, v6=False, extra="", dst=None):
    """n packets of mode from g1 to dst (default: g0's eth0 address of the family)."""
    dst = dst or (g0.ip6 if v6 else g0.ip4)
    r = g1.run("%s -i eth0 -d %s %s --dst-mac %s -m %s -n %d %s" %
               (PKTGEN, dst, "-6" if v6 else "", g0.mac, mode, n, extra), timeout=600)
    assert r.ok, r
    assert "mode=%s sent=%d" % (mode, n) in r.out, r
    return r


def settle(g, n_expected=None, timeout=30):
    """Counters after the receiver has processed what was sent."""
    if n_expected is None:
        time.sleep(1.5)
        return counters(g)
    prev = None
    end = time.time() + timeout
    while True:
        c = counters(g)
        if c == prev and (n_expected <= 0 or c["rx_packets"] >= n_expected):
            return c
        if time.time() > end:
            return c
        prev = c
        time.sleep(0.5)


def test_pktgen_selftest(rig):
    """The generator's packets are what the validator says they are (offline)."""
    r = rig[1].run("%s --selftest" % PKTGEN)
    assert r.ok and "selftest: PASS" in r.out, r


def test_counters_shown_by_rdma_statistic(pair):
    g0, _ = pair
    assert sorted(counters(g0)) == sorted(ALL_COUNTERS)
    assert all(v == 0 for v in counters(g0).values())
    out = g0.check("rdma -j statistic show link sroce0/1")
    data = json.loads(out)
    entry = [e for e in data if e.get("ifname") == "sroce0"]
    assert entry, out
    flat = dict(entry[0])
    for v in list(flat.values()):
        if isinstance(v, dict):
            flat.update(v)
    for name in ALL_COUNTERS:
        assert name in flat, (name, out)
    text = g0.check("rdma statistic show link sroce0/1")
    assert "rx_drop_icrc 0" in text, text


def check_mode(g0, g1, mode, v6, n=40, direct_on=True):
    want = MODES[mode]
    before = counters(g0)
    pktgen(g1, g0, mode, n, v6)
    if want == "none":
        after = settle(g0)
        assert delta(before, after) == {}, (mode, delta(before, after))
        return
    after = settle(g0, before["rx_packets"] + n)
    d = delta(before, after)
    assert d.pop("rx_packets", 0) == n, (mode, d)
    assert d.pop("rx_bytes", 0) > 0, (mode, d)
    # how the driver hands a frame over (linear or in page fragments) is its choice
    assert d.pop("rx_nonlinear", 0) <= n, (mode, d)
    # plain RoCE v2 packets are taken at GRO, past the IP and UDP input
    direct = 0 if mode in (GENERIC_V6 if v6 else GENERIC_V4) or not direct_on else n
    assert d.pop("rx_direct", 0) == direct, (mode, d)
    if want == "rx_cnp":
        # no QP takes them: the reaction point counts them ignored
        assert d.pop("rp_cnp_ignored", 0) == n, (mode, d)
    assert d == {want: n}, (mode, d)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "ip6_exthdr"])
def test_ipv4_packets_land_in_their_counter(port, mode):
    check_mode(*port, mode, False)


@pytest.mark.parametrize("mode", MODES6)
def test_ipv6_packets_land_in_their_counter(port, mode):
    check_mode(*port, mode, True)


def test_random_fuzz_leaves_guest_healthy(port, rig):
    g0, g1 = port
    n = 20000
    before = counters(g0)
    pktgen(g1, g0, "random", n, extra="--seed 4791 --interval-us 20")
    pktgen(g1, g0, "random", 2000, v6=True, extra="--seed 17 --interval-us 20")
    after = settle(g0, 0)
    d = delta(before, after)
    got = d.get("rx_packets", 0)
    # most mutations reach the socket (the rest are dropped by IP/UDP or lost)
    assert got > (n + 2000) // 4, d
    assert sum(d.get(c, 0) for c in OUTCOMES) == got, d
    assert d.get("rx_drop_nomem", 0) == 0, d
    # still healthy: valid packets are counted, the link pings
    check_mode(g0, g1, "valid", False, n=20)
    assert g1.run("ping -c 2 -W 3 %s" % g0.ip4, timeout=30).ok


def set_mtu(guests, mtu):
    for g in guests:
        g.check("ip link set eth0 mtu %d" % mtu)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_fragmented_packets_are_validated_in_place(port, v6):
    """Frames larger than one receive buffer (4 KiB payloads at netdev MTU 9000,
    as RoCE MTU 4096 sends them) reach sroce as a head plus page fragments. The
    ICRC is checked over the fragments where they lie: good packets pass, and a
    bit flipped in the ICRC or in the payload just before it (in a fragment) is
    caught."""
    g0, g1 = port
    n = 40
    # every fifth packet of these modes (i % 5 == 3) is an ACK: no payload, linear
    big = len([i for i in range(n) if i % 5 != 3])
    set_mtu((g0, g1), 9000)
    try:
        for mode, want in (("valid", "rx_no_qp"), ("icrc", "rx_drop_icrc")):
            before = counters(g0)
            pktgen(g1, g0, mode, n, v6, extra="--payload-len 4096")
            after = settle(g0, before["rx_packets"] + n)
            d = delta(before, after)
            assert d.pop("rx_bytes", 0) > big * 4096, (mode, d)
            assert d.pop("rx_direct", 0) == n, (mode, d)
            assert d == {"rx_packets": n, "rx_nonlinear": big, want: n}, (mode, d)
    finally:
        set_mtu((g0, g1), 1500)
    # and at the usual MTU again
    check_mode(g0, g1, "valid", v6, n=10)


# ---------------------------------------------------------- direct receive

RX_DIRECT = "/sys/module/sroce/parameters/rx_direct"
NFT_TABLE = "sroce_test"


def tc_ingress_drop(protocol, match):
    return ("tc qdisc add dev eth0 clsact && tc filter add dev eth0 ingress protocol %s "
            "u32 match %s dport 4791 0xffff action drop" % (protocol, match),
            "tc qdisc del dev eth0 clsact")


def nft_hook(family, hook, rule):
    chain = "c" + hook
    return ("nft add table %s %s && nft add chain %s %s %s '{ type filter hook %s priority 0; }' "
            "&& nft add rule %s %s %s udp dport 4791 %s" %
            (family, NFT_TABLE, family, NFT_TABLE, chain, hook, family, NFT_TABLE, chain, rule),
            "nft delete table %s %s" % (family, NFT_TABLE))


# what each case sets up in guest 0 and takes down again; the family of the
# packets sent (IPv6 or not); whether they still reach port 4791 (all of them)
# or are dropped before (none); whether the other family's packets are still
# taken directly meanwhile (the hook is of one family) or not
STEP_ASIDE = {
    "parameter off": ("echo N > " + RX_DIRECT, "echo Y > " + RX_DIRECT, False, True, False),
    "GRO off": ("ethtool -K eth0 gro off", "ethtool -K eth0 gro on", False, True, False),
    "tc ingress drop": tc_ingress_drop("ip", "ip") + (False, False, False),
    "netfilter input drop": nft_hook("ip", "input", "drop") + (False, False, True),
    "netfilter prerouting count": nft_hook("ip", "prerouting", "counter") + (False, True, True),
    "ipv6 tc ingress drop": tc_ingress_drop("ipv6", "ip6") + (True, False, False),
    "ipv6 netfilter input drop": nft_hook("ip6", "input", "drop") + (True, False, True),
    "ipv6 netfilter prerouting count": nft_hook("ip6", "prerouting", "counter") +
    (True, True, True),
}


def pktgen_valid(g0, g1, n, dst=None, src=None, v6=False):
    pktgen(g1, g0, "valid", n, v6, extra="--src " + src if src else "", dst=dst)


def send_valid(g0, g1, n, dst=None, v6=False):
    """n valid packets (no QP: rx_no_qp) to dst (g0's eth0 address): the counters'
    delta in g0 once they are in."""
    before = counters(g0)
    pktgen_valid(g0, g1, n, dst, v6=v6)
    return delta(before, settle(g0, before["rx_packets"] + n, timeout=10))


@pytest.mark.parametrize("case", list(STEP_ASIDE))
def test_direct_receive_steps_aside(port, case):
    """Plain RoCE v2 packets are taken at GRO (rx_direct), past the IP and UDP
    input, only while nothing there could act on them: with the module parameter
    off, GRO off, a tc ingress filter or a netfilter hook of the packets' family
    on the way, every packet goes the generic way (tc and netfilter drop what
    their rules drop, and count what they see), the other family's are still
    taken directly where the hook is of one family only, and once the hook is
    gone they are all taken directly again."""
    g0, g1 = port
    n = 20
    up, down, v6, arrive, other_direct = STEP_ASIDE[case]
    g0.check(up)
    try:
        d = send_valid(g0, g1, n, v6=v6)
        if "count" in case:
            rules = g0.check("nft list table %s %s" % ("ip6" if v6 else "ip", NFT_TABLE))
            assert "packets %d " % n in rules, rules
        other = send_valid(g0, g1, n, v6=not v6)
    finally:
        g0.check(down)
    want = {"rx_packets": n, "rx_no_qp": n} if arrive else {}
    assert (d.pop("rx_bytes", 0) > 0) == arrive, (case, d)
    d.pop("rx_nonlinear", None)
    assert d == want, (case, d)
    assert other.get("rx_no_qp") == n, (case, other)
    assert other.get("rx_direct", 0) == (n if other_direct else 0), (case, other)
    for fam in (v6, not v6):
        d = send_valid(g0, g1, n, v6=fam)
        assert d.get("rx_direct") == n and d.get("rx_no_qp") == n, (case, fam, d)


def test_direct_receive_leaves_packets_to_taps(port):
    """A packet capture on the netdev sees every received packet: while one runs,
    packets go the generic way past the taps."""
    g0, g1 = port
    n = 20
    with Capture(g0, "udp dst port 4791", count=2 * n) as cap:
        d = send_valid(g0, g1, n)
        d6 = send_valid(g0, g1, n, v6=True)
    assert len(cap.fields(["udp.dstport"])) == 2 * n
    for x in (d, d6):
        assert x.get("rx_no_qp") == n and "rx_direct" not in x, x


# A socket of kind argv[2] that counts the datagrams to UDP port 4791 it is given,
# up to argv[1], within 60 s: "tap4", a packet socket for IPv4 alone bound to
# eth0 (a DHCP client's kind; whole frames); "raw4" or "raw6", a raw socket for
# UDP (IPv4 with the IP header, IPv6 without).
LISTENER = r"""
import socket, sys, time
kind = sys.argv[2]
if kind == "tap4":
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind(("eth0", 0x0800))
else:
    s = socket.socket(socket.AF_INET6 if kind == "raw6" else socket.AF_INET,
                      socket.SOCK_RAW, socket.IPPROTO_UDP)
s.settimeout(1)
open("/tmp/listener.ready", "w").close()
want, n, end = int(sys.argv[1]), 0, time.time() + 60
while n < want and time.time() < end:
    try:
        f = s.recv(4096)
    except socket.timeout:
        continue
    if kind == "tap4":
        off = 14 + (f[14] & 15) * 4 if len(f) > 23 and f[23] == 17 else len(f)
    else:
        off = 0 if kind == "raw6" else (f[0] & 15) * 4
    if f[off + 2:off + 4] == b"\x12\xb7":
        n += 1
print("seen=%d" % n)
"""


def send_past_listener(g0, g1, kind, n, v6=False):
    """n valid packets sent while a LISTENER of kind runs in g0: asserts that it
    saw them all; the counters' delta in g0."""
    g0.check("rm -f /tmp/listener.ready")
    proc = g0.spawn("exec python3 -c %s %d %s" % (shlex.quote(LISTENER), n, kind))
    try:
        wait_for(lambda: g0.run("stat /tmp/listener.ready").ok or proc.poll(),
                 timeout=60, what="the %s socket" % kind)
        d = send_valid(g0, g1, n, v6=v6)
        r = proc.wait(60)
    finally:
        proc.kill()
    assert r.ok and "seen=%d" % n in r.out, r
    return d


def test_direct_receive_leaves_packets_to_bound_ipv4_taps(port):
    """A packet socket bound to the netdev for IPv4 alone sees every received
    packet: while one is open, packets go the generic way past it."""
    g0, g1 = port
    n = 20
    d = send_past_listener(g0, g1, "tap4", n)
    assert d.get("rx_no_qp") == n and "rx_direct" not in d, d


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_direct_receive_leaves_packets_to_raw_udp_sockets(port, v6):
    """A raw socket for UDP gets a copy of every UDP datagram delivered locally:
    while one is open, packets of its family go the generic way, through the
    local delivery that hands it its copy."""
    g0, g1 = port
    n = 20
    d = send_past_listener(g0, g1, "raw6" if v6 else "raw4", n, v6)
    assert d.get("rx_no_qp") == n and "rx_direct" not in d, d
    d = send_valid(g0, g1, n, v6=v6)
    assert d.get("rx_direct") == n and d.get("rx_no_qp") == n, d


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_direct_receive_only_for_the_netdevs_addresses(port, v6):
    """A packet for another local address (one of dummy0's, taken on eth0 by the
    weak host model) goes through the IP layer's local delivery, as before."""
    g0, g1 = port
    n = 20
    addr = "fd99:70::1" if v6 else "10.99.70.1"
    g0.check("ip link add dummy0 type dummy && ip link set dummy0 up && "
             "ip addr add %s/%d dev dummy0 nodad" % (addr, 128 if v6 else 32))
    try:
        d = send_valid(g0, g1, n, dst=addr, v6=v6)
    finally:
        del_netdevs(g0, "dummy0")
    assert d.get("rx_no_qp") == n and "rx_direct" not in d, d


MARTIANS = {False: ("127.0.0.9", "224.0.0.9", "255.255.255.255", "0.0.0.0"),
            True: ("::1", "ff02::1")}


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_direct_receive_leaves_martian_sources_to_the_ip_layer(port, v6):
    """Packets from a source the IP input drops (IPv4: loopback, multicast,
    broadcast or zero; IPv6: loopback or multicast) go the generic way, where
    they are dropped as they always were: only the valid packets sent after
    them arrive."""
    g0, g1 = port
    n = 10
    before = counters(g0)
    for src in MARTIANS[v6]:
        pktgen_valid(g0, g1, n, src=src, v6=v6)
    pktgen_valid(g0, g1, n, v6=v6)
    d = delta(before, settle(g0, before["rx_packets"] + n, timeout=10))
    d.pop("rx_bytes", None)
    d.pop("rx_nonlinear", None)
    assert d == {"rx_packets": n, "rx_direct": n, "rx_no_qp": n}, d


# ---------------------------------------------------------- port 4791 owners

def test_rxe_cannot_load_while_sroce_has_the_port(pair):
    g0, g1 = pair
    r = g0.run("modprobe rdma_rxe")
    assert r.rc != 0, r
    assert g0.run("lsmod | grep -q '^rdma_rxe '").rc != 0
    # sroce keeps working
    check_mode(g0, g1, "valid", False, n=10)


def test_rxe_loads_after_last_sroce_link_is_deleted(pair):
    g0, _ = pair
    g0.check("ip link add dummy0 type dummy && ip link set dummy0 up")
    add_link(g0, "sroce1", "dummy0")
    g0.check("rdma link del sroce0")
    assert g0.run("modprobe rdma_rxe").rc != 0     # sroce1 still holds the port
    g0.check("rdma link del sroce1")
    assert g0.run("lsmod | grep -q '^sroce '").ok  # module stays loaded
    g0.check("modprobe rdma_rxe")
    add_link(g0, "rxe0", "eth0", "rxe")
    g0.check("rdma link del rxe0")


def test_sroce_link_add_fails_while_rxe_has_the_port(pair):
    g0, g1 = pair
    g0.check("rdma link del sroce0")
    g0.check("modprobe rdma_rxe")
    g0.check("dmesg -C")
    r = g0.run("rdma link add sroce0 type sroce netdev eth0")
    assert r.rc != 0, r
    assert "Address already in use" in r.err, r
    assert "UDP port 4791 is in use" in g0.check("dmesg"), g0.check("dmesg")
    assert g0.run("test -e /sys/class/infiniband/sroce0").rc != 0
    # and works again once rdma_rxe is gone
    g0.check("modprobe -r rdma_rxe")
    add_link(g0)
    check_mode(g0, g1, "cnp", False, n=5)
