#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: sroce against rdma_rxe and TCP on the same link, in one rig run.

Boots two guests as users run them (no slub_debug), and measures, server in
guest 0 and client in guest 1, at each netdev MTU (--mtus, default 1500 and
9000; the RoCE path MTU follows: 1024 and 4096). sroce and rdma_rxe never share
a boot: before one runs in guests where the other has been loaded, both guests
are booted afresh (each boot's consoles are kept in <out>/boot-N), so what one
module leaves behind cannot touch the other's runs and a crash belongs to the
kind that ran. A guest that dies is booted afresh too, and the bench goes on;
a crash in a boot where only rdma_rxe was loaded costs rdma_rxe its runs, not
the bench its exit status (the crashes seen so far are the CPU emulator's, in
boots of either kind: Documentation/performance.rst).

  perftest, sroce<->sroce and rxe<->rxe (BW average in Gb/s; t_typical in usec):
    ib_write_bw / ib_read_bw / ib_send_bw at 64 KiB and 4 KiB, ib_write_bw -q 4
    ib_send_lat / ib_write_lat / ib_read_lat at 2 bytes
  TCP on the same link:
    iperf3, one stream (received Gb/s); sockperf ping-pong (median, usec; its
    smallest message is 14 bytes; half the round trip, as perftest reports)
  the link's ceiling for RoCE frames: the kernel's pktgen in guest 1 floods
    guest 0 with UDP frames of a full RoCE packet's size (a WRITE middle at
    the RoCE MTU) from one cloned skb, so next to no work is done per frame;
    the frames guest 0 receives per second, times the RoCE MTU, are the most
    RoCE payload this link can carry (Gb/s). A target above it is out of
    reach of any RoCE implementation on this rig.
  NVMe-oF (a null_blk namespace exported by nvmet in guest 0, fio in guest 1):
    nvme-rdma over sroce, nvme-rdma over rdma_rxe, nvme-tcp:
    4 KiB random read IOPS (iodepth 32), 128 KiB sequential read MB/s (iodepth 8)

Every measurement runs --reps times (default 5); within a repetition the kinds
alternate and their order rotates, so that a change in the host's load hits
every side of a ratio alike. Reported: median, spread (min..max), the ratios
sroce/rxe and sroce/TCP, and the guests' CPU time per GiB moved (both guests'
busy time from /proc/stat over a window inside each bandwidth run, so process
start-up stays out). perftest bandwidth runs last -D 8 s and are measured within
2 s margins. --profile runs chosen perftest or NVMe cases once more under perf
record in both guests, with the host's CPU time per QEMU thread. Outputs in --out
(default build/bench): bench.json, bench.png (the ratios), every run's log and
profile-*.txt.

Never part of "make test". Under TCG the absolute numbers say little; the
ratios are what to watch. Documentation/performance.rst has the method and the
latest table.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time

# The guest-side helpers are the VM suites' own (tests/vm).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "vm"))
import guestrdma  # noqa: E402
import storage  # noqa: E402
from guestrdma import DEVNAME, rigmod  # noqa: E402

BW_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", re.M)
LAT_ROW = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+([\d.]+)" * 7, re.M)
# perftest's columns: BW peak, BW average, MsgRate; t_min, t_max, t_typical, ...
BW_AVERAGE, T_TYPICAL = 4, 5
SOCKPERF_P50 = re.compile(r"percentile 50\.000 =\s*([\d.]+)")
PERF_PORT, IPERF_PORT, SOCKPERF_PORT = 18515, 5201, 11111
GiB = 1 << 30

# name, program, message size, extra flags, QPs, metric
PERFTESTS = [
    ("write_bw_64k", "ib_write_bw", 65536, "", 1, "bw"),
    ("write_bw_4k", "ib_write_bw", 4096, "", 1, "bw"),
    ("write_bw_64k_q4", "ib_write_bw", 65536, "-q 4", 4, "bw"),
    ("read_bw_64k", "ib_read_bw", 65536, "", 1, "bw"),
    ("read_bw_4k", "ib_read_bw", 4096, "", 1, "bw"),
    ("send_bw_64k", "ib_send_bw", 65536, "", 1, "bw"),
    ("send_bw_4k", "ib_send_bw", 4096, "", 1, "bw"),
    ("send_lat", "ib_send_lat", 2, "", 1, "lat"),
    ("write_lat", "ib_write_lat", 2, "", 1, "lat"),
    ("read_lat", "ib_read_lat", 2, "", 1, "lat"),
]
UNITS = {"bw": "Gb/s", "lat": "usec", "iops": "IOPS", "mbs": "MB/s"}
HIGHER = {"bw": True, "lat": False, "iops": True, "mbs": True}
# What each RDMA case is compared with on TCP.
TCP_PEER = {"write_bw_64k": "iperf3", "write_bw_4k": "iperf3", "write_bw_64k_q4": "iperf3",
            "read_bw_64k": "iperf3", "send_bw_64k": "iperf3", "send_lat": "sockperf",
            "write_lat": "sockperf", "read_lat": "sockperf"}
NVME_CASES = [("nvme_randread_4k", "randread", "4k", 32, "iops"),
              ("nvme_seqread_128k", "read", "128k", 8, "mbs")]
# case name -> its metric ("bw", "lat", "iops", "mbs")
METRIC = dict([(c[0], c[5]) for c in PERFTESTS] + [(c[0], c[4]) for c in NVME_CASES] +
              [("iperf3", "bw"), ("sockperf", "lat"), ("link_ceiling", "bw")])
# Ethernet + IPv4 + UDP + BTH + ICRC around the payload of a RoCE v2 WRITE middle
ROCE_FRAME_OVERHEAD = 14 + 20 + 8 + 12 + 4
# What the tcp kind measures: each is the Bench method of that name.
TCP_CASES = ("iperf3", "sockperf", "link_ceiling")
PKTGEN_RESULT = re.compile(r"Result: OK: (\d+)\(.*?usec, (\d+) \((\d+)byte")


def roce_mtu(netdev_mtu):
    """The RoCE path MTU a port of this netdev MTU runs (the largest IB MTU that
    fits with the largest header set, as sroce and rdma_rxe choose it)."""
    best = 256
    for m in (256, 512, 1024, 2048, 4096):
        if m + 100 <= netdev_mtu:
            best = m
    return best


def pktgen_script(frame, seconds, dst_ip, dst_mac):
    """Shell for guest 1: pktgen sends frames of frame bytes (FCS not counted) to
    dst for seconds, one skb cloned for every frame; prints pktgen's result."""
    pg = "/proc/net/pktgen"
    cfg = ["count 0", "clone_skb 1000000", "pkt_size %d" % frame, "delay 0",
           "dst %s" % dst_ip, "dst_mac %s" % dst_mac, "udp_dst_min 9", "udp_dst_max 9"]
    return " && ".join(
        ["modprobe pktgen", "echo rem_device_all > %s/kpktgend_0" % pg,
         "echo 'add_device eth0' > %s/kpktgend_0" % pg] +
        ["echo '%s' > %s/eth0" % (c, pg) for c in cfg] +
        ["{ timeout -s INT %d sh -c 'echo start > %s/pgctrl' || true; }" % (seconds, pg),
         "cat %s/eth0" % pg, "echo rem_device_all > %s/kpktgend_0" % pg])


class PerftestClockError(Exception):
    """perftest's own clock calibration failed: the run says nothing about the device."""


class BenchError(Exception):
    pass


def first_error(r):
    lines = [ln.strip() for ln in (r.err or r.out).splitlines() if ln.strip()]
    return "rc=%s%s: %s" % (r.rc, " (timeout)" if r.timeout else "",
                            " / ".join(lines[:3]) or "no output")


def busy_seconds(stat_line):
    """CPU time not idle (user, nice, system, irq, softirq, steal) in a /proc/stat cpu line."""
    f = stat_line.split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[:8])
    return (user + nice + system + irq + softirq + steal) / 100.0


class CpuWindow:
    """Both guests' busy CPU time over [delay, delay + length] s from start(): a
    window inside the transfer, so process start-up and handshakes stay out."""

    def __init__(self, guests, delay, length):
        self.guests, self.delay, self.length = guests, delay, length
        self.procs = []

    def start(self):
        self.procs = [g.spawn("sleep %.1f; head -1 /proc/stat; sleep %.1f; head -1 /proc/stat"
                              % (self.delay, self.length)) for g in self.guests]

    def seconds(self):
        """Busy CPU seconds of both guests in the window, or None if it did not complete."""
        total = 0.0
        for p in self.procs:
            r = p.wait(self.delay + self.length + 30)
            lines = [ln for ln in r.out.splitlines() if ln.startswith("cpu ")]
            if r.rc != 0 or len(lines) != 2:
                return None
            total += busy_seconds(lines[1]) - busy_seconds(lines[0])
        return total


def host_threads(rig):
    """{(guest, thread name): CPU seconds} of every QEMU thread on the host."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for g in rig.guests:
        base = "/proc/%d/task" % g.qemu.pid
        try:
            tids = os.listdir(base)
        except OSError:
            continue        # that QEMU is gone (its guest died)
        for tid in tids:
            try:
                with open("%s/%s/stat" % (base, tid)) as f:
                    st = f.read()
                with open("%s/%s/comm" % (base, tid)) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            fields = st[st.rindex(")") + 2:].split()
            key = (g.name, "%s[%s]" % (comm, tid))
            out[key] = (int(fields[11]) + int(fields[12])) / tick
    return out


PERF_RECORD = "perf record -e cpu-clock -F 999 -m 2048 -a -o /tmp/bench.perf"
# perf record's workload: it starts only once perf samples (perf under TCG takes
# 10-15 s to get there: enabling earlier and a stop during that time records a
# few milliseconds), says so, and lasts until the bench kills it.
PERF_ON = "/tmp/bench.perf.on"
PERF_WORKLOAD = "sleep 86400"
PERF_CMD = "%s -- sh -c 'touch %s; exec %s'" % (PERF_RECORD, PERF_ON, PERF_WORKLOAD)
PERF_START_TIMEOUT = 180
PERF_REPORT = ("perf report -i /tmp/bench.perf --no-children --stdio --sort sym -g none "
               "2>/dev/null | grep -v '^#' | grep -v '^$'")
PERF_ROW = re.compile(r"^\s*([\d.]+)%\s+\[(.)\]\s+(\S.*?)\s*$")
IDLE_SYMS = {"pv_native_safe_halt", "default_idle", "default_idle_call", "do_idle",
             "native_safe_halt", "cpuidle_idle_call", "arch_cpu_idle"}


def busy_profile(report, top=25):
    """perf report rows without the idle loop, as shares of the busy samples."""
    rows = []
    for line in report.splitlines():
        m = PERF_ROW.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    idle = sum(p for p, _, sym in rows if sym in IDLE_SYMS)
    busy = [(p, k, sym) for p, k, sym in rows if sym not in IDLE_SYMS]
    total = sum(p for p, _, _ in busy) or 1.0
    lines = ["  (idle: %.1f%% of the samples; shares below are of the busy ones)" % idle]
    for p, k, sym in busy[:top]:
        lines.append("  %6.2f%%  %s %s" % (100 * p / total, "kernel" if k == "k" else "user  ",
                                           sym))
    return lines


class Bench:
    def __init__(self, make_rig, a):
        """make_rig(n): the rig of boot n (its consoles in <out>/boot-n), not started."""
        self.make_rig, self.a = make_rig, a
        self.boots = 1
        self.rig = make_rig(1)
        self.srv, self.cli = self.rig[0], self.rig[1]
        self.out = a.out
        # results[mtu][case][kind] = {"runs": [...], "cpu_per_gib": [...], "error": str}
        self.results = {}
        self.meta = {}
        self.status = 0
        self.profiling = False
        self.loaded = set()     # RDMA kinds loaded since the guests booted

    # ---------------------------------------------------------------- recording

    def slot(self, mtu, case, kind):
        return self.results.setdefault(str(mtu), {}).setdefault(case, {}).setdefault(
            kind, {"runs": [], "cpu_per_gib": []})

    def record(self, mtu, case, kind, value, moved=None, cpu=None):
        extra = ""
        if self.profiling:
            extra = " (under perf, not counted)"
        else:
            s = self.slot(mtu, case, kind)
            s["runs"].append(value)
            if moved and cpu:
                s["cpu_per_gib"].append(cpu / (moved / GiB))
                extra = "   (%.2f CPU s/GiB)" % s["cpu_per_gib"][-1]
        print("    %-18s %-5s %10.4g %s%s" % (case, kind, value, UNITS[METRIC[case]], extra),
              flush=True)

    def fail(self, mtu, case, kind, why):
        """A failed run. One failure costs that run (the median is then taken over the
        others and the table says so); a second one gives the case up."""
        slot = self.slot(mtu, case, kind)
        slot.setdefault("failed_runs", []).append(why)
        if len(slot["failed_runs"]) >= 2:
            slot["error"] = why
            self.status = 1
        print("    %-18s %-5s FAILED%s: %s" % (case, kind, "" if "error" in slot else
                                             " (this run)", why), flush=True)

    def failed(self, mtu, case, kind):
        return "error" in self.slot(mtu, case, kind)

    def log(self, name, *results):
        with open(os.path.join(self.out, name + ".log"), "w") as f:
            for who, r in results:
                f.write("==== %s: %s (rc=%s)\n%s%s" % (who, r.cmd, r.rc, r.out, r.err))

    def window(self, run_seconds):
        """A CpuWindow for a transfer of run_seconds that starts with its start()."""
        delay = min(2.0, run_seconds / 3.0)
        return CpuWindow(self.rig.guests, delay, max(1.0, run_seconds - delay - 1.0))

    # ---------------------------------------------------------------- set-up

    def set_mtu(self, mtu):
        for g in self.rig.guests:
            guestrdma.unload_all_rdma_links(g)
            g.check("ip link set eth0 mtu %d" % mtu)
        guestrdma.wait_for(lambda: self.srv.run("ping -c1 -W1 -M do -s %d %s"
                                                % (mtu - 28, self.cli.ip4)).ok,
                           timeout=30, what="pings of %d bytes" % mtu)

    def configure(self, mtu, kind):
        """kind's RDMA device in both guests ("tcp": none); {guest index: IPv4 GID index}."""
        if kind == "tcp":
            for g in self.rig.guests:
                guestrdma.unload_all_rdma_links(g)
            return {}
        sides = [guestrdma.configure(g, kind, families=("ipv4",)) for g in self.rig.guests]
        self.meta.setdefault("active_mtu", {}).setdefault(kind, {})[
            str(mtu)] = sides[0].mtu
        return {s.guest.index: s.gid["ipv4"] for s in sides}

    # ---------------------------------------------------------------- runs

    def perftest(self, mtu, rep, kind, gids, case, again=False):
        name, prog, size, flags, qps, metric = case
        win = None
        if metric == "bw" and qps > 1:
            # Debian 12's perftest reports BW 0 for -D with several QPs: iterations
            # (no CPU window: the run's length is not known in advance)
            opts = "-F -s %d -n %d %s" % (size, self.a.q_iters, flags)
        elif metric == "bw":
            # perftest measures between its margins (-f) of the -D seconds run
            dur = self.a.bw_seconds
            margin = 2 if dur >= 8 else 1
            opts = "-F -s %d -D %d -f %d %s" % (size, dur, margin, flags)
            # after the handshake (about a second) and the first margin
            win = CpuWindow(self.rig.guests, margin + 1.5, max(1.0, dur - 2 * margin - 1.0))
        else:
            opts = "-F -s %d -n %d" % (size, self.a.lat_iters)
        dev = DEVNAME[kind]
        scmd = "%s -d %s -x %d %s" % (prog, dev, gids[0], opts)
        ccmd = "%s -d %s -x %d %s %s" % (prog, dev, gids[1], opts, self.srv.ip4)
        self.meta.setdefault("commands", {})[name] = {"server (g0)": scmd,
                                                       "client (g1)": ccmd}
        s, c = guestrdma.client_server(self.srv, scmd, self.cli, ccmd, port=PERF_PORT,
                                       timeout=self.a.timeout,
                                       before_client=win.start if win else None)
        cpu = win.seconds() if win and win.procs else None
        self.log("%d-%s-%s-%s%s" % (mtu, kind, name, rep, "-again" if again else ""),
                 ("server g0", s), ("client g1", c))
        if not (s.ok and c.ok):
            bad = c if not c.ok else s
            raise BenchError("%s: %s" % ("client" if bad is c else "server", first_error(bad)))
        if guestrdma.perftest_clock_failed(s, c):
            raise PerftestClockError("perftest's clock calibration failed (r^2 warning)")
        m = (BW_ROW if metric == "bw" else LAT_ROW).search(c.out)
        if not m:
            raise BenchError("no result line in the client's output")
        if metric == "bw":
            # MB/sec (perftest's MB is 2^20 bytes; 2 decimals, finer than --report_gbits)
            gbps = float(m.group(BW_AVERAGE)) * (1 << 20) * 8 / 1e9
            if gbps == 0:
                raise BenchError("BW average 0: nothing completed within the margins")
            self.record(mtu, name, kind, gbps, gbps * 1e9 / 8 * win.length if win else None,
                        cpu)
        else:
            self.record(mtu, name, kind, float(m.group(T_TYPICAL)))

    def iperf3(self, mtu, rep):
        scmd = "iperf3 -s -1 -p %d" % IPERF_PORT
        ccmd = "iperf3 -c %s -p %d -t %d -J" % (self.srv.ip4, IPERF_PORT, self.a.tcp_seconds)
        self.meta.setdefault("commands", {})["iperf3"] = {"server (g0)": scmd,
                                                           "client (g1)": ccmd}
        win = self.window(self.a.tcp_seconds)
        s, c = guestrdma.client_server(self.srv, scmd, self.cli, ccmd, port=IPERF_PORT,
                                       timeout=self.a.timeout, before_client=win.start)
        cpu = win.seconds()
        self.log("%d-tcp-iperf3-%d" % (mtu, rep), ("server g0", s), ("client g1", c))
        if not c.ok:
            raise BenchError("client: " + first_error(c))
        bps = json.loads(c.out)["end"]["sum_received"]["bits_per_second"]
        self.record(mtu, "iperf3", "tcp", bps / 1e9, bps / 8 * win.length, cpu)

    def sockperf(self, mtu, rep):
        scmd = "sockperf sr --tcp -i %s -p %d" % (self.srv.ip4, SOCKPERF_PORT)
        ccmd = "sockperf pp --tcp -i %s -p %d -t %d -m 14" % (self.srv.ip4, SOCKPERF_PORT,
                                                               self.a.tcp_seconds)
        self.meta.setdefault("commands", {})["sockperf"] = {"server (g0)": scmd,
                                                             "client (g1)": ccmd}
        srv = self.srv.spawn(scmd)
        try:
            guestrdma.wait_for(lambda: guestrdma.listening(self.srv, SOCKPERF_PORT),
                               timeout=30, what="sockperf server")
            c = self.cli.run(ccmd, timeout=self.a.timeout)
        finally:
            srv.kill()
            s = srv.wait(10)
        self.log("%d-tcp-sockperf-%d" % (mtu, rep), ("server g0", s), ("client g1", c))
        m = SOCKPERF_P50.search(c.out + c.err)
        if not c.ok or not m:
            raise BenchError("client: " + first_error(c))
        self.record(mtu, "sockperf", "tcp", float(m.group(1)))

    def link_ceiling(self, mtu, rep):
        """pktgen's frame rate at a RoCE frame's size, as RoCE payload Gb/s."""
        rmtu = roce_mtu(mtu)
        frame = ROCE_FRAME_OVERHEAD + rmtu
        mac = self.srv.check("cat /sys/class/net/eth0/address").strip()
        rx = "cat /sys/class/net/eth0/statistics/rx_packets"
        cmd = pktgen_script(frame, self.a.tcp_seconds + 1, self.srv.ip4, mac)
        self.meta.setdefault("commands", {})["link_ceiling"] = {
            "sender (g1)": "pktgen: UDP frames of the RoCE MTU + %d bytes (headers and ICRC "
                           "of a WRITE middle), clone_skb 1000000, delay 0, %d s" % (
                               ROCE_FRAME_OVERHEAD, self.a.tcp_seconds + 1),
            "receiver (g0)": "rx_packets before and after"}
        before = int(self.srv.check(rx))
        c = self.cli.run(cmd, timeout=self.a.timeout)
        after = int(self.srv.check(rx))
        self.log("%d-tcp-link_ceiling-%d" % (mtu, rep), ("sender g1", c))
        m = PKTGEN_RESULT.search(c.out)
        if not c.ok or not m:
            raise BenchError("pktgen: " + first_error(c))
        usec, sent, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if size != frame or usec <= 0:
            raise BenchError("pktgen sent %d-byte frames for %d usec" % (size, usec))
        got = min(sent, after - before)     # what arrived, not what was offered
        gbps = got / (usec / 1e6) * rmtu * 8 / 1e9
        self.meta.setdefault("link_ceiling", {}).setdefault(str(mtu), []).append(
            {"frame": frame, "roce_mtu": rmtu, "sent": sent, "received": after - before,
             "usec": usec})
        self.record(mtu, "link_ceiling", "tcp", gbps)

    def nvme(self, mtu, rep, kind, only=None):
        """The NVME_CASES (only: just that one) over kind's transport."""
        trtype = "tcp" if kind == "tcp" else "rdma"
        t_g, h_g = self.srv, self.cli
        with storage.guest_state(t_g, h_g) as (ts, hs):
            with storage.nvmet_target(t_g, ts, size_mb=self.a.nvme_mb, trtype=trtype) as tgt:
                with storage.nvme_host(h_g, tgt) as host:
                    dev = "/dev/" + host.ns[1]
                    for name, rw, bs, depth, metric in NVME_CASES:
                        if self.failed(mtu, name, kind) or only not in (None, name):
                            continue
                        cmd = ("fio --name=%s --filename=%s --rw=%s --bs=%s --iodepth=%d "
                               "--ioengine=libaio --direct=1 --runtime=%d --time_based "
                               "--output-format=json" % (name, dev, rw, bs, depth,
                                                         self.a.fio_seconds))
                        self.meta.setdefault("commands", {})[name] = {"host (g1)": cmd}
                        win = self.window(self.a.fio_seconds)
                        tx0 = self.tx_frames()
                        win.start()
                        r = h_g.run(cmd, timeout=self.a.timeout)
                        cpu = win.seconds()
                        frames = self.tx_frames() - tx0
                        self.log("%d-%s-%s-%s" % (mtu, kind, name, rep), ("host g1", r))
                        try:
                            if not r.ok:
                                raise BenchError(first_error(r))
                            rd = json.loads(r.out[r.out.index("{"):])["jobs"][0]["read"]
                        except (BenchError, ValueError, KeyError) as e:
                            self.fail(mtu, name, kind, str(e))
                            continue
                        if rd.get("total_ios") and not self.profiling:
                            # every frame either guest sent during fio, over its I/Os
                            self.slot(mtu, name, kind).setdefault("frames_per_io", []).append(
                                frames / rd["total_ios"])
                        if metric == "iops":
                            self.record(mtu, name, kind, rd["iops"])
                        else:
                            self.record(mtu, name, kind, rd["bw_bytes"] / 1e6,
                                        rd["bw_bytes"] * win.length, cpu)

    def tx_frames(self):
        """Frames both guests have sent on eth0 (the link carries nothing else)."""
        return sum(int(g.check("cat /sys/class/net/eth0/statistics/tx_packets"))
                   for g in self.rig.guests)

    def profile(self, mtu, kind, name):
        """One more run of case name (perftest or NVMe) with perf record in both
        guests and the host's per-thread CPU of the QEMU processes; the reports go
        to profile-*.txt."""
        self.use(mtu, kind)
        gids = self.configure(mtu, kind)
        case = [c for c in PERFTESTS if c[0] == name]
        for g in self.rig.guests:
            g.run("rm -f /tmp/bench.perf " + PERF_ON)
        perfs = [g.spawn(PERF_CMD + " 2>/dev/null") for g in self.rig.guests]
        t0 = time.time()
        waiting = list(self.rig.guests)
        while waiting and time.time() < t0 + PERF_START_TIMEOUT:
            time.sleep(0.5)
            waiting = [g for g in waiting if PERF_ON not in g.read_files([PERF_ON])[0]]
        if waiting:
            for p in perfs:
                p.kill()
                p.wait(30)
            print("    profile not taken: perf record did not start sampling in %s within "
                  "%d s" % (", ".join(g.name for g in waiting), PERF_START_TIMEOUT), flush=True)
            self.status = 1
            return
        print("    perf record sampling in both guests after %.0f s" % (time.time() - t0),
              flush=True)
        h0 = host_threads(self.rig)
        t0 = time.time()
        self.profiling = True
        try:
            if case:
                self.perftest(mtu, "profile", kind, gids, case[0])
            else:
                self.nvme(mtu, "profile", kind, only=name)
        except (BenchError, AssertionError, rigmod.RigError) as e:
            print("    profile run failed: %s" % e)
        finally:
            self.profiling = False
        wall = time.time() - t0
        h1 = host_threads(self.rig)
        text = ["%s, %s, netdev MTU %d: %.1f s wall" % (name, kind, mtu, wall),
                "host CPU seconds per QEMU thread during the run:"]
        for k in sorted(h1, key=lambda k: -(h1[k] - h0.get(k, 0))):
            d = h1[k] - h0.get(k, 0)
            if d >= 0.05:
                text.append("  %-4s %-28s %6.2f s (%3.0f%% of the run)" % (k + (d, 100 * d / wall)))
        for g in self.rig.guests:
            g.run("pkill -x -f '%s'" % PERF_WORKLOAD)
        for g, p in zip(self.rig.guests, perfs):
            p.wait(300)
            rep = g.run(PERF_REPORT, timeout=300)
            text += ["", "%s (%s) %s; perf report --sort sym:" % (
                g.name, "server" if g is self.srv else "client", PERF_RECORD)] + \
                busy_profile(rep.out, self.a.profile_top)
        path = os.path.join(self.out, "profile-%d-%s-%s.txt" % (mtu, kind, name))
        with open(path, "w") as f:
            f.write("\n".join(text) + "\n")
        print("    profile: %s" % path, flush=True)
        self.meta.setdefault("profiles", []).append(path)

    def reboot(self, mtu, why):
        """Fresh guests at netdev MTU mtu; every boot's consoles stay in <out>/boot-N."""
        self.rig.stop()
        self.boots += 1
        self.rig = self.make_rig(self.boots)
        self.rig.start()
        self.srv, self.cli = self.rig[0], self.rig[1]
        self.loaded = set()
        self.meta.setdefault("reboots", []).append(why)
        print("  (fresh guests, %s: %s)" % (os.path.basename(self.rig.outdir), why), flush=True)
        self.set_mtu(mtu)

    def use(self, mtu, kind):
        """One RDMA kind per boot: what one module leaves behind (or corrupts)
        cannot touch the other's runs, and a crash is the kind's that ran."""
        if kind == "tcp":
            return
        if self.loaded - {kind}:
            self.reboot(mtu, "%s after %s" % (kind, ", ".join(sorted(self.loaded))))
        self.loaded.add(kind)

    def run_kind(self, mtu, rep, kind):
        self.use(mtu, kind)
        print("  %s (MTU %d, repetition %d of %d)" % (kind, mtu, rep, self.a.reps), flush=True)
        try:
            gids = self.configure(mtu, kind)
        except (AssertionError, rigmod.RigError) as e:
            for case in self.cases(kind):
                self.fail(mtu, case, kind, "configure: %s" % e)
            return
        if kind == "tcp":
            for name in TCP_CASES:
                if not self.failed(mtu, name, kind):
                    try:
                        getattr(self, name)(mtu, rep)
                    except (BenchError, AssertionError, ValueError, rigmod.RigError) as e:
                        self.fail(mtu, name, kind, str(e))
        else:
            for case in PERFTESTS:
                if case[0] in self.a.skip or self.failed(mtu, case[0], kind):
                    continue
                try:
                    try:
                        self.perftest(mtu, rep, kind, gids, case)
                    except PerftestClockError as e:
                        # perftest's fault, not the device's: the same run once more
                        print("    %-18s %-5s %s: run again" % (case[0], kind, e), flush=True)
                        self.perftest(mtu, rep, kind, gids, case, again=True)
                except (BenchError, PerftestClockError, rigmod.RigError) as e:
                    self.fail(mtu, case[0], kind, str(e))
        if self.a.nvme and not all(self.failed(mtu, c[0], kind) for c in NVME_CASES):
            try:
                self.nvme(mtu, rep, kind)
            except (AssertionError, rigmod.RigError) as e:
                for c in NVME_CASES:
                    self.fail(mtu, c[0], kind, "nvme: %s" % e)
        self.judge(mtu, kind, "repetition %d" % rep)

    def judge(self, mtu, kind, what):
        """The consoles since the last look, after kind's runs; fresh guests if one
        died. True if it went wrong in a boot where only rdma_rxe was loaded."""
        theirs = False
        bad = self.rig.console_problems()
        if bad:
            # Where sroce never loaded, a failure cannot be sroce's: it is
            # reported, and costs rdma_rxe the runs it broke, not the bench.
            theirs = kind == "rxe" and self.loaded == {"rxe"}
            self.meta.setdefault("rxe_console" if theirs else "bad_console", []).extend(
                "%s (MTU %d, %s): %s" % (kind, mtu, what, ln) for ln in bad)
            if not theirs:
                self.status = 1
            print("  bad guest console lines%s:\n    " % (
                " (not sroce's: it was not loaded in this boot)" if theirs else "") +
                "\n    ".join(bad), flush=True)
        dead = self.rig.health()
        if dead:
            self.reboot(mtu, "after %s: %s" % (kind, "; ".join(
                "%s %s" % kv for kv in sorted(dead.items()))))
        return theirs

    def cases(self, kind):
        names = list(TCP_CASES) if kind == "tcp" else [c[0] for c in PERFTESTS]
        return names + ([c[0] for c in NVME_CASES] if self.a.nvme else [])

    def run(self):
        kinds = self.a.kinds
        for mtu in self.a.mtus:
            print("\nnetdev MTU %d" % mtu, flush=True)
            self.set_mtu(mtu)
            for rep in range(1, self.a.reps + 1):
                shift = (rep - 1) % len(kinds)
                for kind in kinds[shift:] + kinds[:shift]:
                    self.run_kind(mtu, rep, kind)
            for kind in kinds:
                for name in [c for c in self.cases(kind) if c in self.a.profile and
                             c not in TCP_CASES]:
                    failed = False
                    try:
                        self.profile(mtu, kind, name)
                    except (AssertionError, rigmod.RigError) as e:
                        failed = True
                        print("    profile of %s %s FAILED: %s" % (kind, name, e),
                              flush=True)
                    if not self.judge(mtu, kind, "profile of " + name) and failed:
                        self.status = 1
        for g in self.rig.guests:
            try:
                guestrdma.unload_all_rdma_links(g)
                g.check("ip link set eth0 mtu %d" % self.rig.mtu)
            except (AssertionError, rigmod.RigError) as e:
                print("bench: %s" % e)
                self.status = 1


# -------------------------------------------------------------------- summary

def summarize(results, reps):
    """Medians, spreads and ratios: {mtu: {case: {...}}}."""
    summary = {}
    for mtu, cases in results.items():
        for case, kinds in cases.items():
            row = summary.setdefault(mtu, {}).setdefault(case, {"kinds": {}})
            for kind, s in kinds.items():
                lost = len(s.get("failed_runs", []))
                if "error" in s or not s["runs"] or len(s["runs"]) + lost < reps:
                    row["kinds"][kind] = {"error": s.get("error", "incomplete")}
                    continue
                row["kinds"][kind] = {
                    "median": statistics.median(s["runs"]),
                    "min": min(s["runs"]), "max": max(s["runs"]),
                    "cpu_s_per_gib": (statistics.median(s["cpu_per_gib"])
                                      if s["cpu_per_gib"] else None)}
                if s.get("frames_per_io"):
                    row["kinds"][kind]["frames_per_io"] = statistics.median(s["frames_per_io"])
                if lost:
                    row["kinds"][kind]["failed_runs"] = lost
    for mtu, cases in summary.items():
        for case, row in cases.items():
            med = {k: v["median"] for k, v in row["kinds"].items() if "median" in v}
            if "sroce" in med and med.get("rxe"):
                row["sroce_over_rxe"] = med["sroce"] / med["rxe"]
            peer = TCP_PEER.get(case)
            pm = cases.get(peer, {}).get("kinds", {}).get("tcp", {}).get("median")
            if "sroce" in med and pm:
                row["sroce_over_tcp"] = med["sroce"] / pm
            if case.startswith("nvme") and "sroce" in med and med.get("tcp"):
                row["sroce_over_tcp"] = med["sroce"] / med["tcp"]
    return summary


def targets(summary, meta):
    """The issue's targets: (what, value, met, bound) per line; value None where not
    measured. bound, for a bandwidth target: (Gb/s the target needs, the link's
    ceiling for RoCE payload at that MTU), either None where not measured."""
    def ratio(mtu, case, key):
        return summary.get(str(mtu), {}).get(case, {}).get(key)

    def med(mtu, case, kind):
        return summary.get(str(mtu), {}).get(case, {}).get("kinds", {}).get(kind, {}).get(
            "median")
    out = []

    def add(what, v, ok, needs=None, mtu=None):
        bound = None
        if mtu is not None:
            bound = (needs, med(mtu, "link_ceiling", "tcp"))
        out.append((what, v, None if v is None else ok(v), bound))

    def times(factor, mtu, case, kind):
        m = med(mtu, case, kind)
        return factor * m if m else None
    add("64 KiB WRITE BW sroce/rxe >= 4 (MTU 1500)", ratio(1500, "write_bw_64k",
                                                         "sroce_over_rxe"), lambda v: v >= 4,
        times(4, 1500, "write_bw_64k", "rxe"), 1500)
    add("64 KiB WRITE BW sroce/iperf3 >= 1.0 (MTU 1500)",
        ratio(1500, "write_bw_64k", "sroce_over_tcp"), lambda v: v >= 1.0,
        times(1.0, 1500, "iperf3", "tcp"), 1500)
    add("64 KiB WRITE BW sroce/iperf3 >= 1.5 (MTU 9000)",
        ratio(9000, "write_bw_64k", "sroce_over_tcp"), lambda v: v >= 1.5,
        times(1.5, 9000, "iperf3", "tcp"), 9000)
    add("4 KiB WRITE BW sroce/rxe >= 3 (MTU 1500)", ratio(1500, "write_bw_4k", "sroce_over_rxe"),
        lambda v: v >= 3, times(3, 1500, "write_bw_4k", "rxe"), 1500)
    add("2 B send_lat sroce/rxe <= 0.6 (MTU 1500)", ratio(1500, "send_lat", "sroce_over_rxe"),
        lambda v: v <= 0.6)
    add("2 B send_lat sroce/sockperf <= 1.0 (MTU 1500)",
        ratio(1500, "send_lat", "sroce_over_tcp"), lambda v: v <= 1.0)
    add("NVMe 4 KiB randread IOPS sroce/nvme-tcp >= 1.5 (MTU 1500)",
        ratio(1500, "nvme_randread_4k", "sroce_over_tcp"), lambda v: v >= 1.5)
    am = meta.get("active_mtu", {}).get("sroce", {}).get("9000")
    add("RoCE MTU at netdev MTU 9000 == 4096", am, lambda v: v == 4096)
    a, b = med(9000, "write_bw_64k", "sroce"), med(1500, "write_bw_64k", "sroce")
    add("sroce 64 KiB WRITE BW, MTU 9000 / MTU 1500 >= 2", a / b if a and b else None,
        lambda v: v >= 2, times(2, 1500, "write_bw_64k", "sroce"), 9000)
    return out


def bound_text(bound):
    """How a bandwidth target stands against the link's ceiling, or ''."""
    if not bound or None in bound:
        return ""
    needs, ceiling = bound
    return "needs %.3g Gb/s, %.2f of the link's ceiling %.3g%s" % (
        needs, needs / ceiling, ceiling,
        ": out of reach on this rig" if needs > ceiling else "")


def print_table(summary, kinds):
    for mtu in sorted(summary, key=int):
        print("\nnetdev MTU %s: median [min..max] of every kind (-N: N runs failed and are "
              "left out); ratios of medians" % mtu)
        print("  %-18s %-5s %s %9s %9s %s" % (
            "case", "unit", "".join("%-29s" % k for k in kinds), "sroce/rxe", "sroce/tcp",
            "CPU s/GiB " + "/".join(kinds)))
        for case, row in summary[mtu].items():
            cells, cpus = [], []
            for k in kinds:
                v = row["kinds"].get(k)
                if v is None:
                    cells.append("%-29s" % "-")
                    cpus.append("-")
                elif "error" in v:
                    cells.append("%-29s" % "FAILED")
                    cpus.append("-")
                else:
                    lost = " -%d" % v["failed_runs"] if v.get("failed_runs") else ""
                    cells.append("%-29s" % ("%.4g [%.4g..%.4g]%s" % (v["median"], v["min"],
                                                                     v["max"], lost)))
                    cpus.append("%.2f" % v["cpu_s_per_gib"] if v["cpu_s_per_gib"] else "-")
            r1, r2 = row.get("sroce_over_rxe"), row.get("sroce_over_tcp")
            print("  %-18s %-5s %s %9s %9s %s" % (
                case, UNITS[METRIC[case]], "".join(cells),
                "%.3f" % r1 if r1 else "-", "%.3f" % r2 if r2 else "-", "/".join(cpus)))
        for case, row in summary[mtu].items():
            fpio = [(k, row["kinds"].get(k, {}).get("frames_per_io")) for k in kinds]
            if any(f for _, f in fpio):
                print("  %s: frames per I/O (both directions, median) %s" % (
                    case, ", ".join("%s %.2f" % (k, f) for k, f in fpio if f)))


def chart(summary, path):
    """Bar chart of the ratios (sroce/rxe, sroce/TCP) per case and MTU."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mtus = sorted(summary, key=int)
    if not mtus:
        return False    # nothing measured (--reps 0)
    fig, axes = plt.subplots(1, len(mtus), figsize=(7 * len(mtus), 5.5), squeeze=False)
    for ax, mtu in zip(axes[0], mtus):
        cases = [c for c, r in summary[mtu].items()
                 if "sroce_over_rxe" in r or "sroce_over_tcp" in r]
        x = range(len(cases))
        rxe = [summary[mtu][c].get("sroce_over_rxe", 0) for c in cases]
        tcp = [summary[mtu][c].get("sroce_over_tcp", 0) for c in cases]
        ax.bar([i - 0.2 for i in x], rxe, width=0.4, label="sroce / rdma_rxe")
        ax.bar([i + 0.2 for i in x], tcp, width=0.4, label="sroce / TCP")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(x))
        ax.set_xticklabels(cases, rotation=60, ha="right", fontsize=8)
        ax.set_title("netdev MTU %s (latency: lower is better)" % mtu)
        ax.set_ylabel("ratio of medians")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    rigmod.exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="default 5 (0: only --profile runs)")
    ap.add_argument("--mtus", default="1500,9000", help="netdev MTUs (default 1500,9000)")
    ap.add_argument("--kinds", default="sroce,rxe,tcp", help="default sroce,rxe,tcp")
    ap.add_argument("--bw-seconds", type=int, default=8,
                    help="perftest bandwidth runs: -D (default 8 s; measured within margins "
                         "of 2 s, 1 s below 8 s)")
    ap.add_argument("--lat-iters", type=int, default=2000, help="latency tests' -n")
    ap.add_argument("--q-iters", type=int, default=500,
                    help="-n per QP of the -q 4 bandwidth run (default 500)")
    ap.add_argument("--tcp-seconds", type=int, default=4, help="iperf3 -t, sockperf -t")
    ap.add_argument("--fio-seconds", type=int, default=5, help="fio --runtime")
    ap.add_argument("--nvme-mb", type=int, default=256, help="null_blk size")
    ap.add_argument("--no-nvme", dest="nvme", action="store_false")
    ap.add_argument("--skip", default="", help="perftest cases to leave out, comma-separated")
    ap.add_argument("--profile", default="",
                    help="perftest or NVMe cases to run once more per kind and MTU under "
                         "perf record (both guests) and the host's per-thread accounting, "
                         "e.g. write_bw_64k,send_lat,nvme_randread_4k: "
                         "build/bench/profile-*.txt")
    ap.add_argument("--profile-top", type=int, default=25, metavar="N",
                    help="busy symbols per guest in a profile file (default 25)")
    ap.add_argument("--quick", action="store_true",
                    help="3 repetitions, MTU 1500 only, no NVMe, smaller runs")
    ap.add_argument("--slub-debug", action="store_true",
                    help="boot the guests with slub_debug=FZPU as the tests do (to look for "
                         "memory corruption under the bench's load; slows allocations)")
    ap.add_argument("--pclmul", action="store_true",
                    help="let rdma_rxe compute its ICRC with crc32-pclmul (by default the "
                         "guests blacklist it and rdma_rxe uses the generic, table-driven "
                         "CRC-32: under TCG the emulated carry-less multiply costs more than "
                         "it saves; sroce times its choices at load either way)")
    ap.add_argument("--wire-priority", action="store_true",
                    help="for latency studies only: give each guest's QEMU main thread "
                         "(which moves the frames: the NIC and the wire) SCHED_FIFO, so that "
                         "vCPUs that busy-poll do not keep it off the host's cores; under load "
                         "it takes their cores instead, and bandwidth falls "
                         "(Documentation/performance.rst)")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=1024)
    ap.add_argument("--timeout", type=int, default=600, help="per command")
    ap.add_argument("--out", default=os.path.join(rigmod.BUILD, "bench"))
    a = ap.parse_args()
    if a.quick:
        a.reps, a.mtus, a.nvme, a.bw_seconds, a.lat_iters, a.q_iters = \
            3, "1500", False, 5, 1000, 200
    a.kinds = [k for k in a.kinds.split(",") if k]
    a.mtus = [int(m) for m in a.mtus.split(",") if m]
    a.skip = set(x for x in a.skip.split(",") if x)
    a.profile = set(x for x in a.profile.split(",") if x)
    known = [c[0] for c in PERFTESTS]
    unknown = a.skip - set(known)
    if unknown:
        ap.error("unknown perftest cases: %s (known: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(known)))
    known += [c[0] for c in NVME_CASES]
    unknown = a.profile - set(known)
    if unknown:
        ap.error("unknown cases to profile: %s (known: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(known)))

    a.out = os.path.abspath(a.out)
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)

    def make_rig(n):
        return rigmod.Rig(guests=2, smp=a.smp, mem=a.mem, debug=a.slub_debug,
                          kargs="" if a.pclmul else "modprobe.blacklist=crc32_pclmul",
                          wire_priority=a.wire_priority,
                          outdir=os.path.join(a.out, "boot-%d" % n))
    t0 = time.time()
    b = Bench(make_rig, a)
    try:
        rig = b.rig.start()
        print("bench: 2 guests of %s (%s, %d vCPU, %d MiB each, %s, %s, %s) up in %.1f s; "
              "output in %s" % (rig.kver, "kvm" if rig.kvm else "tcg", a.smp, a.mem,
                                "slub_debug=FZPU" if a.slub_debug else "no slub_debug",
                                "crc32-pclmul allowed" if a.pclmul else
                                "crc32-pclmul blacklisted",
                                "wire thread SCHED_FIFO" if a.wire_priority else
                                "wire thread CFS", rig.boot_seconds, a.out),
              flush=True)
        load0 = os.getloadavg()
        b.run()
        rig = b.rig
        bad = rig.console_problems()
    finally:
        b.rig.stop()
    bad += rig.bad_console_lines()
    summary = summarize(b.results, a.reps)
    print_table(summary, a.kinds)
    print("\ntargets:")
    tl = targets(summary, b.meta)
    for what, v, ok, bound in tl:
        print("  %-58s %-10s %-12s %s" % (
            what, "-" if v is None else "%.3g" % v,
            {None: "not measured", True: "met", False: "MISSED"}[ok], bound_text(bound)))
    print("\ncommands (each RDMA end adds -d DEV -x <its IPv4 RoCE v2 GID index>; "
          "the server's address is %s):" % rig[0].ip4)
    for name, cmds in b.meta.get("commands", {}).items():
        print("  %-18s %s" % (name, " | ".join("%s: %s" % kv for kv in cmds.items())))
    print("host load average: %.2f %.2f %.2f at start, %.2f %.2f %.2f at end (%d CPUs); "
          "%.0f s" % (load0 + os.getloadavg() + (os.cpu_count(), time.time() - t0)))
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump({"kver": rig.kver, "accel": "kvm" if rig.kvm else "tcg", "smp": a.smp,
                   "pclmul": a.pclmul, "wire_priority": a.wire_priority,
                   "mem": a.mem, "reps": a.reps, "mtus": a.mtus, "kinds": a.kinds,
                   "meta": b.meta, "results": b.results, "summary": summary,
                   "targets": [{"what": w, "value": v, "met": ok,
                                "needs_gbps": bound[0] if bound else None,
                                "link_ceiling_gbps": bound[1] if bound else None}
                               for w, v, ok, bound in tl]},
                  f, indent=2)
        f.write("\n")
    try:
        if chart(summary, os.path.join(a.out, "bench.png")) is not False:
            print("chart: %s" % os.path.join(a.out, "bench.png"))
    except ImportError as e:
        print("bench: no chart (%s; scripts/install-deps.sh installs python3-matplotlib)" % e)
        b.status = 1
    return b.status | rigmod.report_console("bench: bad console lines", bad)


if __name__ == "__main__":
    sys.exit(main())
