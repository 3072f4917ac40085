# SPDX-License-Identifier: GPL-2.0
"""What a local process and a lossy link must not be able to do to sroce.

- sroce-objects-test's harden mode, one process against its own objects and
  rings: a send-queue producer rewound below what the kernel fetched (today's
  kernel must take the QP to ERR with QP_FATAL, not loop ~2^32 times), receives
  posted in ERR flushed exactly once, SRQ receive SGEs checked against the SRQ's
  PD, QPs destroyed under a long READ with SENDs queued behind it (one connected
  to itself, two pairs at once), objects beyond the device limits refused.
- Rings are charged to the process's memory cgroup: a process in a 64 MiB
  cgroup cannot pin more ring memory than that.
- READs and atomics complete under loss (netem on both guests), byte-verified.
- Teardown after both ends of a long READ were killed mid-message finishes.
- A process holding every address handle it can get leaves kernel consumers
  theirs: rdma_cm still connects (each of its CM messages needs an AH).

Every command is bounded; a hang fails the test instead of stalling the run.
"""
import json
import re
import time

import pytest

from guestrdma import (TOOLS, client_server, cm_listening, configure, gid_index,
                       listening, unload_all_rdma_links, wait_for)

OBJECTS = TOOLS + "/sroce-objects-test"
RDMA_TEST = TOOLS + "/sroce-rdma-test"
HARDEN_CASES = ["oversize", "recv_after_err", "srq_pd", "destroy_self",
                "destroy_concurrent", "sq_rewind"]


@pytest.fixture(scope="module")
def pair(rig):
    for g in rig.guests:
        configure(g)
    yield rig.guests
    for g in rig.guests:
        g.set_netem("")
        unload_all_rdma_links(g)


@pytest.mark.parametrize("case", HARDEN_CASES)
def test_process_cannot_hurt_the_kernel(pair, case):
    g0 = pair[0]
    r = g0.run("timeout -s KILL 60 %s sroce0 harden %s" % (OBJECTS, case), timeout=90)
    assert r.rc == 0 and "RESULT: PASS" in r.out, r
    assert "FAIL" not in r.out, r
    # the device still works for everybody else
    r = g0.run("timeout -s KILL 60 %s -d sroce0 --case rc_send" % RDMA_TEST, timeout=90)
    assert r.rc == 0 and "RESULT: PASS" in r.out, r


def test_rings_are_charged_to_the_memory_cgroup(pair):
    g0 = pair[0]
    cg = "/sys/fs/cgroup/sroce-hog"
    g0.run("mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup")
    g0.check("echo +memory > /sys/fs/cgroup/cgroup.subtree_control; mkdir -p %s && "
             "echo 64M > %s/memory.max && echo 0 > %s/memory.swap.max 2>/dev/null; true" %
             (cg, cg, cg))
    try:
        # 32 QPs with 16 Ki-entry rings want several hundred MiB
        r = g0.run("sh -c 'echo $$ > %s/cgroup.procs && exec timeout -s KILL 60 %s sroce0 "
                   "qp-hog 32'" % (cg, OBJECTS), timeout=90)
        events = g0.run("cat %s/memory.events" % cg).out
        assert r.rc == 0, r
        m = re.search(r"created (\d+) of 32, stopped by (.*)", r.out)
        assert m, r
        assert int(m.group(1)) < 32 and "ENOMEM" in m.group(2), (r.out, events)
        assert re.search(r"^max [1-9]", events, re.M), events
    finally:
        g0.run("rmdir %s 2>/dev/null; true" % cg)
    # the guest is fine, and so is the device
    r = g0.run("timeout -s KILL 60 %s -d sroce0 --case rc_write" % RDMA_TEST, timeout=90)
    assert r.rc == 0 and "RESULT: PASS" in r.out, r


def perftest(pair, cmd, netem):
    g0, g1 = pair
    for g in pair:
        g.set_netem(netem)
    try:
        gi0, gi1 = gid_index(g0, "sroce0"), gid_index(g1, "sroce0")
        # -F: a failed clock calibration (TCG) must not fail the run
        return client_server(g0, "timeout -s KILL 150 %s -F -d sroce0 -x %d" % (cmd, gi0),
                             g1, "timeout -s KILL 150 %s -F -d sroce0 -x %d %s" % (
                                 cmd, gi1, g0.ip4),
                             timeout=170)
    finally:
        for g in pair:
            g.set_netem("")


@pytest.mark.parametrize("cmd", ["ib_read_bw -s 65536 -n 100", "ib_atomic_bw -n 200"])
def test_read_and_atomic_bw_complete_with_5_percent_loss(pair, cmd):
    s, c = perftest(pair, cmd, "loss 5%")
    assert c.ok and s.ok, (s, c)
    assert re.search(r"^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+", c.out, re.M), c


@pytest.mark.parametrize("netem", ["loss 5%", "loss 1% delay 1ms reorder 5% duplicate 1%"])
def test_reads_and_atomics_byte_verified_on_a_lossy_link(pair, netem):
    g0, g1 = pair
    cases = " ".join("--case %s" % c for c in ["rc_read", "rc_atomic", "rc_read_fence_send"])
    for g in pair:
        g.set_netem(netem)
    try:
        s, c = client_server(
            g0, "timeout -s KILL 200 %s -d sroce0 --server --port 18530" % RDMA_TEST,
            g1, "timeout -s KILL 200 %s -d sroce0 --timeout 60 --client %s --port 18530 %s" %
            (RDMA_TEST, g0.ip4, cases), port=18530, timeout=230)
    finally:
        for g in pair:
            g.set_netem("")
    assert c.ok and "RESULT: PASS" in c.out, (s, c)
    assert "FAIL" not in c.out, c


def qps_of(g, comm):
    """QPs that `rdma res show qp` lists for processes named comm."""
    out = g.run("rdma -j res show qp", timeout=30).out or "[]"
    return [q for q in json.loads(out) if q.get("comm") == comm]


AH_HOG = "/src/tests/vm/guest_ah_hog.py"
SROCE_MAX_AH = 0x10000          # kernel/sroce.h; users get 15/16 of it


def test_process_holding_all_its_ahs_leaves_rdma_cm_working(pair):
    """One process creates AHs until the device says ENOMEM and keeps them. It
    gets at most 15/16 of max_ah (what other AHs exist at the time, rdma_cm's
    passing ones, may take a few of its share); rdma_cm, whose every connection
    message needs a kernel AH, then still connects both ways (rping, its data
    compared by the client)."""
    g0, g1 = pair
    assert int(g0.check("ibv_devinfo -v -d sroce0 | sed -n 's/.*max_ah:\\s*//p'")) == SROCE_MAX_AH
    ready = "/tmp/ah_hog.ready"
    g0.check("rm -f " + ready)
    hog = g0.spawn("exec python3 %s sroce0 %d %s 600" % (AH_HOG, gid_index(g0, "sroce0"), ready))
    try:
        wait_for(lambda: g0.run("test -s " + ready).ok, timeout=300, interval=1,
                 what="the process to fill the AH table")
        count, err = map(int, g0.check("cat " + ready).split())
        assert err == 12, "creating AHs ended with errno %d, not ENOMEM" % err
        user_max = SROCE_MAX_AH - SROCE_MAX_AH // 16
        assert user_max - 64 <= count <= user_max, count
        for srv, cli, port in ((g0, g1, 7990), (g1, g0, 7991)):
            flags = "-a %s -p %d -C 5 -S 64 -v" % (srv.ip4, port)
            s, c = client_server(srv, "timeout -s KILL 100 rping -s " + flags, cli,
                                 "timeout -s KILL 100 rping -c -V " + flags, port=port,
                                 timeout=120,
                                 is_listening=lambda g, p: cm_listening(g, p, "sroce0"))
            assert s.ok and c.ok, (s, c)
            assert c.out.count("ping data: ") == 5 and "mismatch" not in c.out + c.err, c
        assert hog.poll() is None, "the AH holder ended before the rpings did: %r" % hog.wait(0)
    finally:
        hog.kill()
        hog.wait(60)


def test_teardown_after_read_peers_vanish(pair):
    """ib_read_bw with 16 MiB READs between the guests: the responder is killed
    mid-READ, then the requester. The requester's QPs are gone within 10 s, and
    'rdma link del' + 'modprobe -r sroce' finish on both guests (runs last: it
    unloads sroce)."""
    g0, g1 = pair
    gid0, gid1 = gid_index(g0, "sroce0"), gid_index(g1, "sroce0")
    port = 18620
    cmd = "timeout -s KILL 300 ib_read_bw -d sroce0 -x %d -s 16777216 -n 100000 -p %d"
    srv = g1.spawn(cmd % (gid1, port))
    cli = None
    try:
        wait_for(lambda: listening(g1, port), timeout=60, what="ib_read_bw server")
        rx = "cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rx_packets"
        c0 = int(g0.check(rx))
        cli = g0.spawn((cmd % (gid0, port)) + " " + g1.ip4)
        wait_for(lambda: int(g0.check(rx)) > c0 + 2000, timeout=90,
                 what="READ responses flowing")
        srv.kill()
        srv.wait(10)
        time.sleep(0.5)
        cli.kill()
        cli.wait(10)
        wait_for(lambda: not qps_of(g0, "ib_read_bw"), timeout=10,
                 what="the requester's QPs to go")
        for g in (g0, g1):
            t0 = time.time()
            r = g.run("rdma link del sroce0 && modprobe -r sroce", timeout=60)
            print("%s: link del + modprobe -r: rc=%d in %.1f s" % (g.name, r.rc, time.time() - t0))
            assert r.ok, r
            assert g.run("lsmod | grep -c '^sroce '").out.strip() == "0"
    finally:
        for p in (srv, cli):
            if p is not None and p.result is None:
                p.kill()
                p.wait(10)

