# SPDX-License-Identifier: GPL-2.0
"""Self-tests of the QEMU rig itself, including rdma_rxe as a known-good RDMA device."""
import os
import re
import time

import pytest

from guestrdma import (REPO, client_server, pingpong_ok, configure_each, rigmod, unload_all_rdma_links,
                       wait_for)


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


@pytest.fixture(scope="module")
def own_rig():
    """One guest of its own, booted with options: test_boot_options checks that
    they arrive, then test_broken_guests_are_detected_and_replaced breaks it
    (one boot for both; the session rig stays up meanwhile)."""
    r = rigmod.Rig(guests=1, mtu=9000, netem={0: "delay 2ms"}, kargs="sroce_rig_selftest=1",
                   wire_priority=True, outdir=os.path.join(REPO, "build", "vm", "test-own"))
    with r:
        yield r


def test_boot_options(own_rig):
    """MTU, netem and extra kernel arguments given to the rig reach the guest;
    wire_priority puts QEMU's main thread, and no other, under SCHED_FIFO (the
    threads QEMU starts for the guest's file I/O meanwhile do not inherit it)."""
    r = own_rig
    g = r[0]
    assert g.check("cat /sys/class/net/eth0/mtu").strip() == "9000"
    assert "netem" in g.check("tc qdisc show dev eth0")
    assert "sroce_rig_selftest=1" in g.check("cat /proc/cmdline")
    assert "slub_debug=FZPU" in g.check("cat /proc/cmdline")
    g.check("cat /src/Makefile /src/README.md >/dev/null")
    policy = {}
    for t in map(int, os.listdir("/proc/%d/task" % g.qemu.pid)):
        try:
            policy[t] = os.sched_getscheduler(t) & ~os.SCHED_RESET_ON_FORK
        except ProcessLookupError:
            pass    # an idle I/O worker that has just ended
    assert policy.pop(g.qemu.pid) == os.SCHED_FIFO
    assert policy and set(policy.values()) == {os.SCHED_OTHER}, policy
    assert r.bad_console_lines() == []


def test_rxe_rc_pingpong_proves_the_rig(rig):
    """rdma_rxe in both guests, ibv_rc_pingpong between them (-c: the server checks its data)."""
    srv, cli = configure_each(rig.guests, "rxe")
    try:
        def cmd(side, host=""):
            return "ibv_rc_pingpong -d %s -c -s 4096 -n 200 -g %d %s" % (
                side.dev, side.gid["ipv4"], host)
        s, c = client_server(srv.guest, cmd(srv), cli.guest, cmd(cli, srv.guest.ip4),
                             timeout=120)
        pingpong_ok(s, c, 200)
    finally:
        for g in rig.guests:
            unload_all_rdma_links(g)


def test_broken_guests_are_detected_and_replaced(own_rig):
    """The two ways a guest stops being usable, seen and repaired by the rig (the
    session fixture reboots on them, see conftest.restart_if_unhealthy): an agent
    that gives no answer in time, and a command that cannot be killed (here dd on
    a suspended device-mapper device: a task in state D)."""
    r = own_rig
    g = r[0]
    assert r.health() == {}
    try:
        g.request({"op": "run", "cmd": "sleep 5", "timeout": 10}, timeout=1)
        raise AssertionError("the agent answered a 5 s command within 1 s")
    except rigmod.RigError as e:
        assert "no answer" in str(e), e
    t0 = time.time()
    try:
        g.run("true")
        raise AssertionError("a wedged guest took a request")
    except rigmod.RigError as e:
        assert "not asked" in str(e) and time.time() - t0 < 1, e
    assert "no answer" in r.health()["g0"]

    kept = r.restart()
    assert os.path.isdir(os.path.join(kept, "g0")), kept
    assert r.health() == {} and r.restarts == 1
    assert g.check("echo fresh").strip() == "fresh"

    # no udev in the guests: the node is devtmpfs's /dev/dm-MINOR
    minor = g.check(
        "modprobe loop && modprobe dm-mod && truncate -s 8M /tmp/d.img && dmsetup create "
        "--noudevsync stuck --table \"0 16384 linear $(losetup -f --show /tmp/d.img) 0\" && "
        "dmsetup suspend --noudevsync stuck && "
        "dmsetup info -c --noheadings -o minor stuck").strip()
    res = g.run("dd if=/dev/dm-%s of=/dev/null bs=4096 count=1 iflag=direct" % minor,
                timeout=3, reap_wait=1)
    assert res.timeout and res.rc == 124, res
    assert "cannot be reaped" in res.err and "state D" in res.err, res
    assert "dd" in g.stuck, g.stuck
    assert g.check("echo still-serving").strip() == "still-serving"
    assert list(r.health()) == ["g0"]

    # A command that only runs out of time reports the tasks then blocked.
    res = g.run("sleep 30", timeout=2)
    assert res.timeout and "tasks blocked in the kernel" in res.err, res
    assert re.search(r"task \d+ \(dd\) state D:\n", res.err), res

    # The hung-task detector's console line (the same dd, seen as hung within
    # seconds) brings the stacks of the blocked tasks and marks the guest.
    g.stuck = None
    g.mark_console()
    g.check("echo 2 > /proc/sys/kernel/hung_task_timeout_secs")
    lines = wait_for(lambda: [ln for ln in g.bad_console_lines() if " state D:" in ln],
                     timeout=30, what="hung task report with stacks")
    assert any(re.search(r"task \d+ \(dd\) state D:$", ln) for ln in lines), lines
    assert "hung" in g.stuck and list(r.health()) == ["g0"], g.stuck
