# SPDX-License-Identifier: GPL-2.0
"""Fixtures for the VM suites: one pair of booted guests for the whole session.

Every test gets its guests' consoles checked afterwards: a WARNING, BUG, Oops,
lockdep report, soft lockup or hung task printed while it ran fails it.
"""
import os
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "vm"))

import rig as rigmod  # noqa: E402

TOOLS = "/src/build/cmake/userspace/tools"


@pytest.fixture(scope="session")
def rig():
    # SROCE_TEST_INSTALL_TREE: run the suites against another build's install
    # tree (e.g. an older module, to show what a new test catches).
    r = rigmod.Rig(guests=2, outdir=os.path.join(REPO, "build", "vm", "test"),
                   install_tree=os.environ.get("SROCE_TEST_INSTALL_TREE") or None)
    if not r.install_tree:
        pytest.fail("no install tree: run 'make install-tree' (make vm-test does)")
    r.start()
    sys.stderr.write("\nrig: 2 guests of %s (%s) up in %.1f s\n" %
                     (r.kver, "kvm" if r.kvm else "tcg", r.boot_seconds))
    bad = r.bad_console_lines()
    yield r
    r.stop()
    bad += r.bad_console_lines()
    if bad:
        pytest.fail("bad guest console lines during boot or shutdown:\n" + "\n".join(bad))


@pytest.fixture(autouse=True)
def clean_consoles(request):
    """Fail the test if a guest console shows a kernel problem while it ran."""
    if "rig" not in request.fixturenames:
        yield
        return
    r = request.getfixturevalue("rig")
    r.mark_consoles()
    yield
    time.sleep(0.3)
    bad = r.bad_console_lines()
    r.mark_consoles()
    if bad:
        pytest.fail("guest console shows kernel problems:\n" + "\n".join(bad))


# ------------------------------------------------------------ guest helpers

def unload_all_rdma_links(g):
    """Remove every RDMA link and unload sroce and rdma_rxe, so a test starts clean."""
    g.run("for d in $(rdma -j link show 2>/dev/null | python3 -c "
          "'import json,sys; print(\" \".join(sorted({l[\"ifname\"] for l in json.load(sys.stdin)})))'); "
          "do rdma link del $d; done; "
          "modprobe -r sroce 2>/dev/null; modprobe -r rdma_rxe 2>/dev/null; true", timeout=120)
    left = g.run("lsmod | grep -E '^(sroce|rdma_rxe) '").out
    assert left == "", "modules still loaded: %s" % left


def add_link(g, name="sroce0", netdev="eth0", kind="sroce"):
    r = g.run("rdma link add %s type %s netdev %s" % (name, kind, netdev), timeout=60)
    assert r.ok, r
    return name


def sysfs(g, dev, path):
    return g.check("cat /sys/class/infiniband/%s/%s" % (dev, path)).strip()


def gid_index(g, dev, ipv6=False):
    """Index of the RoCE v2 GID for the guest's link address (IPv4-mapped or IPv6)."""
    want = g.ip6 if ipv6 else g.ip4
    # One read of the whole table; unused entries have no type (EINVAL, silenced).
    out = g.check("cd /sys/class/infiniband/%s/ports/1 && grep -H . gid_attrs/types/* "
                  "2>/dev/null | while IFS=: read -r f t; do i=${f##*/}; "
                  "echo $i $(cat gids/$i) $t; done" % dev)
    import ipaddress
    target = ipaddress.ip_address(want)
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) < 3 or "v2" not in parts[2]:
            continue
        addr = ipaddress.ip_address(parts[1])
        if ipv6 and addr == target:
            return int(parts[0])
        if not ipv6 and addr.ipv4_mapped == target:
            return int(parts[0])
    raise AssertionError("no RoCE v2 GID for %s on %s:\n%s" % (want, dev, out))


def wait_for(fn, timeout=20, interval=0.3, what="condition"):
    end = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


# ------------------------------------------------------------ client/server traffic

# ibverbs-utils pingpongs and perftest both exchange QP numbers over TCP on this
# port (their default) before any RDMA traffic flows.
EXCH_PORT = 18515


def listening(g, port=EXCH_PORT):
    """True if a process in guest g listens on TCP port (checked inside g, so the
    single-connection servers of pingpong and perftest never see a probe)."""
    return g.run("ss -Hltn 'sport = :%d'" % port, timeout=30).out.strip() != ""


def client_server(server, server_cmd, client, client_cmd, port=EXCH_PORT, timeout=180,
                  listen_timeout=60, is_listening=listening):
    """Spawn server_cmd in guest server, wait until it listens on port (as
    is_listening(guest, port) tells: a TCP listener by default), run
    client_cmd in guest client, then collect the server.

    Returns (server Result, client Result). If the port is already taken, or
    the server exits or never listens, the client is not run and its Result has rc -1 and says why. A
    server that outlives a failed client by 5 s (it may wait for a peer that
    is gone, forever) or a good one by timeout is killed (rc 124)."""
    # A listener left over from an earlier server would take the client instead.
    end = time.time() + 10
    while is_listening(server, port):
        if time.time() > end:
            return (rigmod.Result(server_cmd, -1, "", "port %d is busy before the server "
                                  "started" % port), rigmod.Result(client_cmd, -1, "", "not run"))
        time.sleep(0.5)
    srv = server.spawn(server_cmd)
    try:
        end = time.time() + listen_timeout
        while not is_listening(server, port):
            if srv.poll() is not None or time.time() > end:
                why = ("server exited before listening" if srv.result is not None
                       else "server did not listen on port %d in %d s" % (port, listen_timeout))
                return srv.wait(5), rigmod.Result(client_cmd, -1, "", why)
            time.sleep(0.3)
        cli = client.run(client_cmd, timeout=timeout)
        return srv.wait(timeout if cli.ok else 5), cli
    finally:
        if srv.result is None:
            srv.kill()
            srv.wait(10)


def active_mtu(g, dev):
    """Port 1's active MTU in bytes, as ibv_devinfo reports it."""
    import re
    m = re.search(r"active_mtu:\s*(\d+)", g.check("ibv_devinfo -d %s -i 1" % dev))
    assert m, "no active_mtu for %s" % dev
    return int(m.group(1))


def pytest_collection_modifyitems(session, config, items):
    """test_packages.py first: it boots rigs of its own (the packaged module and
    provider), which must be down before the session rig boots."""
    vm = os.path.dirname(os.path.abspath(__file__))

    def key(it):
        if os.path.dirname(str(it.fspath)) != vm:
            return 0  # tests/build and others keep their place, ahead of tests/vm
        return 1 if it.module.__name__ == "test_packages" else 2
    items.sort(key=key)
