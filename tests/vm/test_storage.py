# SPDX-License-Identifier: GPL-2.0
"""Storage over RDMA between the two guests: NVMe over Fabrics (nvmet-rdma and
nvme-rdma), iSER (LIO's ib_isert and open-iscsi's ib_iser) and NFS over RDMA
(knfsd's svcrdma and the NFS client's xprtrdma) and SRP (LIO's ib_srpt and
ib_srp), with data checked end to end.

Guest 0 is the target (server), guest 1 the host (initiator, client). Every
test runs once per pair of device kinds (target, host):

  sroce-sroce   sroce on both ends
  sroce-rxe     sroce in the target, the kernel's rdma_rxe in the host
  rxe-sroce     rdma_rxe in the target, sroce in the host
  rxe-rxe       the harness baseline on rdma_rxe alone; only with
                SROCE_TEST_RXE_BASELINE=1

Select pairs with -k, e.g. -k sroce-rxe. NVMe reconnect and NFS run in the
pairs of one kind (interop is NVMe-oF and iSER, both ways), and so does SRP; the fault tests
(lossy link, device removal under I/O) in sroce-sroce only.

Every test builds its target and host from nothing and takes them down again
(disconnect, logout, umount, configfs entries, daemons, files, and every
kernel module that came in), so each test leaves the guests as it found
them; the console check of conftest fails a test that made a guest print a
WARNING, BUG, Oops, lockdep report or hung task. Sizes are small because the
guests run under TCG; SROCE_TEST_STORAGE_SCALE=N multiplies them.
"""
import contextlib
import os
import re
import shlex
import sys
import time

import pytest

import storage as st
from guestrdma import configure, console_guard, hw_counters, wait_for
from pairs import pair  # noqa: F401 (pair is a fixture)

SCALE = float(os.environ.get("SROCE_TEST_STORAGE_SCALE", "1"))

MiB = 1 << 20


def scaled(nbytes, unit):
    return max(unit, int(nbytes * SCALE) // unit * unit)


# fio: 2 MiB of 4 KiB random writes, then 8 MiB of 128 KiB sequential writes,
# each region read back and verified, on every device. Under TCG, rdma_rxe
# between two guests moves 1-4 MB/s; a TCG guest also needs about 2 s to
# start fio. NFS: a 32 MiB file keeps that test under a minute.
PATTERNS = st.FioPatterns(rand_bytes=scaled(2 * MiB, 4096), seq_bytes=scaled(8 * MiB, 128 << 10))
# Between sroce and rdma_rxe (the slower side sets the pace) half of that: the
# wire format of every operation is proven by far less, and the full amount
# runs sroce<->sroce.
INTEROP_PATTERNS = st.FioPatterns(rand_bytes=scaled(1 * MiB, 4096),
                                  seq_bytes=scaled(4 * MiB, 128 << 10))
DEV_MB = max(64, 2 * PATTERNS.span // MiB)
NFS_FILE_MB = scaled(32 * MiB, MiB) // MiB


def report(request, sw):
    sys.stderr.write("\n%s: %s\n" % (request.node.name, sw))


def devs(names):
    return ["/dev/" + n for n in names]


def one_kind(pair):
    """Tests that interop does not need run in the pairs of one kind only."""
    if pair.kinds[0] != pair.kinds[1]:
        pytest.skip("runs in the pairs of one kind (sroce-sroce, rxe-rxe)")


def sroce_only(pair):
    if pair.kinds != ("sroce", "sroce"):
        pytest.skip("sroce fault test: runs in the sroce-sroce pair")


def dmesg_count(g, pattern):
    return int(g.run("dmesg | grep -c -- %s" % shlex.quote(pattern)).out.strip() or 0)


def counters(g, dev="sroce0"):
    """The port counters of an sroce device, {name: value}."""
    words = g.check("rdma statistic show link %s/1" % dev).split()
    return {k: int(v) for k, v in zip(words[2::2], words[3::2]) if v.isdigit()}


@contextlib.contextmanager
def nvme_session(h, nvmet, sw):
    """nvme-rdma in guest h connected to nvmet (lap "connect"); afterwards h is left
    as it was found (st.guest_state)."""
    with st.guest_state(h), st.nvme_host(h, nvmet) as host:
        sw.lap("connect")
        yield host


def tx_packets(g):
    """Packets g's one RDMA device has sent (sroce: tx_packets, rdma_rxe: sent_pkts)."""
    counts = hw_counters(g, "*")
    return counts["tx_packets"] if "tx_packets" in counts else counts["sent_pkts"]


@contextlib.contextmanager
def io_during(h, patterns, devices):
    """fio with patterns on devices in the background in guest h, its I/O flowing
    (h's device sent 100 packets more since fio started) when the block starts.
    The block gets fio's Proc; fio is given 300 s to end afterwards (a result
    the block did not take does not count), then killed."""
    start = tx_packets(h)
    bg = h.spawn(patterns.cmd(devices))
    try:
        wait_for(lambda: tx_packets(h) > start + 100 or bg.poll() is not None, timeout=60,
                 interval=0.2, what="fio's I/O to flow")
        yield bg
        bg.wait(300)
    finally:
        bg.kill()


def still_running(bg):
    """fio is still doing I/O when the test pulls the rug."""
    assert bg.poll() is None, "fio ended before the fault it was to span: %r" % bg.wait(0)


# A lossy link makes every message slow: keep the faults' fio small.
FAULT_PATTERNS = st.FioPatterns(rand_bytes=scaled(1 * MiB, 4096),
                                seq_bytes=scaled(2 * MiB, 128 << 10))


# ------------------------------------------------------------ NVMe over Fabrics

def patterns_for(pair):
    return PATTERNS if pair.kinds[0] == pair.kinds[1] else INTEROP_PATTERNS


def connect_verify_disconnect(request, h, nvmet, patterns=PATTERNS):
    """nvme-rdma in guest h: connect, fio-verify both namespaces, disconnect."""
    sw = st.Stopwatch()
    with nvme_session(h, nvmet, sw) as host:
        st.fio_verify(h, devs([host.ns[1], host.ns[2]]), patterns)
        sw.lap("fio")
        host.disconnect()
        sw.lap("disconnect")
    sw.lap("teardown")
    report(request, sw)


class TestNvmeRdma:
    """nvmet-rdma in the target guest: one subsystem with a null_blk (nsid 1)
    and a file-backed (nsid 2) namespace, set up once for the tests of a pair."""

    @pytest.fixture(scope="class")
    def nvmet(self, rig, pair):
        t = pair.server.guest
        stack = contextlib.ExitStack()
        try:
            with console_guard(rig, "setting up nvmet"):
                ts, = stack.enter_context(st.guest_state(t))
                tgt = stack.enter_context(st.nvmet_target(t, ts, size_mb=DEV_MB))
            yield tgt
        finally:
            with console_guard(rig, "removing nvmet"):
                stack.close()

    def test_io(self, request, pair, nvmet):
        """Discover and connect over RDMA, fio-verify both namespaces,
        disconnect: the controller and its block devices go away."""
        connect_verify_disconnect(request, pair.client.guest, nvmet, patterns_for(pair))

    def test_reconnect(self, request, pair, nvmet):
        """Unlink the subsystem from the target's port while the host is
        connected and writing: the host loses its queues and retries every
        second (--reconnect-delay=1); once the port is back it reconnects by
        itself, the same controller and namespaces come back, the I/O that
        spanned the outage completes and verifies, and new I/O works."""
        one_kind(pair)
        h = pair.client.guest
        sw = st.Stopwatch()
        with nvme_session(h, nvmet, sw) as host:
            ctrl, ns = host.ctrl, dict(host.ns)
            assert host.state() == "live"
            across = devs([ns[2]])
            disabled = False
            with io_during(h, PATTERNS, across) as bg:
                try:
                    still_running(bg)
                    nvmet.disable()
                    disabled = True
                    wait_for(lambda: host.state() in ("connecting", "resetting"), timeout=30,
                             what="the host to notice the port going away")
                    time.sleep(3)
                    down = host.state()
                    assert down in ("connecting", "resetting"), down
                    sw.lap("outage")
                    nvmet.enable()
                    disabled = False
                    wait_for(lambda: host.state() == "live", timeout=60,
                             what="the host to reconnect")
                    sw.lap("reconnect")
                    assert st.nvme_controllers(h, nvmet.nqn) == [ctrl]
                    assert st.nvme_namespaces(h, nvmet.nqn) == ns
                    st.parse_fio(bg.wait(300), PATTERNS.expected(across))
                    sw.lap("fio across outage")
                finally:
                    if disabled:
                        nvmet.enable()
            st.fio_verify(h, devs([ns[1]]), PATTERNS)
            sw.lap("fio after")
            log = h.check("dmesg | grep '%s: ' | tail -20" % ctrl)
            assert "Successfully reconnected" in log, log
            host.disconnect()
        sw.lap("teardown")
        report(request, sw)

    def test_loopback(self, request, pair, nvmet):
        """Target and host in one guest: nvme-rdma in the target guest connects
        to its own IP (RDMA loopback through one device), fio-verifies both
        namespaces, disconnects. It uses the target's device only, so it runs
        in the pairs of one kind (sroce-sroce, rxe-rxe)."""
        if pair.kinds[0] != pair.kinds[1]:
            pytest.skip("loopback runs in the %s-%s pair" % (pair.kinds[0], pair.kinds[0]))
        connect_verify_disconnect(request, pair.server.guest, nvmet)

    def test_lossy_link(self, request, pair, nvmet):
        """sroce: NVMe-oF over a link that drops 1% of the packets and
        reorders 5% in each direction (netem on both guests). RC recovery
        (NAK sequence error, go-back-N, READ re-requests, ACK timeouts) must
        hide every loss: fio verifies, the controller never resets or
        reconnects, and the counters show the loss was real. (rdma_rxe on
        this rig, 2% loss on one side: I/O timeouts and 22 reconnects in 10
        minutes, and 16 MiB of fio did not finish.)"""
        sroce_only(pair)
        t, h = pair.server.guest, pair.client.guest
        sw = st.Stopwatch()
        netem = "tc qdisc replace dev eth0 root netem loss 1% delay 1ms reorder 5%"
        with nvme_session(h, nvmet, sw) as host:
            before = [counters(g) for g in (t, h)]
            resets = dmesg_count(h, r"%s: \(Reconnecting\|resetting\|Removing\)"
                                 % host.ctrl)
            try:
                for g in (t, h):
                    g.check(netem)
                st.fio_verify(h, devs([host.ns[1]]), FAULT_PATTERNS, timeout=600)
                sw.lap("fio over loss")
                dropped = sum(int(x) for g in (t, h) for x in re.findall(
                    r"dropped (\d+)", g.check("tc -s qdisc show dev eth0")))
            finally:
                for g in (t, h):
                    g.run("tc qdisc del dev eth0 root; true")
            after = [counters(g) for g in (t, h)]
            assert host.state() == "live"
            assert dmesg_count(h, r"%s: \(Reconnecting\|resetting\|Removing\)"
                               % host.ctrl) == resets, "the controller reset"
            delta = {k: sum(a[k] - b[k] for a, b in zip(after, before))
                     for k in ("retry", "seq_nak_rcvd", "seq_nak_sent", "dup_req",
                               "out_of_sequence")}
            assert dropped > 0, "netem dropped nothing"
            assert delta["seq_nak_sent"] + delta["retry"] > 0, delta
            # every sequence NAK answers a packet off the expected PSN
            assert delta["out_of_sequence"] >= delta["seq_nak_sent"], delta
            sys.stderr.write("\nlossy link: %d packets dropped, %r\n" % (dropped, delta))
            host.disconnect()
        sw.lap("teardown")
        report(request, sw)

    def test_target_link_del_under_io(self, request, pair, nvmet):
        """sroce: 'rdma link del' of the target's device while the host
        writes. nvmet-rdma drops its queues and its listener, the host
        retries; once the device is back and the port re-enabled (nvmet in
        6.1 does not listen again by itself after a device removal), the host
        reconnects and fio verifies afterwards."""
        sroce_only(pair)
        t, h = pair.server.guest, pair.client.guest
        sw = st.Stopwatch()
        with nvme_session(h, nvmet, sw) as host:
            with io_during(h, FAULT_PATTERNS, devs([host.ns[2]])) as bg:
                still_running(bg)
                t.check("rdma link del sroce0", timeout=120)
                wait_for(lambda: host.state() in ("connecting", "resetting"), timeout=60,
                         what="the host to notice")
                sw.lap("device removed")
                configure(t)
                nvmet.disable()
                nvmet.enable()
                wait_for(lambda: host.state() == "live", timeout=90,
                         what="the host to reconnect")
                sw.lap("reconnected")
            # fio spanned the outage: its result does not count
            st.fio_verify(h, devs([host.ns[1], host.ns[2]]), FAULT_PATTERNS)
            sw.lap("fio after")
            host.disconnect()
        sw.lap("teardown")
        report(request, sw)

    def test_host_rmmod_under_io(self, request, pair, nvmet):
        """sroce: remove the host's device and unload sroce.ko while nvme-rdma
        has I/O in flight: the controller goes away (its I/O fails), nothing
        hangs or warns, and sroce comes back and connects again."""
        sroce_only(pair)
        h = pair.client.guest
        sw = st.Stopwatch()
        with st.guest_state(h):
            with st.nvme_host(h, nvmet) as host:
                sw.lap("connect")
                with io_during(h, FAULT_PATTERNS, devs([host.ns[1]])) as bg:
                    still_running(bg)
                    h.check("rdma link del sroce0 && modprobe -r sroce", timeout=120)
                    sw.lap("removed")
                    wait_for(lambda: not st.nvme_controllers(h, nvmet.nqn), timeout=60,
                             what="the controller to go")
                r = bg.poll()
                assert r is not None and r.rc not in (0, 124), \
                    "fio did not see its controller go: %r" % r
                configure(h)
            with st.nvme_host(h, nvmet) as host:
                st.fio_verify(h, devs([host.ns[1]]), FAULT_PATTERNS)
                sw.lap("fio after")
                host.disconnect()
        sw.lap("teardown")
        report(request, sw)


# ------------------------------------------------------------ iSER

def test_iser_io(request, pair):
    """LIO target with a ramdisk and a fileio LUN on an iSER portal; open-iscsi
    discovers and logs in over the iser iface, both LUNs appear as sd disks,
    fio verifies both, logout: the session and the disks are gone."""
    t, h = pair.server.guest, pair.client.guest
    sw = st.Stopwatch()
    with st.guest_state(t, h) as (ts, hs):
        # The recipe of Documentation/storage.rst (targetcli) once; the interop
        # pairs write the same objects into configfs, 12-15 s faster each. All
        # are taken down through configfs, as targetcli's clearconfig does.
        tool = "targetcli" if pair.kinds == ("sroce", "sroce") else "configfs"
        with st.lio_iser_target(t, st.initiator_iqn(h), ts, size_mb=DEV_MB,
                                tool=tool) as tgt:
            sw.lap("target")
            acl = "%s/acls/%s/info" % (tgt.tpg, st.initiator_iqn(h))
            with st.iser_initiator(h, tgt) as ini:
                ini.login()
                sw.lap("login")
                info = t.check("cat " + acl)
                assert "LOGGED_IN" in info, info
                st.fio_verify(h, devs([ini.disks[0], ini.disks[1]]), patterns_for(pair))
                sw.lap("fio")
                ini.logout()
                wait_for(lambda: "LOGGED_IN" not in t.check("cat " + acl), timeout=30,
                         what="the target to drop the session")
                sw.lap("logout")
    sw.lap("teardown")
    report(request, sw)


# ------------------------------------------------------------ SRP

def test_srp_io(request, pair):
    """LIO's SRP target (ib_srpt) with a ramdisk LUN; ib_srp logs in through the
    RDMA/CM, the LUN appears as an sd disk, fio verifies it, the port is
    deleted: the disk is gone. What blktests' srp suite sets up, between two
    hosts."""
    one_kind(pair)
    t, h = pair.server.guest, pair.client.guest
    sw = st.Stopwatch()
    with st.guest_state(t, h) as (ts, hs):
        with st.srpt_target(t, pair.server.dev, ts, size_mb=DEV_MB) as tgt:
            sw.lap("target")
            with st.srp_initiator(h, pair.client.dev, tgt) as ini:
                ini.login()
                sw.lap("login")
                st.fio_verify(h, devs([ini.disk]), patterns_for(pair))
                sw.lap("fio")
                ini.logout()
                sw.lap("logout")
    sw.lap("teardown")
    report(request, sw)


# ------------------------------------------------------------ NFS over RDMA

def test_nfs_rdma(request, pair):
    """NFS 4.2 over RDMA (port 20049): write a file of random data, unmount,
    drop caches, mount again and read it back; its sha256 matches on the
    client, on the server's export, and after the remount."""
    one_kind(pair)
    t, h = pair.server.guest, pair.client.guest
    sw = st.Stopwatch()
    data = st.NFS_MNT + "/data"
    with st.guest_state(t, h) as (ts, hs):
        with st.nfs_rdma_server(t, ts, size_mb=NFS_FILE_MB + 16) as srv, st.nfs_client(h):
            sw.lap("server")
            st.nfs_mount(h, srv)
            sw.lap("mount")
            want = h.check("set -o pipefail; head -c %dM /dev/urandom | tee %s | sha256sum "
                           "&& sync %s" % (NFS_FILE_MB, data, data), timeout=600).split()[0]
            sw.lap("write %d MiB" % NFS_FILE_MB)
            size = int(t.check("stat -c %%s %s/data" % srv.export))
            assert size == NFS_FILE_MB * MiB, size
            assert st.sha256(t, srv.export + "/data") == want, "server's copy differs"
            st.nfs_umount(h)
            h.check("echo 3 > /proc/sys/vm/drop_caches")
            st.nfs_mount(h, srv)
            sw.lap("remount")
            assert st.sha256(h, data, timeout=600) == want, "data read back differs"
            sw.lap("read %d MiB" % NFS_FILE_MB)
            h.check("rm %s" % data)
            st.nfs_umount(h)
    sw.lap("teardown")
    report(request, sw)

