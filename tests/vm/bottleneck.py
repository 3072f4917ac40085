# SPDX-License-Identifier: GPL-2.0
"""A congested link for the congestion-control suite and benchmark.

Guest 0 becomes a router: the receiver lives in network namespace "cc" behind
a veth pair whose egress (vcc0) is shaped to a rate (htb) with a CoDel queue
that marks CE when a packet waited longer than a threshold; guest 1 routes the
namespace's subnet through guest 0, so its RoCE traffic to 10.98.0.2 crosses
the bottleneck. The namespace has its own sroce device, sroce_cc, on vcc1.
"""
import re
import shlex

from guestrdma import wait_for

CC = "/sys/class/infiniband/%s/ports/1/cc/"
# Every parameter with its default (ConnectX's).
PARAMS = {
    "ecn_enable": 1, "np_enable": 1, "np_min_time_between_cnps": 4, "np_cnp_dscp": 48,
    "np_cnp_prio": 6, "rp_enable": 1, "rp_initial_alpha_value": 1023, "rp_dce_tcp_g": 1019,
    "rp_dce_tcp_rtt": 1, "rp_rate_reduce_monitor_period": 4, "rp_gd": 11,
    "rp_min_dec_fac": 50, "rp_min_rate": 1, "rp_max_rate": 0, "rp_rate_to_set_on_first_cnp": 0,
    "rp_time_reset": 300, "rp_byte_reset": 32767, "rp_threshold": 1, "rp_ai_rate": 5,
    "rp_hai_rate": 50,
}
# Time constants for a rig whose congestion feedback takes 10-20 ms, not
# microseconds (TCG): the cut, alpha and CNP periods of the hardware defaults
# scaled by 4000, the increase timer just above the cut period
# (Documentation/congestion.rst has how they were chosen).
RIG_RP = {"rp_max_rate": 100, "rp_dce_tcp_rtt": 4000, "rp_rate_reduce_monitor_period": 16000,
          "rp_time_reset": 20000, "rp_byte_reset": 262144, "rp_ai_rate": 5, "rp_hai_rate": 10,
          "rp_threshold": 5}
RIG_NP = {"np_min_time_between_cnps": 16000}
MBIT = 30
CE_THRESHOLD = "3ms"
QUEUE_PACKETS = 1000    # the CoDel queue's limit
FRAME_BYTES = 1100      # a full data frame at RoCE MTU 1024 (the rig's MTU 1500)
RX_ADDR = "10.98.0.2"


def qp_timeout(mbit=MBIT):
    """The flows' local ACK timeout (perftest -u: 4.096 us * 2^t): the smallest
    t, not below perftest's 14, whose timeout exceeds the longest the full
    queue holds a packet at mbit (17, 537 ms, against 290 ms at 30 Mbit/s): as
    on any link, the timeout must exceed the worst queueing delay. With
    perftest's default (14: 67 ms) the queue DCQCN keeps (0.2-0.8 MB, 50-200 ms)
    made the requesters time out and go back N, re-sending packets still
    queued, until the queue overflowed: test_congestion's two flows on a host
    with one core busy elsewhere, 6 runs, dropped 204..3855 packets after
    67..234 retries; with 17 they dropped 0, 0, 0, 0, 0 and 2 and never retried."""
    full_us = QUEUE_PACKETS * FRAME_BYTES * 8 / mbit
    t = 14
    while 4.096 * 2 ** t <= full_us:
        t += 1
    return t


ROUTER = """
set -e
modprobe veth; modprobe sch_htb; modprobe sch_codel
ip netns add cc
ip link add vcc0 type veth peer name vcc1
ip link set vcc1 netns cc
ip addr add 10.98.0.1/24 dev vcc0
ip link set vcc0 up
ip netns exec cc ip link set lo up
ip netns exec cc ip addr add {rx}/24 dev vcc1
ip netns exec cc ip link set vcc1 up
ip netns exec cc ip route add default via 10.98.0.1
sysctl -qw net.ipv4.ip_forward=1
tc qdisc add dev vcc0 root handle 1: htb default 1 r2q 100
tc class add dev vcc0 parent 1: classid 1:1 htb rate {mbit}mbit ceil {mbit}mbit burst 30k cburst 30k
tc qdisc add dev vcc0 parent 1:1 handle 10: codel limit {limit} target 20ms interval 200ms ecn ce_threshold {ce}
ip netns exec cc rdma link add sroce_cc type sroce netdev vcc1
"""


def counters(g, dev):
    """rdma statistic of dev port 1 as {name: value}."""
    out = g.check("rdma statistic show link %s/1" % dev)
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", out.split(" ", 2)[-1])}


def delta(before, after, name):
    return after[name] - before[name]


def set_params(g, dev, params):
    g.check("cd %s && " % (CC % dev) + " && ".join("echo %s > %s" % (v, k)
                                                     for k, v in params.items()))


def ns_gid(g):
    """The IPv4 RoCE v2 GID index of sroce_cc in namespace cc, or None."""
    out = g.run("ip netns exec cc bash -c 'cd /sys/class/infiniband/sroce_cc/ports/1 && "
                "grep -l . gid_attrs/types/* 2>/dev/null | while read f; do i=${f##*/}; "
                "echo $i $(cat gids/$i); done'").out
    for line in out.splitlines():
        i, gid = line.split()
        if gid.endswith("0a62:0002"):
            return int(i)
    return None


def build(router, sender, sender_dev, mbit=MBIT, ce=CE_THRESHOLD):
    """The bottleneck in guest router, routed to from guest sender; the rig's
    parameters on both ends. Returns sroce_cc's GID index."""
    router.check(ROUTER.format(mbit=mbit, ce=ce, rx=RX_ADDR, limit=QUEUE_PACKETS))
    sender.check("ip route add 10.98.0.0/24 via %s" % router.ip4)
    rx = wait_for(lambda: ns_gid(router), timeout=30, what="GID in namespace cc")
    set_params(router, "sroce_cc", RIG_NP)
    set_params(sender, sender_dev, RIG_RP)
    return rx


def tear_down(router, sender, sender_dev):
    sender.run("ip route del 10.98.0.0/24 2>/dev/null; true")
    router.run("pkill ib_write_bw; ip netns del cc; ip link del vcc0 2>/dev/null; "
               "sysctl -qw net.ipv4.ip_forward=0; true")
    wait_for(lambda: "sroce_cc" not in router.run("rdma link").out, timeout=60,
             what="sroce_cc to go with its namespace")
    set_params(sender, sender_dev, PARAMS)


def qdisc_stats(text):
    """From "tc -s qdisc show" of the CoDel queue: packets dropped (all), dropped
    because the queue was full (overlimit), marked CE, bytes sent, backlog."""
    def num(pat):
        m = re.search(pat, text)
        return int(m.group(1)) if m else 0
    m = re.search(r"backlog ([\d.]+)([KM]?)b", text)
    backlog = int(float(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2)]) if m else 0
    return {"dropped": num(r"dropped (\d+)"), "overlimit": num(r"drop_overlimit (\d+)"),
            "ce_mark": num(r"ce_mark (\d+)"),
            "sent": num(r"Sent (\d+) bytes"), "backlog": backlog}


def jain(xs):
    """Jain's fairness index of the rates xs (1: equal shares)."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0.0


def sampler(cmd, path, interval, rt=False):
    """A guest shell loop: a "T <time>" line, then cmd's output, every interval s.
    With rt the loop runs at SCHED_FIFO priority 1, so that busy-polling
    perftest processes do not delay samples by seconds on a slow host (a
    sample costs milliseconds of CPU)."""
    loop = ("rm -f {p}; while :; do echo T $(date +%s.%N); {c}; sleep {i}; done > {p}"
            .format(p=path, c=cmd, i=interval))
    return "chrt -f 1 sh -c %s" % shlex.quote(loop) if rt else loop


def blocks(text):
    """[(t, text)] of a sampler's output."""
    out, t, cur = [], None, []
    for line in text.splitlines():
        if line.startswith("T "):
            if t is not None:
                out.append((t, "\n".join(cur)))
            t, cur = float(line[2:]), []
        else:
            cur.append(line)
    if t is not None:
        out.append((t, "\n".join(cur)))
    return out


def qp_rows(text):
    """{lqpn: (tx_bytes, limiter rate Mbit/s)} of the RC QPs in rdma res -dd output."""
    rows = {}
    for line in text.splitlines():
        if "type RC" not in line:
            continue
        q = re.search(r"lqpn (\d+)", line)
        b = re.search(r"drv_tx_bytes (\d+)", line)
        r = re.search(r"drv_rate_mbps (\d+)", line)
        if q and b:
            rows[int(q.group(1))] = (int(b.group(1)), int(r.group(1)) if r else 0)
    return rows


def series(samples):
    """Per-flow series from the sender's samples: {"t": [...], "flows": [{"qpn",
    "t", "mbps", "limit"}]} with times relative to the first sample; rates
    are the byte deltas between consecutive samples."""
    t0 = samples[0][0]
    order, data = [], {}
    for t, text in samples:
        for q, (b, lim) in qp_rows(text).items():
            if q not in data:
                order.append(q)
                data[q] = []
            data[q].append((t - t0, b, lim))
    flows = []
    for q in order:
        pts = data[q]
        f = {"qpn": q, "t": [], "mbps": [], "limit": [], "bytes": [(t, b) for t, b, _ in pts]}
        for (ta, ba, _), (tb, bb, lim) in zip(pts, pts[1:]):
            if tb > ta:
                f["t"].append(tb)
                f["mbps"].append((bb - ba) * 8 / (tb - ta) / 1e6)
                f["limit"].append(lim)
        flows.append(f)
    return flows


def bytes_between(flow, t0, t1):
    """Bytes flow sent between t0 and t1 (interpolated on its samples; exact at
    sample times)."""
    return counter_between(flow["bytes"], t0, t1)


def counter_between(pts, t0, t1):
    """How much the counter sampled as [(t, value)] grew between t0 and t1."""
    def at(t):
        if t <= pts[0][0]:
            return pts[0][1]
        for (ta, ba), (tb, bb) in zip(pts, pts[1:]):
            if ta <= t <= tb:
                return ba + (bb - ba) * (t - ta) / (tb - ta) if tb > ta else bb
        return pts[-1][1]
    return at(t1) - at(t0)


def both_active(flows, settle, shortest=3.0):
    """(t0, t1): two of the sampler's times at both of which both flows had
    sent and still had their QPs, for rates measured between exact samples (a
    busy guest can leave seconds between samples: no interpolation). t1 is
    the last such time; t0 the first, or the first settle s after it if that
    leaves at least shortest s. None if no two such times are shortest s
    apart. Fairness is judged over that whole span: under DCQCN two flows on a
    slow host trade the lead for seconds at a time (0.8 against 21.8 Mbit/s
    over 7 s, then the other way round). A flow that ended shortly before t1
    (its QP outlives its last packet until perftest has reported) makes its
    rate a little low."""
    pts = [dict(f["bytes"]) for f in flows]
    both = sorted(t for t in set(pts[0]) & set(pts[1]) if pts[0][t] > 0 and pts[1][t] > 0)
    if not both:
        return None
    settled = [t for t in both if t >= both[0] + settle]
    for t0 in settled[:1] + both[:1]:
        if both[-1] - t0 >= shortest:
            return (t0, both[-1])
    return None
