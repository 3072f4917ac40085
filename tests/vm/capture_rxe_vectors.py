#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Capture real rdma_rxe RoCE v2 packets in the rig and turn them into unit-test vectors.

    tests/vm/capture_rxe_vectors.py capture [RUN...]  # boots 2 guests, writes build/vm/capture/g0/*.pcap
    tests/vm/capture_rxe_vectors.py convert   # pcaps -> tests/unit/vectors/rxe_packets.inc

Both guests run rdma_rxe (rxe0 on eth0); guest 0 runs the servers and dumpcap
(udp port 4791), guest 1 the clients. Each traffic run gets its own pcap.
The pcaps are evidence, not sources: only the generated .inc is kept in git.

The expected header fields in the .inc come from Wireshark's InfiniBand
dissector (tshark on the host), not from our own parser, so the unit test
checks our decoder and ICRC against an independent reading of the packets.
"""
import os
import struct
import subprocess
import sys
import time

import guestrdma
from guestrdma import REPO, rigmod

OUTDIR = os.path.join(REPO, "build", "vm", "capture")
VECTORS = os.path.join(REPO, "tests", "unit", "vectors", "rxe_packets.inc")
SERVER_IP = "10.99.0.1"


# name, server command, client command ({g} = GID index, {srv} = server IP)
RUNS = [
    ("rc4", "ibv_rc_pingpong -d rxe0 -g {g} -c -n 5 -s 100",
            "ibv_rc_pingpong -d rxe0 -g {g} -c -n 5 -s 100 {srv}", False),
    ("rc4big", "ibv_rc_pingpong -d rxe0 -g {g} -c -n 2 -s 4097 -m 1024",
               "ibv_rc_pingpong -d rxe0 -g {g} -c -n 2 -s 4097 -m 1024 {srv}", False),
    ("rc6", "ibv_rc_pingpong -d rxe0 -g {g} -c -n 5 -s 100",
            "ibv_rc_pingpong -d rxe0 -g {g} -c -n 5 -s 100 {srv}", True),
    ("ud4", "ibv_ud_pingpong -d rxe0 -g {g} -c -n 5 -s 100",
            "ibv_ud_pingpong -d rxe0 -g {g} -c -n 5 -s 100 {srv}", False),
    ("ud6", "ibv_ud_pingpong -d rxe0 -g {g} -c -n 5 -s 98",
            "ibv_ud_pingpong -d rxe0 -g {g} -c -n 5 -s 98 {srv}", True),
    ("uc4", "ibv_uc_pingpong -d rxe0 -g {g} -c -n 5 -s 102",
            "ibv_uc_pingpong -d rxe0 -g {g} -c -n 5 -s 102 {srv}", False),
    ("write4", "ib_write_bw -d rxe0 -x {g} -n 5 -s 64 -F",
               "ib_write_bw -d rxe0 -x {g} -n 5 -s 64 -F {srv}", False),
    ("read4", "ib_read_bw -d rxe0 -x {g} -n 5 -s 64 -F",
              "ib_read_bw -d rxe0 -x {g} -n 5 -s 64 -F {srv}", False),
    ("read6big", "ib_read_bw -d rxe0 -x {g} -n 5 -s 2500 -m 1024 -F",
                 "ib_read_bw -d rxe0 -x {g} -n 5 -s 2500 -m 1024 -F {srv}", True),
    ("atomic4", "ib_atomic_bw -d rxe0 -x {g} -n 5 -F -A CMP_AND_SWAP",
                "ib_atomic_bw -d rxe0 -x {g} -n 5 -F -A CMP_AND_SWAP {srv}", False),
    ("fadd4", "ib_atomic_bw -d rxe0 -x {g} -n 5 -F",
              "ib_atomic_bw -d rxe0 -x {g} -n 5 -F {srv}", False),
    ("ucwrite6", "ib_write_bw -d rxe0 -x {g} -n 5 -s 33 -c UC -F",
                 "ib_write_bw -d rxe0 -x {g} -n 5 -s 33 -c UC -F {srv}", True),
]


def capture():
    with rigmod.Rig(guests=2, outdir=OUTDIR) as rig:
        g0, g1 = rig[0], rig[1]
        sides = [guestrdma.configure(g, "rxe") for g in (g0, g1)]
        idx = {v6: tuple(s.gid["ipv6" if v6 else "ipv4"] for s in sides) for v6 in (False, True)}
        print("gid indexes:", idx, flush=True)
        only = set(sys.argv[2:])
        for name, scmd, ccmd, v6 in RUNS:
            if only and name not in only:
                continue
            # dumpcap, not tshark: it starts in a second under TCG (tshark
            # loads every dissector first) and flushes its file on SIGINT.
            g0.check("rm -f /out/%s.pcap; (setsid dumpcap -q -P -i eth0 -f 'udp port 4791' "
                     "-w /out/%s.pcap > /tmp/cap.log 2>&1 & echo $! > /tmp/cap.pid)"
                     % (name, name))
            for _ in range(100):
                if "Capturing on" in g0.run("cat /tmp/cap.log").out:
                    break
                time.sleep(0.5)
            s, cli = guestrdma.client_server(g0, scmd.format(g=idx[v6][0], srv=SERVER_IP),
                                             g1, ccmd.format(g=idx[v6][1], srv=SERVER_IP),
                                             timeout=120)
            time.sleep(1)
            g0.run("kill -INT $(cat /tmp/cap.pid); for i in $(seq 50); do "
                   "kill -0 $(cat /tmp/cap.pid) 2>/dev/null || break; sleep 0.2; done")
            size = g0.run("stat -c %%s /out/%s.pcap" % name).out.strip()
            print("%-9s client rc=%s server rc=%s pcap %s bytes" % (name, cli.rc, s.rc, size),
                  flush=True)
            if not cli.ok or not s.ok:
                print("  client:", cli.out[-400:], cli.err[-400:])
                print("  server:", s.out[-400:], s.err[-400:])
        for g in (g0, g1):
            guestrdma.unload_all_rdma_links(g)
        bad = rig.bad_console_lines()
        if bad:
            print("bad console lines:\n" + "\n".join(bad))


# ------------------------------------------------------------------ convert

def read_pcap(path):
    """Yield raw link-layer frames of a classic (libpcap) capture file."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype != 1:
        raise RuntimeError("%s: link type %d, want Ethernet" % (path, linktype))
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


FIELDS = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.invariant.crc"]


def tshark_fields(path):
    out = subprocess.check_output(
        ["tshark", "-r", path, "-d", "udp.port==4791,infiniband", "-T", "fields"] +
        sum([["-e", f] for f in FIELDS], []) + ["-E", "separator=/t"],
        stderr=subprocess.DEVNULL, text=True)
    rows = {}
    for line in out.splitlines():
        p = line.split("\t")
        if len(p) < 6 or not p[1]:
            continue
        rows[int(p[0])] = dict(opcode=int(p[1], 0), dqpn=int(p[2], 0), psn=int(p[3], 0),
                               pad=int(p[4], 0), icrc=int(p[5], 0) if p[5] else None)
    return rows


def convert():
    gdir = os.path.join(OUTDIR, "g0")
    seen = {}
    chosen = []
    for name, _, _, _ in RUNS:
        path = os.path.join(gdir, name + ".pcap")
        if not os.path.exists(path) or os.path.getsize(path) <= 24:
            print("skip %s: no capture" % name)
            continue
        fields = tshark_fields(path)
        for num, frame in enumerate(read_pcap(path), 1):
            if num not in fields or len(frame) < 14:
                continue
            ethertype = struct.unpack(">H", frame[12:14])[0]
            ip = frame[14:]
            if ethertype == 0x0800:
                fam = 4
                ip = ip[:struct.unpack(">H", ip[2:4])[0]]      # strip Ethernet padding
            elif ethertype == 0x86dd:
                fam = 6
                ip = ip[:40 + struct.unpack(">H", ip[4:6])[0]]
            else:
                continue
            f = fields[num]
            # Up to two packets per (family, opcode, pad) with distinct lengths.
            key = (fam, f["opcode"], f["pad"])
            lens = seen.setdefault(key, set())
            if len(lens) >= 2 or len(ip) in lens:
                continue
            lens.add(len(ip))
            chosen.append((name, num, fam, f, bytes(ip)))
    os.makedirs(os.path.dirname(VECTORS), exist_ok=True)
    with open(VECTORS, "w") as out:
        out.write("/* SPDX-License-Identifier: GPL-2.0 */\n"
                  "/* Generated by tests/vm/capture_rxe_vectors.py convert from rdma_rxe\n"
                  " * (Linux 6.1) traffic captured in the rig; do not edit by hand.\n"
                  " * Each entry: capture run, frame, IP version, BTH opcode, dest QP, PSN,\n"
                  " * pad count, ICRC as Wireshark shows it (the 4 trailer bytes read as a\n"
                  " * big-endian number), then the packet from the IP header on. */\n")
        for name, num, fam, f, ip in chosen:
            out.write("SROCE_CAPTURED_VECTOR(\"%s#%d\", %d, 0x%02x, 0x%06x, 0x%06x, %d, 0x%08xu,\n"
                      % (name, num, fam, f["opcode"], f["dqpn"], f["psn"], f["pad"],
                         f["icrc"] or 0))
            hexes = ["0x%02x" % b for b in ip]
            for i in range(0, len(hexes), 12):
                out.write("\t" + ", ".join(hexes[i:i + 12]) +
                          (",\n" if i + 12 < len(hexes) else ")\n"))
    print("%d vectors -> %s" % (len(chosen), VECTORS))
    for name, num, fam, f, ip in chosen:
        print("  %-10s #%-3d IPv%d opcode 0x%02x len %d" % (name, num, fam, f["opcode"], len(ip)))


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("capture", "all"):
        capture()
        if what == "all":
            del sys.argv[2:]
    if what in ("convert", "all"):
        convert()
