# SPDX-License-Identifier: GPL-2.0
"""How the rig reads a guest console (host only, no guest): a kernel report
fails a test whole, with its message and call trace; the one report that passes
(vm/rig.py FOREIGN_REPORT) is the workqueue's flush-order check from a kernel
that had no sroce loaded, and only when its module list proves that."""
import os
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "vm"))
import rig  # noqa: E402


def flush_report(modules="rdma_rxe ib_iser libiscsi ib_core", frame="iser_route_handler [ib_iser]",
                 head="at kernel/workqueue.c:3767 check_flush_dependency.part.0+0x106/0x130"):
    return [
        "[ 1440.26] workqueue: WQ_MEM_RECLAIM rdma_cm:cma_work_handler [rdma_cm] is flushing "
        "!WQ_MEM_RECLAIM events:some_work_fn",
        "[ 1440.26] WARNING: CPU: 0 PID: 2084 " + head,
        "[ 1440.27] Modules linked in: " + modules,
        "[ 1440.27] CPU: 0 UID: 0 PID: 2084 Comm: kworker/u8:3 Not tainted 6.12.118+deb12-amd64",
        "[ 1440.27] Workqueue: rdma_cm cma_work_handler [rdma_cm]",
        "[ 1440.27] RIP: 0010:check_flush_dependency.part.0+0x106/0x130",
        "[ 1440.27] Call Trace:",
        "[ 1440.27]  <TASK>",
        "[ 1440.27]  __flush_work+0x1a0/0x2e0",
        "[ 1440.27]  " + frame,
        "[ 1440.27]  </TASK>",
        "[ 1440.27] ---[ end trace 0000000000000000 ]---",
    ]


def scan(lines):
    """Guest.bad_console_lines over a console file holding lines: (bad, passed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        g = rig.Guest.__new__(rig.Guest)
        g.console, g.console_mark, g.stuck, g.foreign = f.name, 0, None, []
        return g.bad_console_lines(), g.foreign
    finally:
        os.unlink(f.name)


def test_a_report_is_shown_whole_and_apart_from_other_lines():
    lines = (["[ 1439.00] eth0: link up"] + flush_report(modules="sroce ib_core") +
             ["[ 1441.00] after", "[ 1442.00] rig-selftest: WARNING: injected"])
    groups = rig.console_reports(lines)
    assert len(groups) == 2, groups
    report = groups[0]
    assert report[0] == "| " + lines[1], report                 # the WARN's own message
    assert report[1] == lines[2] and report[-1] == "| " + lines[-3], report
    assert lines[7] in report                                    # "Call Trace:" unindented
    assert "| " + lines[5] in report                             # the workqueue it ran on
    assert groups[1] == ["| [ 1441.00] after", "[ 1442.00] rig-selftest: WARNING: injected"]


@pytest.mark.parametrize("modules,frame,passes", [
    ("rdma_rxe ib_iser libiscsi ib_core", "iser_route_handler [ib_iser]", True),
    ("sroce ib_iser libiscsi ib_core", "iser_route_handler [ib_iser]", False),
    ("rdma_rxe ib_core", "sroce_destroy_qp+0x10/0x90 [sroce]", False),
])
def test_the_flush_order_check_passes_only_without_sroce(modules, frame, passes):
    bad, passed = scan(flush_report(modules=modules, frame=frame))
    if passes:
        assert bad == [] and len(passed) == 1 and passed[0][1].endswith(
            "check_flush_dependency.part.0+0x106/0x130"), (bad, passed)
    else:
        assert passed == [] and any("check_flush_dependency" in ln for ln in bad), (bad, passed)
        assert any("Modules linked in" in ln for ln in bad), bad


def test_any_other_report_fails_even_without_sroce():
    bad, passed = scan(flush_report(head="at net/core/dev.c:1234 netdev_wait_allrefs+0x1/0x2"))
    assert passed == [] and any("netdev_wait_allrefs" in ln for ln in bad), bad


def test_a_report_without_its_module_list_fails():
    report = [ln for ln in flush_report() if "Modules linked in" not in ln]
    bad, passed = scan(report)
    assert passed == [] and any("check_flush_dependency" in ln for ln in bad), bad
