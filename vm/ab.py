#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A/B of sroce module builds (and rdma_rxe) in one boot of two guests.

  vm/ab.py [options] VARIANT VARIANT...

VARIANT is "main" (the install tree's sroce.ko, make install-tree), "rxe"
(rdma_rxe of the guest kernel) or NAME=PATH, a sroce.ko built elsewhere for the
same kernel (for example a copy of kernel/ with one change, built with
make -C /lib/modules/KVER/build M=DIR modules). The guests boot as make bench
boots them (no slub_debug, one vCPU, crc32_pclmul blacklisted) and stay up;
for every run the variant's module is loaded in both guests, the module the
kernel then has is checked against the file by its build id (a helper that
unloads RDMA modules and lets "rdma link add" autoload one would measure main
instead), and the perftest case runs from guest 1 (client) to guest 0.

Within each repetition every variant runs once, their order rotating, so that
the host's drift hits each alike. Single runs on a TCG host spread by 20 % and
more: look at the medians of many repetitions, and at the spread. Printed: each
run, then median [min..max] per MTU, case and variant; --json writes the runs.
Cases are perftest programs without the ib_ prefix and a size: write_bw:4096,
send_lat:2; bandwidth is the BW average in MB/s, latency t_typical in usec.
Documentation/performance.rst ("What each change bought") has results.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "vm"))
sys.path.insert(0, os.path.join(REPO, "tests", "build"))
import guestrdma  # noqa: E402
from guestrdma import loaded_build_id, rigmod  # noqa: E402
from bench import BW_AVERAGE, BW_ROW, LAT_ROW, T_TYPICAL  # noqa: E402
from debroot import build_id  # noqa: E402

PORT = 18530


class Variant:
    def __init__(self, spec, kver, stage):
        self.name, _, path = spec.partition("=")
        self.ko, self.id = None, None
        if self.name == "rxe" and not path:
            return
        if self.name == "main" and not path:
            path = os.path.join(REPO, "build", "install", kver, "lib", "modules", kver,
                                "extra", "sroce.ko")
        if not path or not os.path.isfile(path):
            raise SystemExit("variant %r: no module file %r" % (spec, path))
        # The guests see the repository as /src: stage every file there.
        self.ko = os.path.join(stage, self.name + ".ko")
        shutil.copyfile(path, self.ko)
        self.id = build_id(self.ko)

    def load(self, rig, family):
        """The variant's device (its name) in both guests; {guest index: the
        index of its RoCE v2 GID of family (ipv4 or ipv6)}."""
        gids = {}
        for g in rig.guests:
            guestrdma.unload_all_rdma_links(g)
            if self.ko is None:
                g.check("modprobe rdma_rxe")
                dev = guestrdma.add_link(g, guestrdma.DEVNAME["rxe"], "eth0", "rxe")
            else:
                g.check("modprobe ib_uverbs && modprobe ip6_udp_tunnel && "
                        "modprobe udp_tunnel && insmod /src/%s"
                        % os.path.relpath(self.ko, REPO))
                got = loaded_build_id(g)
                if got != self.id:
                    raise SystemExit("%s: loaded build id %s, the file's %s"
                                     % (self.name, got, self.id))
                dev = guestrdma.add_link(g, guestrdma.DEVNAME["sroce"], "eth0", "sroce")
            gids[g.index] = guestrdma.wait_gids(g, dev, (family,))[family]
        return dev, gids


def run_case(rig, dev, gids, case, seconds):
    prog, size = case
    srv, cli = rig[0], rig[1]
    if prog.endswith("_lat"):
        opts = "-F -s %d -n 3000" % size
    else:
        # perftest measures between margins (-f) at both ends of the -D seconds
        opts = "-F -s %d -D %d -f %d" % (size, seconds, 2 if seconds >= 8 else 1)
    s, c = guestrdma.client_server(
        srv, "ib_%s -d %s -x %d %s -p %d" % (prog, dev, gids[0], opts, PORT),
        cli, "ib_%s -d %s -x %d %s -p %d %s" % (prog, dev, gids[1], opts, PORT, srv.ip4),
        port=PORT, timeout=seconds + 120)
    if prog.endswith("_lat"):
        m = LAT_ROW.search(c.out)
        value = float(m.group(T_TYPICAL)) if m else 0.0
    else:
        m = BW_ROW.search(c.out)
        value = float(m.group(BW_AVERAGE)) if m else 0.0
    if not (s.ok and c.ok) or value <= 0 or guestrdma.perftest_clock_failed(s, c):
        return None, "server rc %s, client rc %s: %s" % (
            s.rc, c.rc, ((c.err or c.out) if s.ok else (s.err or s.out))[-300:])
    return value, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="+", metavar="VARIANT")
    ap.add_argument("--cases", default="write_bw:4096",
                    help="perftest cases, program:size (default write_bw:4096)")
    ap.add_argument("--mtus", default="1500", help="netdev MTUs (default 1500)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--seconds", type=int, default=8,
                    help="bandwidth run length (-D, at least 3; default 8)")
    ap.add_argument("--gid", choices=("ipv4", "ipv6"), default="ipv4",
                    help="the RoCE v2 GID the runs use: the guests' IPv4 address or "
                    "their IPv6 one (default ipv4)")
    ap.add_argument("--kver", default=os.environ.get("KVER"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "ab"))
    ap.add_argument("--json", help="write the runs here")
    a = ap.parse_args()

    cases = []
    for c in a.cases.split(","):
        prog, _, size = c.partition(":")
        if not re.fullmatch(r"(write|read|send)_(bw|lat)", prog) or not size.isdigit():
            ap.error("case %r: program:size, e.g. write_bw:4096" % c)
        cases.append((prog, int(size)))
    if a.seconds < 3:
        ap.error("--seconds: at least 3 (perftest's margins take a second at each end)")
    mtus = [int(m) for m in a.mtus.split(",")]
    os.makedirs(a.out, exist_ok=True)
    kver = a.kver or rigmod.default_kver()
    variants = [Variant(v, kver, a.out) for v in a.variants]
    if len({v.name for v in variants}) != len(variants):
        ap.error("two variants have the same name")
    ids = [v.id for v in variants if v.id]
    if len(set(ids)) != len(ids):
        ap.error("two variants are the same module (the same build id)")
    rig = rigmod.Rig(guests=2, smp=1, mem=1024, debug=False, kver=kver,
                     kargs="modprobe.blacklist=crc32_pclmul",
                     outdir=os.path.join(a.out, "boot"))
    for v in variants:
        print("%-10s %s" % (v.name, v.id or "rdma_rxe"), flush=True)

    runs = {}   # (mtu, case, variant) -> [value or None]
    status = 0
    rig.start()
    try:
        for mtu in mtus:
            for g in rig.guests:
                guestrdma.unload_all_rdma_links(g)
                g.check("ip link set eth0 mtu %d" % mtu)
            for rep in range(a.reps):
                k = rep % len(variants)
                for v in variants[k:] + variants[:k]:
                    dev, gids = v.load(rig, a.gid)
                    for case in cases:
                        value, why = run_case(rig, dev, gids, case, a.seconds)
                        runs.setdefault((mtu, case, v.name), []).append(value)
                        print("mtu %-5d %-9s %6d  %-10s rep %d: %s" % (
                            mtu, case[0], case[1], v.name, rep,
                            "%.2f" % value if value else "FAILED " + why), flush=True)
        for g in rig.guests:
            guestrdma.unload_all_rdma_links(g)
    finally:
        bad = rig.bad_console_lines()
        rig.stop()
    if bad:
        print("guest console problems:\n" + "\n".join(bad))
        status = 1

    print("\nmedian [min..max] (n: runs that gave a figure)")
    for (mtu, case, name), vals in runs.items():
        got = [x for x in vals if x]
        if len(got) < len(vals):
            status = 1
        if got:
            print("mtu %-5d %-9s %6d  %-10s %9.2f [%.2f..%.2f] n=%d" % (
                mtu, case[0], case[1], name, statistics.median(got), min(got), max(got),
                len(got)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"variants": {v.name: v.id or "rdma_rxe" for v in variants},
                       "runs": [{"mtu": m, "case": "%s:%d" % c, "variant": n, "values": vals}
                                for (m, c, n), vals in runs.items()]}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
