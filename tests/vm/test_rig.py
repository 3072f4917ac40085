# SPDX-License-Identifier: GPL-2.0
"""Self-tests of the QEMU rig itself, including rdma_rxe as a known-good RDMA device."""
import os
import time

import pytest

from conftest import REPO, add_link, gid_index, rigmod, unload_all_rdma_links, wait_for


def test_guests_share_one_link(rig):
    for g in rig.guests:
        assert g.check("cat /sys/class/net/eth0/mtu").strip() == str(rig.mtu)
        addrs = g.check("ip -br addr show dev eth0")
        assert g.ip4 + "/24" in addrs and g.ip6 + "/64" in addrs, addrs
    a, b = rig[0], rig[1]
    assert a.run("ping -c 2 -W 3 %s" % b.ip4, timeout=30).ok
    assert b.run("ping -6 -c 2 -W 3 %s" % a.ip6, timeout=30).ok


def test_install_tree_is_in_guests(rig):
    for g in rig.guests:
        kver = g.check("uname -r").strip()
        assert kver == rig.kver
        g.check("test -f /lib/modules/%s/extra/sroce.ko" % kver)
        g.check("test -f /usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav34.so")
        assert g.check("cat /etc/libibverbs.d/sroce.driver").split() == ["driver", "sroce"]
        # depmod ran: modprobe can resolve the module by its link alias.
        assert "sroce.ko" in g.check("modprobe --show-depends rdma-link-sroce")


def test_netem_on_a_running_guest(rig):
    a, b = rig[0], rig[1]
    try:
        b.set_netem("loss 100%")
        assert "netem" in b.check("tc qdisc show dev eth0")
        assert not a.run("ping -c 2 -W 1 %s" % b.ip4, timeout=30).ok
    finally:
        b.set_netem("")
    assert "netem" not in b.check("tc qdisc show dev eth0")
    assert a.run("ping -c 2 -W 3 %s" % b.ip4, timeout=30).ok


def test_console_detector_catches_kernel_warnings(rig):
    g = rig[0]
    g.mark_console()
    assert g.bad_console_lines() == []
    g.check("echo '<4>rig-selftest: WARNING: injected by test_rig' > /dev/kmsg")
    lines = wait_for(g.bad_console_lines, timeout=10, what="injected console line")
    assert any("injected by test_rig" in ln for ln in lines)
    g.mark_console()  # do not fail this test for the line it injected on purpose


def test_boot_options(tmp_path):
    """MTU, netem and extra kernel arguments given to the rig reach the guest."""
    r = rigmod.Rig(guests=1, mtu=9000, netem={0: "delay 2ms"}, kargs="sroce_rig_selftest=1",
                   outdir=os.path.join(REPO, "build", "vm", "test-options"))
    with r:
        g = r[0]
        assert g.check("cat /sys/class/net/eth0/mtu").strip() == "9000"
        assert "netem" in g.check("tc qdisc show dev eth0")
        assert "sroce_rig_selftest=1" in g.check("cat /proc/cmdline")
        assert "slub_debug=FZPU" in g.check("cat /proc/cmdline")
        bad = r.bad_console_lines()
    assert bad == []


def run_pingpong(rig, prog, dev, server_args="", size=4096, iters=200, ipv6=False):
    """Server in guest 0, client in guest 1; both check the data (-c)."""
    srv, cli = rig[0], rig[1]
    gs, gc = gid_index(srv, dev, ipv6), gid_index(cli, dev, ipv6)
    common = "-d %s -c -s %d -n %d %s" % (dev, size, iters, server_args)
    server = srv.spawn("%s %s -g %d" % (prog, common, gs))
    time.sleep(1)
    client = None
    for _ in range(20):
        client = cli.run("%s %s -g %d %s" % (prog, common, gc, srv.ip4), timeout=120)
        if client.ok or "Couldn't connect" not in (client.out + client.err):
            break
        time.sleep(1)
    s = server.wait(120)
    return s, client


def test_rxe_rc_pingpong_proves_the_rig(rig):
    for g in rig.guests:
        unload_all_rdma_links(g)
        g.check("modprobe rdma_rxe")
        add_link(g, "rxe0", "eth0", "rxe")
    try:
        s, c = run_pingpong(rig, "ibv_rc_pingpong", "rxe0")
        assert c.ok, c
        assert s.ok, s
        for r in (s, c):
            assert "200 iters in" in r.out, r
    finally:
        for g in rig.guests:
            unload_all_rdma_links(g)
