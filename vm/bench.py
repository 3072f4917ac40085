#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: sroce's speed floor against rdma_rxe, in one rig run.

Boots two guests once, then for each kind (sroce<->sroce, then rxe<->rxe: the
two cannot share a guest, so the guests are reconfigured in between) runs with
the server in guest 0 and the client in guest 1:

  ib_write_bw  64 KiB messages   (BW average, Gb/s; higher is better)
  ib_send_lat  2-byte messages   (t_typical, the median latency, usec; lower is better)

each --reps times (default 3), and prints every result, the medians, the ratio
sroce/rxe and the exact commands. Results also go to build/vm/bench/bench.json, the
output of every run to build/vm/bench/<kind>-<test>-<rep>.log.

A kind that fails (for example sroce before its transport exists) is reported
with the failing command and its error; the other kind still runs, and the exit
status is 1. Never part of "make test". Under TCG the absolute numbers say
little; the ratio is what to watch.
"""
import argparse
import json
import os
import re
import statistics
import sys

# The guest-side RDMA helpers are the VM suites' own (tests/vm/guestrdma.py).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "vm"))
import guestrdma  # noqa: E402
from guestrdma import DEVNAME, rigmod  # noqa: E402

BW_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", re.M)
LAT_ROW = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+([\d.]+)" * 7, re.M)


class BenchError(Exception):
    pass


def first_error(r):
    lines = [ln.strip() for ln in (r.err or r.out).splitlines() if ln.strip()]
    return "rc=%s%s: %s" % (r.rc, " (timeout)" if r.timeout else "",
                            " / ".join(lines[:3]) or "no output")


def configure(rig, kind):
    """Both guests: every RDMA link removed, DEVNAME[kind] added on eth0; {guest: gid}."""
    try:
        return {g.index: guestrdma.configure(g, kind, families=("ipv4",)).gid["ipv4"]
                for g in rig.guests}
    except AssertionError as e:
        raise BenchError(str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bw-iters", type=int, default=500, help="ib_write_bw -n (default 500)")
    ap.add_argument("--lat-iters", type=int, default=1000, help="ib_send_lat -n (default 1000)")
    ap.add_argument("--kinds", default="sroce,rxe", help="default sroce,rxe")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=1024)
    ap.add_argument("--timeout", type=int, default=600, help="per command")
    ap.add_argument("--out", default=os.path.join(rigmod.BUILD, "vm", "bench"))
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]

    tests = [
        # name, program + flags (-d/-x added per guest), parse, metric index, unit, better
        ("write_bw", "ib_write_bw -F --report_gbits -s 65536 -n %d" % a.bw_iters,
         BW_ROW, 3, "Gb/s BW average", "higher"),
        ("send_lat", "ib_send_lat -F -s 2 -n %d" % a.lat_iters,
         LAT_ROW, 4, "usec t_typical", "lower"),
    ]
    results = {k: {"errors": {}, "runs": {t[0]: [] for t in tests}, "commands": {}}
               for k in kinds}
    status = 0
    rig = rigmod.Rig(guests=2, smp=a.smp, mem=a.mem, outdir=a.out)
    with rig:
        print("bench: 2 guests of %s (%s, %d vCPU, %d MiB each) up in %.1f s; output in %s" %
              (rig.kver, "kvm" if rig.kvm else "tcg", a.smp, a.mem, rig.boot_seconds, rig.outdir),
              flush=True)
        print("host load average at start: %.2f %.2f %.2f (%d CPUs)" %
              (os.getloadavg() + (os.cpu_count(),)), flush=True)
        srv, cli = rig[0], rig[1]
        # Kinds alternate within each repetition, so that a change in the host's
        # load hits both sides of the ratio alike.
        for rep in range(a.reps):
            for kind in kinds:
                res = results[kind]
                if "configure" in res["errors"] or all(t[0] in res["errors"] for t in tests):
                    continue
                print("\n%s<->%s, repetition %d of %d" % (kind, kind, rep + 1, a.reps), flush=True)
                try:
                    gids = configure(rig, kind)
                except (BenchError, rigmod.RigError) as e:
                    res["errors"]["configure"] = str(e)
                    status = 1
                    print("  FAILED to configure: %s" % e, flush=True)
                    continue
                for name, base, row, col, unit, _ in tests:
                    if name in res["errors"]:
                        continue
                    prog, flags = base.split(" ", 1)
                    scmd = "%s -d %s -x %d %s" % (prog, DEVNAME[kind], gids[0], flags)
                    ccmd = "%s -d %s -x %d %s %s" % (prog, DEVNAME[kind], gids[1], flags, srv.ip4)
                    if name not in res["commands"]:
                        res["commands"][name] = {"server (g0)": scmd, "client (g1)": ccmd}
                        print("  g0$ %s\n  g1$ %s" % (scmd, ccmd), flush=True)
                    log = os.path.join(rig.outdir, "%s-%s-%d.log" % (kind, name, rep + 1))
                    try:
                        s, c = guestrdma.client_server(srv, scmd, cli, ccmd, timeout=a.timeout)
                        with open(log, "w") as f:
                            for who, r in (("server g0", s), ("client g1", c)):
                                f.write("==== %s: %s (rc=%s)\n%s%s" % (who, r.cmd, r.rc, r.out, r.err))
                        if not c.ok or not s.ok:
                            bad = c if not c.ok else s
                            raise BenchError("%s: %s" % ("client" if bad is c else "server",
                                                         first_error(bad)))
                        m = row.search(c.out)
                        if not m:
                            raise BenchError("client printed no result line:\n" + c.out[-1500:])
                    except (BenchError, rigmod.RigError) as e:
                        res["errors"][name] = str(e)
                        status = 1
                        print("  %s FAILED: %s (%s)" % (name, e, log), flush=True)
                        continue
                    v = float(m.group(col))
                    res["runs"][name].append(v)
                    print("  %s: %g %s%s" % (name, v, unit, "   <- zero? see " + log if v == 0 else ""),
                          flush=True)
                bad = rig.console_problems()
                if bad:
                    res.setdefault("bad_console", []).extend(bad)
                    status = 1
                    print("  bad guest console lines:\n    " + "\n    ".join(bad))
        for g in rig.guests:
            try:
                guestrdma.unload_all_rdma_links(g)
            except AssertionError as e:
                print("bench: %s" % e)
                status = 1
        print("\nhost load average at end: %.2f %.2f %.2f" % os.getloadavg())

        print("summary (median of %d; server in g0, client in g1 with %s appended)" %
              (a.reps, srv.ip4))
        for name, base, _, _, unit, better in tests:
            med = {}
            for kind in kinds:
                runs = results[kind]["runs"][name]
                err = results[kind]["errors"]
                if name not in err and "configure" not in err and len(runs) == a.reps:
                    med[kind] = statistics.median(runs)
                    results[kind].setdefault("median", {})[name] = med[kind]
                    print("  %-9s %-6s median %10.4g %s   (runs: %s)" %
                          (name, kind, med[kind], unit, " ".join("%g" % v for v in runs)))
                else:
                    print("  %-9s %-6s n/a (failed: %s)" %
                          (name, kind, err.get(name) or err.get("configure") or "incomplete"))
            if "sroce" in med and "rxe" in med and med["rxe"]:
                ratio = med["sroce"] / med["rxe"]
                results.setdefault("ratio_sroce_over_rxe", {})[name] = ratio
                print("  %-9s ratio sroce/rxe = %.3f (%s is better)" % (name, ratio, better))
            elif "sroce" in kinds and "rxe" in kinds:
                print("  %-9s ratio sroce/rxe: n/a" % name)
        print("\ncommands: %s" % "; ".join(b for _, b, *_ in tests) +
              "   (each end adds -d DEV -x <its IPv4 RoCE v2 GID index>)")
        with open(os.path.join(rig.outdir, "bench.json"), "w") as f:
            json.dump({"kver": rig.kver, "accel": "kvm" if rig.kvm else "tcg", "smp": a.smp,
                       "mem": a.mem, "reps": a.reps, "results": results}, f, indent=2)
            f.write("\n")
        bad = rig.console_problems()
    # and what shutting the guests down printed
    bad += rig.bad_console_lines()
    return status | rigmod.report_console("bench: bad console lines at the end", bad)


if __name__ == "__main__":
    sys.exit(main())
