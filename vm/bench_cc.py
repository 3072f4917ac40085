#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench (congestion part): two RC flows through one bottleneck, DCQCN on and off.

Boots two guests as users run them (no slub_debug). Guest 0 routes into a
network namespace behind a veth shaped to --mbit (htb) with a CoDel queue that
marks CE above --ce (tests/vm/bottleneck.py); guest 1 sends two ib_write_bw
flows of 64 KiB WRITEs to the namespace's sroce device, staggered: flow A runs
alone for the first third of --seconds, A and B together for the second, B
alone for the last. The sender runs the rig's DCQCN parameters
(Documentation/congestion.rst) and the flows an ACK timeout above the longest
the queue holds a packet (--qp-timeout); the run repeats with rp_enable 0.

Sampled every --interval seconds inside the guests: each QP's transmitted bytes
and its limiter's current rate (rdma resource show qp -dd, guest 1) and the
bottleneck queue's backlog, drops and CE marks (tc -s qdisc, guest 0).
Reported per mode, medians over --reps runs: utilization of the bottleneck
(bytes it delivered: Ethernet frames, as the shaper counts them) while both
flows run and while one runs alone, the load the sender offered while both
run (bytes sent per QP, IP datagram plus Ethernet header, retransmissions
included), Jain's fairness index of the flows' sending rates while both run, drops at the bottleneck, the sender's retry and
seq_nak_rcvd counters, the queue's largest backlog. Output in --out (default
build/bench): congestion.json and congestion.png (each flow's rate and the
queue over time, first run of each mode).

Never part of "make test" (tests/vm/test_congestion.py runs a short version
with assertions).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "vm"))
import bottleneck as bn  # noqa: E402
import guestrdma  # noqa: E402
from guestrdma import rigmod  # noqa: E402

PORTS = (18611, 18612)
MARGIN = 2.0   # seconds left out at both ends of a window


def active(flow):
    """(first, last) time at which flow's byte counter moved."""
    moved = [tb for (ta, ba), (tb, bb) in zip(flow["bytes"], flow["bytes"][1:]) if bb > ba]
    return (min(moved), max(moved)) if moved else (None, None)


def windows(flows):
    """{"A alone", "both", "B alone"}: (t0, t1) windows inside the flows' active
    times, MARGIN seconds in from each edge."""
    (a0, a1), (b0, b1) = active(flows[0]), active(flows[1])
    w = {"A alone": (a0 + MARGIN, b0 - MARGIN), "both": (b0 + MARGIN, a1 - MARGIN),
         "B alone": (a1 + MARGIN, b1 - MARGIN)}
    return {k: v for k, v in w.items() if v[1] - v[0] >= 1.0}


class CcBench:
    def __init__(self, rig, a):
        self.rig, self.a = rig, a
        self.router, self.sender = rig[0], rig[1]
        self.runs = {"on": [], "off": []}

    def setup(self):
        sides = [guestrdma.configure(g, "sroce", families=("ipv4",)) for g in self.rig.guests]
        self.tx = sides[1]
        self.rx_gid = bn.build(self.router, self.sender, self.tx.dev, mbit=self.a.mbit,
                               ce=self.a.ce)
        if self.a.set:
            bn.set_params(self.sender, self.tx.dev, self.a.set)
        if self.a.np_set:
            bn.set_params(self.router, "sroce_cc", self.a.np_set)

    def one(self, mode, rep):
        a, g0, g1, dev = self.a, self.router, self.sender, self.tx.dev
        bn.set_params(g1, dev, {"rp_enable": 1 if mode == "on" else 0})
        third = a.seconds / 3.0
        flags = "-s 65536 -D %d -u %d" % (round(2 * third), a.qp_timeout)
        servers = [g0.spawn("ip netns exec cc ib_write_bw -d sroce_cc -i 1 -x %d -F %s -p %d"
                            % (self.rx_gid, flags, p)) for p in PORTS]
        guestrdma.wait_for(lambda: all(g0.run("ip netns exec cc ss -Hltn 'sport = :%d' | "
                                              "grep -q ." % p).ok for p in PORTS),
                           timeout=60, what="both servers to listen")
        c0 = bn.counters(g1, dev)
        q0 = bn.qdisc_stats(g0.check("tc -s qdisc show dev vcc0 parent 1:1"))
        s1 = g1.spawn(bn.sampler("rdma resource show qp link %s -dd" % dev, "/tmp/cc-tx.txt",
                              a.interval))
        s0 = g0.spawn(bn.sampler("tc -s qdisc show dev vcc0 parent 1:1", "/tmp/cc-q.txt",
                              a.interval))
        time.sleep(1)
        cmd = "ib_write_bw -d %s -i 1 -x %d -F %s -p %%d %s" % (dev, self.tx.gid["ipv4"],
                                                               flags, bn.RX_ADDR)
        clients = [g1.spawn(cmd % PORTS[0])]
        time.sleep(third)
        clients.append(g1.spawn(cmd % PORTS[1]))
        results = guestrdma.wait_all(clients + servers, 2 * third + 120)
        time.sleep(1)
        for s in (s0, s1):
            s.kill(15)
            s.wait(20)
        c1 = bn.counters(g1, dev)
        q1 = bn.qdisc_stats(g0.check("tc -s qdisc show dev vcc0 parent 1:1"))
        tx = bn.blocks(g1.check("cat /tmp/cc-tx.txt", timeout=60))
        qs = bn.blocks(g0.check("cat /tmp/cc-q.txt", timeout=60))
        failed = [r for r in results if not r.ok]
        flows = bn.series(tx)
        run = {"mode": mode, "rep": rep, "failed": [(r.cmd, r.rc, r.err[-500:]) for r in failed],
               "counters": {k: bn.delta(c0, c1, k) for k in ("retry", "seq_nak_rcvd",
                                                             "rp_rate_reductions",
                                                             "rp_cnp_handled", "tx_packets")},
               "qdisc": {k: q1[k] - q0[k] for k in ("dropped", "overlimit", "ce_mark", "sent")}}
        qt0 = qs[0][0] if qs else 0
        qstats = [bn.qdisc_stats(x) for _, x in qs]
        run["queue"] = {"t": [t - qt0 for t, _ in qs], "backlog": [q["backlog"] for q in qstats]}
        delivered = [(t - qt0, q["sent"]) for (t, _), q in zip(qs, qstats)]
        run["max_backlog"] = max(run["queue"]["backlog"], default=0)
        run["flows"] = [{k: f[k] for k in ("qpn", "t", "mbps", "limit")} for f in flows]
        if len(flows) == 2:
            w = windows(flows)
            run["windows"] = w
            for name, (t0, t1) in w.items():
                sent = [bn.bytes_between(f, t0, t1) * 8 / (t1 - t0) / 1e6 for f in flows]
                if name == "A alone":
                    sent = sent[:1]
                elif name == "B alone":
                    sent = sent[1:]
                out = bn.counter_between(delivered, t0, t1) * 8 / (t1 - t0) / 1e6
                run[name] = {"mbps": sent, "offered": sum(sent) / a.mbit,
                             "utilization": out / a.mbit}
                if name == "both":
                    run[name]["jain"] = bn.jain(sent)
        else:
            run["failed"].append(("flows", len(flows), "saw %d RC QPs" % len(flows)))
        self.runs[mode].append(run)
        both = run.get("both", {})
        print("  %-3s rep %d: both %s util %s jain %s | drops %d (queue full %d) retry %d "
              "seq_nak %d "
              "cuts %d | max queue %d B%s" % (
                  mode, rep + 1, "+".join("%.1f" % x for x in both.get("mbps", [])),
                  "%.2f" % both["utilization"] if both else "-",
                  "%.3f" % both["jain"] if both else "-", run["qdisc"]["dropped"],
                  run["qdisc"]["overlimit"],
                  run["counters"]["retry"], run["counters"]["seq_nak_rcvd"],
                  run["counters"]["rp_rate_reductions"], run["max_backlog"],
                  " FAILED: %s" % run["failed"] if run["failed"] else ""), flush=True)

    def run(self):
        self.setup()
        for rep in range(self.a.reps):
            for mode in self.a.modes:
                self.one(mode, rep)


def median_of(runs, path):
    vals = []
    for r in runs:
        v = r
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
            if v is None:
                break
        if isinstance(v, (int, float)):
            vals.append(v)
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


def summarize(runs):
    rows = {}
    for mode, rs in runs.items():
        if not rs:
            continue
        rows[mode] = {
            "utilization both": median_of(rs, ("both", "utilization")),
            "offered both": median_of(rs, ("both", "offered")),
            "utilization A alone": median_of(rs, ("A alone", "utilization")),
            "utilization B alone": median_of(rs, ("B alone", "utilization")),
            "jain both": median_of(rs, ("both", "jain")),
            "drops": median_of(rs, ("qdisc", "dropped")),
            "drops, queue full": median_of(rs, ("qdisc", "overlimit")),
            "ce marks": median_of(rs, ("qdisc", "ce_mark")),
            "retry": median_of(rs, ("counters", "retry")),
            "seq_nak_rcvd": median_of(rs, ("counters", "seq_nak_rcvd")),
            "rate reductions": median_of(rs, ("counters", "rp_rate_reductions")),
            "max backlog B": median_of(rs, ("max_backlog",)),
        }
    return rows


def print_table(rows):
    modes = list(rows)
    names = list(rows[modes[0]]) if modes else []
    print("\n%-22s %s" % ("median (min..max)", "".join("%-30s" % ("DCQCN " + m)
                                                        for m in modes)))
    for n in names:
        cells = []
        for m in modes:
            v = rows[m][n]
            fmt = "%.3g" if n.startswith(("util", "offered", "jain")) else "%.0f"
            cells.append("-" if v is None else (fmt + " (" + fmt + ".." + fmt + ")") % v)
        print("%-22s %s" % (n, "".join("%-30s" % c for c in cells)))


def chart(runs, mbit, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = [m for m in ("on", "off") if runs.get(m)]
    fig, axes = plt.subplots(2, len(modes), figsize=(6.5 * len(modes), 6.5), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    for i, m in enumerate(modes):
        run = runs[m][0]
        ax, aq = axes[0][i], axes[1][i]
        for f, name, color in zip(run["flows"], ("flow A", "flow B"), ("tab:blue", "tab:orange")):
            ax.plot(f["t"], f["mbps"], color=color, label="%s (QP %d) sent" % (name, f["qpn"]))
            if m == "on":
                ax.plot(f["t"], [min(x, 2 * mbit) for x in f["limit"]], color=color,
                        linestyle=":", linewidth=1, label="%s limiter rate" % name)
        ax.axhline(mbit, color="black", linestyle="--", linewidth=1,
                   label="bottleneck %d Mbit/s" % mbit)
        ax.set_ylim(0, 2 * mbit)
        ax.set_ylabel("Mbit/s")
        ax.set_title("DCQCN %s: drops %d, retries %d" % (m, run["qdisc"]["dropped"],
                                                         run["counters"]["retry"]))
        ax.legend(loc="upper right", fontsize=7)
        aq.plot(run["queue"]["t"], [b / 1024 for b in run["queue"]["backlog"]], color="tab:red")
        aq.set_ylabel("queue KiB")
        aq.set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def parse_params(text):
    out = {}
    for kv in filter(None, text.split(",")):
        k, v = kv.split("=", 1)
        if k not in bn.PARAMS:
            raise SystemExit("unknown parameter %s (known: %s)" % (k, ", ".join(bn.PARAMS)))
        out[k] = int(v)
    return out


def main():
    rigmod.exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=60, help="length of a run (default 60)")
    ap.add_argument("--reps", type=int, default=3, help="runs per mode (default 3)")
    ap.add_argument("--modes", default="on,off", help="DCQCN on, off (default both)")
    ap.add_argument("--mbit", type=int, default=bn.MBIT, help="bottleneck rate")
    ap.add_argument("--ce", default=bn.CE_THRESHOLD, help="CoDel ce_threshold")
    ap.add_argument("--qp-timeout", type=int,
                    help="the flows' ACK timeout, perftest -u (default: above the full "
                         "queue's delay at --mbit, 17 at 30; perftest's own: 14)")
    ap.add_argument("--interval", type=float, default=0.5, help="sampling interval, s")
    ap.add_argument("--set", default="", help="more sender parameters, k=v,...")
    ap.add_argument("--np-set", default="", help="more receiver parameters, k=v,...")
    ap.add_argument("--slub-debug", action="store_true")
    ap.add_argument("--out", default=os.path.join(rigmod.BUILD, "bench"))
    a = ap.parse_args()
    a.modes = [m for m in a.modes.split(",") if m]
    if a.qp_timeout is None:
        a.qp_timeout = bn.qp_timeout(a.mbit)
    a.set = parse_params(a.set)
    a.np_set = parse_params(a.np_set)
    os.makedirs(a.out, exist_ok=True)
    rig = rigmod.Rig(guests=2, outdir=os.path.join(a.out, "cc-rig"), debug=a.slub_debug)
    t0 = time.time()
    with rig:
        print("bench-cc: 2 guests of %s (%s) up in %.1f s; bottleneck %d Mbit/s, CoDel "
              "ce_threshold %s; %d s runs, ACK timeout -u %d"
              % (rig.kver, "kvm" if rig.kvm else "tcg", rig.boot_seconds, a.mbit, a.ce,
                 a.seconds, a.qp_timeout), flush=True)
        b = CcBench(rig, a)
        b.run()
        bad = rig.console_problems()
    bad += rig.bad_console_lines()
    rows = summarize(b.runs)
    print_table(rows)
    print("sender parameters: %s" % ", ".join("%s %s" % kv for kv in
                                              sorted(dict(bn.RIG_RP, **a.set).items())))
    print("receiver parameters: %s" % ", ".join("%s %s" % kv for kv in
                                                sorted(dict(bn.RIG_NP, **a.np_set).items())))
    print("%.0f s" % (time.time() - t0))
    with open(os.path.join(a.out, "congestion.json"), "w") as f:
        json.dump({"kver": rig.kver, "mbit": a.mbit, "ce_threshold": a.ce,
                   "qp_timeout": a.qp_timeout,
                   "seconds": a.seconds, "params": dict(bn.RIG_RP, **a.set),
                   "np_params": dict(bn.RIG_NP, **a.np_set), "summary": rows, "runs": b.runs}, f, indent=1)
        f.write("\n")
    status = 0
    if any(r["failed"] for rs in b.runs.values() for r in rs):
        status = 1
    try:
        chart(b.runs, a.mbit, os.path.join(a.out, "congestion.png"))
        print("chart: %s" % os.path.join(a.out, "congestion.png"))
    except ImportError as e:
        print("bench-cc: no chart (%s; scripts/install-deps.sh installs python3-matplotlib)" % e)
        status = 1
    return status | rigmod.report_console("bench-cc: bad console lines", bad)


if __name__ == "__main__":
    sys.exit(main())
