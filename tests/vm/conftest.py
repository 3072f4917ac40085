# SPDX-License-Identifier: GPL-2.0
"""Fixtures for the VM suites: one pair of booted guests for the whole session.

Every test gets its guests' consoles checked afterwards: a WARNING, BUG, Oops,
lockdep report, soft lockup or hung task printed while it ran fails it. The
helpers the suites share (devices, GIDs, client/server runs) are in
guestrdma.py; the device-kind pairs in pairs.py.
"""
import os
import sys

import pytest

from guestrdma import REPO, rigmod


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
    if bad:
        pytest.fail("bad guest console lines during boot or shutdown:\n" + "\n".join(bad))


@pytest.fixture(autouse=True)
def clean_consoles(request):
    """Fail the test if a guest console shows a kernel problem while it ran: what
    the kernel logged up to the test's end, proven by a marker that each guest
    logs and that must have reached its console file (Rig.console_problems)."""
    if "rig" not in request.fixturenames:
        yield
        return
    r = request.getfixturevalue("rig")
    # What reached the consoles since the last check (module fixtures set up or
    # taken down in between) is judged too, before this test starts.
    bad = r.bad_console_lines()
    r.mark_consoles()
    if bad:
        pytest.fail("guest console shows kernel problems from before this test (fixtures "
                    "between tests):\n" + "\n".join(bad))
    yield
    bad = r.console_problems()
    if bad:
        pytest.fail("guest console shows kernel problems:\n" + "\n".join(bad))


def pytest_collection_modifyitems(session, config, items):
    """test_packages.py first: it boots rigs of its own (the packaged module and
    provider), which must be down before the session rig boots."""
    vm = os.path.dirname(os.path.abspath(__file__))

    def key(it):
        if os.path.dirname(str(it.fspath)) != vm:
            return 0  # tests/build and others keep their place, ahead of tests/vm
        return 1 if it.module.__name__ == "test_packages" else 2
    items.sort(key=key)
