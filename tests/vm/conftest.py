# SPDX-License-Identifier: GPL-2.0
"""Fixtures for the VM suites: one pair of booted guests for the whole session.

Every test gets its guests' consoles checked afterwards: a WARNING, BUG, Oops,
lockdep report, soft lockup or hung task printed while it ran fails it. The
helpers the suites share (devices, GIDs, client/server runs) are in
guestrdma.py; the device-kind pairs in pairs.py.

A guest that stops answering or keeps a command it could not kill (a task
stuck in the kernel) fails the test during which that was seen, and the rig is
rebooted (its output kept as build/vm/test.dead-N) so that one hang costs one
test, not the rest of the run. After MAX_RESTARTS reboots the run stops.
"""
import fnmatch
import os
import sys
import warnings

import pytest

from guestrdma import REPO, rigmod

MAX_RESTARTS = 3
RESTART_REPORTS = []  # printed again at the very end of the run (the part CI logs keep)
FAILURE_SNAPSHOTS = []  # (test, what the guests showed when it failed), likewise
# A VM test (its fixtures included) that runs longer than this is failed by
# pytest-timeout: the slowest take about a minute under TCG.
TEST_TIMEOUT = 600

# SROCE_TEST_SUBSET=1 (make test on the kernels other than the default one):
# device lifecycle, pingpongs and perftest, the verbs breadth tool (resize,
# rereg, parent domains, ATOMIC WRITE), rdma_cm, NVMe-oF I/O and target
# removal, teardown and namespaces, VLAN priorities of data and CNPs,
# sroce<->sroce (the default kernel's run covers interop with rdma_rxe and the
# rest). Not rdma-core's pyverbs suite (a minute: its breadth is the module's
# own logic, which the default kernel's run checks; the kernel-facing calls it
# makes are the ones the tools above make too), nor teardown under traffic by
# rmmod (link-del under traffic, then the rmmod tests of test_device), nor the
# ECN/CNP exchange (sroce's own header and counter code; the VLAN test sends
# CNPs through the kernel's egress path) or NVMe-oF reconnects (what sroce
# sees of them, QPs destroyed and made again under rdma_cm, the target removal
# test does too). Patterns on the test's node ID (fnmatch).
SUBSET = os.environ.get("SROCE_TEST_SUBSET") == "1"
SUBSET_TESTS = [
    "test_rig.py::test_guests_share_one_link",
    "test_rig.py::test_install_tree_is_in_guests",
    # device lifecycle, without the repetitions and variants of the full run
    "test_device.py::test_link_add_autoloads_module_and_binds_netdev",
    "test_device.py::test_icrc_implementation_chosen_at_load_is_the_faster",
    "test_device.py::test_port_attributes_and_gid_table",
    "test_device.py::test_ibv_devinfo_shows_active_ethernet_port",
    "test_device.py::test_port_rate_follows_the_netdev_speed",
    "test_device.py::test_implemented_verbs_work_and_the_rest_fail_cleanly",
    "test_device.py::test_port_state_follows_netdev_up_down_and_carrier",
    "test_device.py::test_eth0_down_up",
    "test_device.py::test_active_mtu_follows_netdev_mtu[[]9000-*]",
    "test_net.py::test_fragmented_packets_are_validated_in_place[[]ipv4]",
    "test_device.py::test_netdev_unregister_removes_device",
    "test_device.py::test_rmmod_with_devices_present",
    "test_device.py::test_link_del_with_open_user_context",
    "test_device.py::test_rmmod_with_open_user_context",
    "test_device.py::test_teardown_races",
    "test_verbs.py::test_pingpong[[]sroce-sroce-*-ipv4]",
    "test_verbs.py::test_pingpong[[]sroce-sroce-rc-4096-ipv6]",
    "test_verbs.py::test_perftest[[]sroce-sroce-*_bw]",
    "test_verbs.py::test_perftest[[]sroce-sroce-*_lat]",
    "test_objects.py::test_verbs_breadth",
    "test_rdmacm.py::test_rping[[]sroce-sroce-ipv4-4096]",
    "test_rdmacm.py::test_rping[[]sroce-sroce-ipv6-4096]",
    "test_rdmacm.py::test_ucmatose[[]sroce-sroce-*]",
    "test_rdmacm.py::test_perftest_rdma_cm[[]sroce-sroce-write_bw]",
    "test_rdmacm.py::test_smc_r[[]sroce-sroce]",
    "test_storage.py::TestNvmeRdma::test_io[[]sroce-sroce]",
    "test_storage.py::TestNvmeRdma::test_target_link_del_under_io[[]sroce-sroce]",
    # rmmod and netdev-down run on the default kernel only
    "test_teardown.py::test_teardown_under_traffic[[]link-del]",
    "test_teardown.py::test_teardown_with_packets_stuck_in_transmit_queue",
    "test_netns.py::test_devices_and_sockets_live_in_their_namespace",
    "test_netns.py::test_rc_pingpong_between_namespaces[[]ipv4]",
    "test_netns.py::test_perftest_between_namespaces[[]write_bw]",
    "test_netns.py::test_rping_between_namespaces",
    "test_netns.py::test_delete_namespace_under_traffic",
    "test_congestion.py::test_vlan_pcp_follows_sl_and_cnp_prio",
]


def in_subset(item):
    nodeid = item.nodeid.split("tests/vm/", 1)[-1]
    return any(fnmatch.fnmatchcase(nodeid, pat) for pat in SUBSET_TESTS)


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
    bad = r.console_problems()
    yield r
    r.stop()
    bad += r.bad_console_lines()
    show_foreign(r)
    if bad:
        pytest.fail("bad guest console lines during boot or shutdown:\n" + "\n".join(bad))


def restart_if_unhealthy(r, when):
    """Reboot the rig if a guest cannot be trusted any more: return a report of
    why (with the console tail of each such guest), or None if all are fine."""
    bad = r.health()
    if not bad:
        return None
    lines = ["%s %s: %s" % (name, when, why) for name, why in bad.items()]
    for g in r.guests:
        if g.name in bad:
            tail = g.console_text()[-4000:]
            lines.append("--- %s console tail ---\n%s" % (g.name, tail))
    if r.restarts >= MAX_RESTARTS:
        RESTART_REPORTS.append("\n".join(lines))
        pytest.exit("rig: guests broke %d times; giving up:\n%s" %
                    (r.restarts + 1, "\n".join(lines)), returncode=1)
    kept = r.restart()
    lines.append("rig rebooted (%d of at most %d); the broken guests' output is in %s" %
                 (r.restarts, MAX_RESTARTS, kept))
    msg = "\n".join(lines)
    sys.stderr.write("\n" + msg + "\n")
    RESTART_REPORTS.append(msg)
    return msg


@pytest.fixture(scope="module", autouse=True)
def healthy_rig_for_module(request):
    """Before a module's own fixtures use the rig: reboot it if it is broken."""
    if "rig" in request.fixturenames:
        r = request.getfixturevalue("rig")
        restart_if_unhealthy(r, "before module %s" % request.module.__name__)
    yield


@pytest.fixture(autouse=True)
def clean_consoles(request):
    """Fail the test if a guest console shows a kernel problem while it ran: what
    the kernel logged up to the test's end, proven by a marker that each guest
    logs and that must have reached its console file (Rig.console_problems)."""
    if "rig" not in request.fixturenames:
        yield
        return
    r = request.getfixturevalue("rig")
    broken = restart_if_unhealthy(r, "before this test (broken between tests)")
    if broken:
        pytest.fail(broken)
    # What reached the consoles since the last check (module fixtures set up or
    # taken down in between) is judged too, before this test starts.
    bad = r.bad_console_lines()
    r.mark_consoles()
    show_foreign(r)
    if bad:
        pytest.fail("guest console shows kernel problems from before this test (fixtures "
                    "between tests):\n" + "\n".join(bad))
    yield
    broken = restart_if_unhealthy(r, "during this test")
    if broken:
        pytest.fail(broken)
    bad = r.console_problems()
    show_foreign(r)
    if bad:
        pytest.fail("guest console shows kernel problems:\n" + "\n".join(bad))


def show_foreign(r):
    """The reports the console check let pass (vm/rig.py FOREIGN_REPORT: made
    by a kernel that had no sroce loaded) become warnings of the running test,
    in pytest's summary and on stderr, so that none goes unseen."""
    for report in r.take_foreign():
        msg = ("guest kernel report outside sroce (passes: vm/rig.py FOREIGN_REPORT):\n" +
               "\n".join(report))
        sys.stderr.write(msg + "\n")
        warnings.warn(msg)


# What each guest shows right after a test fails: its load, the RDMA counters
# that are not zero (sroce's drop and retry counters, rdma_rxe's), ib_cm's
# message counters that are not zero (when ib_cm is loaded), where the RC and UC
# QPs that still exist stand (kernel consumers' connections outlive the test's
# call; sroce's transport state, without its congestion attributes), and its
# last kernel messages. In the test's report and again at the end of the run, so
# a failure that does not come back when run alone leaves evidence.
SNAPSHOT = ("cat /proc/loadavg; rdma statistic show 2>/dev/null | awk '{ printf \"%s %s\", $1, $2; "
            "for (i = 3; i < NF; i += 2) if ($(i + 1) != 0) printf \" %s=%s\", $i, $(i + 1); "
            "print \"\" }'; grep -rH . /sys/class/infiniband/*/ports/1/cm_* 2>/dev/null | "
            "grep -v ':0$' | sed 's|^/sys/class/infiniband/||; s|/ports/1/| |' | tr '\\n' ' '; "
            "echo; rdma res show qp -dd 2>/dev/null | grep -E ' type (RC|UC) ' | "
            "sed 's/ drv_tx_bytes .*//; s/ path-mig-state MIGRATED//' | head -n 8; "
            "dmesg | tail -n 12")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    r = getattr(item, "funcargs", {}).get("rig")
    if rep.when != "call" or not rep.failed or r is None:
        return
    parts = []
    for g in r.guests:
        why = g.health(timeout=10)
        if why:
            parts.append("--- %s: %s" % (g.name, why))
            continue
        try:
            parts.append("--- %s\n%s" % (g.name, g.run(SNAPSHOT, timeout=30).out.rstrip()))
        except Exception as e:  # a guest that broke just now: the health checks say so
            parts.append("--- %s: %s" % (g.name, e))
    text = "\n".join(parts)
    rep.sections.append(("guests when the test failed", text))
    FAILURE_SNAPSHOTS.append((item.nodeid, text))


def pytest_collection_modifyitems(session, config, items):
    """test_packages.py first: it boots rigs of its own (the packaged module and
    provider), which must be down before the session rig boots."""
    vm = os.path.dirname(os.path.abspath(__file__))

    def key(it):
        if os.path.dirname(str(it.fspath)) != vm:
            return 0  # tests/build and others keep their place, ahead of tests/vm
        return 1 if it.module.__name__ == "test_packages" else 2
    items.sort(key=key)
    if SUBSET:
        keep = [it for it in items if os.path.dirname(str(it.fspath)) == vm and in_subset(it)]
        gone = [it for it in items if it not in keep]
        if gone:
            config.hook.pytest_deselected(items=gone)
        items[:] = keep
    if config.pluginmanager.hasplugin("timeout"):
        for it in items:
            if os.path.dirname(str(it.fspath)) == vm and not it.get_closest_marker("timeout"):
                it.add_marker(pytest.mark.timeout(TEST_TIMEOUT, method="signal"))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    for nodeid, text in FAILURE_SNAPSHOTS[-5:]:
        terminalreporter.section("guests when %s failed" % nodeid, sep="!")
        terminalreporter.line(text[-4000:])
    for i, msg in enumerate(RESTART_REPORTS):
        terminalreporter.section("rig: broken guests, report %d of %d" %
                                 (i + 1, len(RESTART_REPORTS)), sep="!")
        terminalreporter.line(msg)
    for i, msg in enumerate(rigmod.BOOT_REPORTS):
        terminalreporter.section("rig: boots tried again, report %d of %d" %
                                 (i + 1, len(rigmod.BOOT_REPORTS)), sep="!")
        terminalreporter.line(msg)
