# SPDX-License-Identifier: GPL-2.0
"""The rig's boot-time connect to a guest's agent survives QEMU dropping the
first connection (host only: a fake agent on a unix socket stands in for
QEMU's chardev)."""
import json
import os
import socket
import sys
import tempfile
import threading

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "vm"))
import rig  # noqa: E402


class FakeQemu:
    def poll(self):
        return None


class FakeRig:
    kvm = False
    outdir = tempfile.gettempdir()


def agent(path, drops):
    """Listen on path; reset the first `drops` connections once a request has
    arrived unread (what a peer closing with unread data does), then answer
    every request of the next one as the guest agent would."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    seen = []

    def serve():
        for n in range(drops + 1):
            c, _ = srv.accept()
            seen.append(n)
            if n < drops:
                c.recv(1, socket.MSG_PEEK)
                c.close()
                continue
            buf = b""
            while True:
                data = c.recv(4096)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    req = json.loads(line)
                    c.sendall((json.dumps({"id": req["id"], "rc": 0, "out": "", "err": ""})
                               + "\n").encode())
            c.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return seen


def guest(path):
    g = rig.Guest(FakeRig(), 0)
    g.console = os.devnull
    g.agent_path, g.qemu = path, FakeQemu()
    return g


@pytest.mark.parametrize("drops", [0, 1, 2])
def test_connect_retries_after_the_agent_connection_is_reset(drops):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "agent.sock")
        seen = agent(path, drops)
        g = guest(path)
        g.connect(20)
        assert seen == list(range(drops + 1))
        assert g.run("true").ok
        assert g.wedged is None
        g.sock.close()


class DyingQemu:
    """A QEMU that has exited by the time its agent connection is found dropped."""
    returncode = 0

    def __init__(self):
        self.calls = 0

    def poll(self):
        self.calls += 1
        return None if self.calls == 1 else 0


def test_a_qemu_that_exits_during_boot_is_reported_as_such():
    """What Rig.start boots once more: the agent connection dropped because
    QEMU exited (a guest panicking during boot, with -no-reboot)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "agent.sock")
        agent(path, 1)
        g = guest(path)
        g.qemu = DyingQemu()
        with pytest.raises(rig.RigError, match="qemu exited"):
            g.connect(20)
        assert g.exited_during_boot
