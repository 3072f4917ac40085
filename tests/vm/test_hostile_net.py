# SPDX-License-Identifier: GPL-2.0
"""A hostile network and a hostile peer against live QPs (issue "Harden the transport").

sroce0 lives in guest 0 on eth0. Each test starts sroce-victim there: one RC or
UC QP "connected" to guest 1's address and a QPN nobody owns (guest 1 runs no
RDMA device unless a test says so), with a 64 KiB MR between two unregistered
guard areas, every byte patterned. Guest 1 then plays the network (spoofed or
second source addresses: NET cases) or the peer itself (PEER cases) with
sroce-pktgen's transport modes, which know the victim's QPN, PSNs, rkey and
va. Afterwards the victim's own "check" says which bytes changed, the port's
hw_counters say where the packets went, and the guest console must be clean
(conftest). Every wait is bounded: a hang fails a test, it never stalls it.

The transport drop counters (rx_drop_peer, rx_drop_pkey, rx_drop_psn,
rx_drop_ud_len, rx_drop_mtu, rx_drop_uc) are read with a default of 0, so on
a kernel without them the tests fail on the behaviour they check, not on a
missing file. The dereg tests (f, g) come last: on a kernel where dereg waits
for a message the peer never finishes, they unblock it by finishing the
message themselves.
"""
import json
import re
import time

import pytest

from guestrdma import (TOOLS, Capture, add_link, client_server, cm_listening, hw_counters,
                       unload_all_rdma_links, wait_for)

PKTGEN = TOOLS + "/sroce-pktgen"
VICTIM = TOOLS + "/sroce-victim"
RDMA_TEST = TOOLS + "/sroce-rdma-test"
SPOOF6 = "fd99::77"        # nobody's address on the rig's link
DEAD_QPN = 0x7777           # no QP of this number exists in guest 1
MTU = 1024                  # the victim's path MTU
CM_MODULES = ("rdma_ucm", "rdma_cm", "ib_cm", "iw_cm")
RPING_PORT = 7175


# ------------------------------------------------------------ helpers

def counters(g):
    return hw_counters(g)


def port_violations(g):
    """(bad_pkey_cntr, qkey_viol_cntr) of sroce0's port, as ibv_devinfo -v shows them."""
    out = g.check("ibv_devinfo -v -d sroce0 -i 1")
    return tuple(int(re.search(r"%s:\s*(0x[0-9a-f]+)" % name, out).group(1), 16)
                 for name in ("bad_pkey_cntr", "qkey_viol_cntr"))


def grew(before, after, name):
    """How much counter name grew (0 if the kernel does not have it)."""
    return after.get(name, 0) - before.get(name, 0)


class Checks:
    """Expectations collected so that one run shows every way a case fails."""

    def __init__(self, what):
        self.what, self.bad, self.notes = what, [], []

    def expect(self, ok, msg):
        if not ok:
            self.bad.append(msg)

    def note(self, msg):
        self.notes.append(msg)

    def done(self):
        print("%s:\n  %s" % (self.what, "\n  ".join(self.notes)))   # shown by pytest -rP
        if self.bad:
            pytest.fail("%s:\n  FAILED: %s\n  evidence:\n    %s" % (
                self.what, "\n  FAILED: ".join(self.bad), "\n    ".join(self.notes)))


class Victim:
    """sroce-victim in guest g, its output in a file (the agent only returns a
    background command's output once it has ended)."""

    def __init__(self, g, tag, qp_type, remote_ip, cmds, remote_qpn=DEAD_QPN, extra=""):
        self.g, self.tag = g, tag
        self.out = "/tmp/hv-%s.out" % tag
        g.run("rm -f /tmp/hv-%s*" % tag)
        cmd = "%s -d sroce0 --type %s --remote-ip %s --remote-qpn %d %s --cmd '%s' >%s 2>&1" % (
            VICTIM, qp_type, remote_ip, remote_qpn, extra, "; ".join(cmds), self.out)
        self.proc = g.spawn(cmd)
        self.info = wait_for(self._info, timeout=60, what="victim %s to start" % tag)
        for k in ("qpn", "rq_psn", "sq_psn", "rkey", "va", "len"):
            setattr(self, k, self.info[k])

    def _info(self):
        text = self.text()
        first = text.splitlines()[0] if text.strip() else ""
        if first.startswith("{"):
            return json.loads(first)
        if self.proc.poll() is not None:
            raise AssertionError("victim %s exited before it was ready: %s" % (self.tag, text))
        return None

    def text(self):
        return self.g.read_files([self.out], timeout=30)[0].get(self.out, "")

    def file(self, name):
        return "/tmp/hv-%s-%s" % (self.tag, name)

    def go(self, name="go"):
        self.g.check("touch %s" % self.file(name), timeout=30)

    def wait_file(self, name, timeout=30):
        wait_for(lambda: self.file(name) in self.g.read_files([self.file(name)], timeout=30)[0],
                 timeout=timeout, what="victim %s to reach %s" % (self.tag, name))

    def wait_line(self, pattern, timeout):
        """The victim's output once it contains pattern, or None after timeout s."""
        end = time.time() + timeout
        while time.time() < end:
            t = self.text()
            if re.search(pattern, t):
                return t
            time.sleep(0.5)
        return None

    def finish(self, timeout=30):
        """Wait for the victim to end (killed after timeout s); its whole output."""
        r = self.proc.wait(timeout)
        return self.text() + ("\n[victim killed after %d s]" % timeout if r.timeout else "")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def values(text, key):
    """Every value of key=N in text, in order."""
    return [int(v) for v in re.findall(r"\b%s=(-?\d+)" % re.escape(key), text)]


def states(text):
    return re.findall(r"qp_state=(\w+)", text)


def completions(text):
    return re.findall(r"wc status=(\w+) opcode=(\w+)", text)


def attack(g1, g0, mode, n=1, v=None, psn=None, src=None, extra="", interval=100, v6=False):
    """sroce-pktgen in guest 1 against guest 0, aimed at victim v's QP."""
    args = ["-i eth0 -d %s %s --dst-mac %s -m %s -n %d --interval-us %d" %
            (g0.ip6 if v6 else g0.ip4, "-6" if v6 else "", g0.mac, mode, n, interval)]
    if v is not None:
        args.append("--qpn %d --rkey %d --va %d" % (v.qpn, v.rkey, v.va))
    if psn is not None:
        args.append("--psn %d" % psn)
    if src:
        args.append("--src %s" % src)
    r = g1.run("%s %s %s" % (PKTGEN, " ".join(args), extra), timeout=120)
    assert r.ok, r
    m = re.search(r"mode=%s sent=(\d+)" % mode, r.out)
    assert m, r
    return int(m.group(1))


def settle(g, before=None, counter=None, n=0, seconds=1.0):
    """g's counters once the packets sent to it have been dealt with: once counter
    has grown by n since before (the test then judges by how much it grew; 10 s
    at most), or, with no counter to tell, after seconds."""
    if counter is None:
        time.sleep(seconds)
        return counters(g)
    end = time.time() + 10
    while True:
        c = counters(g)
        if grew(before, c, counter) >= n or time.time() > end:
            return c
        time.sleep(0.1)


def loopback_ok(g, checks):
    """Legitimate traffic still works: one loopback RC WRITE case in guest g."""
    r = g.run("timeout -s KILL 90 %s -d sroce0 --case rc_write --timeout 20 --budget 60" %
              RDMA_TEST, timeout=120)
    checks.note("loopback rc_write: rc=%d %s" % (r.rc, (r.out + r.err).strip()[-300:]))
    checks.expect(r.ok, "loopback sroce-rdma-test --case rc_write failed afterwards (rc=%d)" % r.rc)


# ------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def net(rig):
    """sroce0 in guest 0; guest 1 without RDMA, with a second IPv4 address."""
    g0, g1 = rig[0], rig[1]
    for g in (g0, g1):
        unload_all_rdma_links(g)
    add_link(g0)
    prefix = g1.ip4.rsplit(".", 1)[0]
    alt, spoof = prefix + ".102", prefix + ".77"
    g1.check("ip addr add %s/24 dev eth0" % alt)
    yield g0, g1, alt, spoof
    g1.run("ip addr del %s/24 dev eth0; true" % alt)
    for g in (g0, g1):
        g.run("modprobe -r %s 2>/dev/null; true" % " ".join(CM_MODULES), timeout=60)
        unload_all_rdma_links(g)


@pytest.fixture
def victims():
    """Victims a test started; any still running afterwards are killed."""
    started = []
    yield started
    for v in started:
        v.kill()


def start(victims, *args, **kw):
    v = Victim(*args, **kw)
    victims.append(v)
    return v


# ------------------------------------------------------------ NET: off-path attackers

def test_a_uc_write_from_non_peer_address(net, victims):
    """UC WRITE ONLY with the victim's real QPN, PSN and rkey, from guest 1's
    second address, a spoofed IPv4 one and a spoofed IPv6 one (the QP's peer is
    IPv4): nothing lands, rx_drop_peer counts all three."""
    g0, g1, alt, spoof = net
    c = Checks("UC WRITE ONLY from non-peer addresses")
    v = start(victims, g0, "a", "uc", g1.ip4, ["wait %s" % "/tmp/hv-a-go", "check", "state", "exit"])
    before = counters(g0)
    sent = attack(g1, g0, "uc_write", 1, v, v.rq_psn, src=alt, extra="--payload-len 256")
    sent += attack(g1, g0, "uc_write", 1, v, v.rq_psn + 1, src=spoof, extra="--payload-len 256")
    sent += attack(g1, g0, "uc_write", 1, v, v.rq_psn + 2, src=SPOOF6, v6=True,
                   extra="--payload-len 256 --va %d" % (v.va + 4096))   # its own bytes
    after = settle(g0, before, "rx_drop_peer", sent)
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(values(out, "mr_changed") == [0], "victim MR written: %s" % values(out, "mr_changed"))
    c.expect(values(out, "guard_changed") == [0], "guard written: %s" % values(out, "guard_changed"))
    c.expect(grew(before, after, "rx_drop_peer") == sent,
             "rx_drop_peer grew by %d, not %d" % (grew(before, after, "rx_drop_peer"), sent))
    c.done()


def test_b_rc_write_from_non_peer_address(net, victims):
    """RC WRITE ONLY with the victim's real QPN/PSN/rkey from non-peer addresses:
    MR unchanged, rx_drop_peer counts them, the QP stays in RTS."""
    g0, g1, alt, spoof = net
    c = Checks("RC WRITE ONLY from non-peer addresses")
    v = start(victims, g0, "b", "rc", g1.ip4, ["wait /tmp/hv-b-go", "check", "state", "exit"])
    before = counters(g0)
    sent = attack(g1, g0, "rc_write_only", 1, v, v.rq_psn, src=alt, extra="--payload-len 256")
    sent += attack(g1, g0, "rc_write_only", 1, v, v.rq_psn + 1, src=spoof,
                   extra="--payload-len 256")
    after = settle(g0, before, "rx_drop_peer", sent)
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(values(out, "mr_changed") == [0], "victim MR written: %s" % values(out, "mr_changed"))
    c.expect(values(out, "guard_changed") == [0], "guard written")
    c.expect(states(out) == ["RTS"], "QP state %s, not RTS" % states(out))
    c.expect(grew(before, after, "rx_drop_peer") == sent,
             "rx_drop_peer grew by %d, not %d" % (grew(before, after, "rx_drop_peer"), sent))
    c.done()


def test_c_wrong_pkey_from_peer(net, victims):
    """RC WRITE ONLY from the peer's address with BTH P_Key 0x1234, marked CE:
    dropped, rx_drop_pkey counts it (and the port's bad_pkey_cntr), MR unchanged, and no CNP answers it (the
    CE mark arrived: np_ecn_marked_roce_packets counts it)."""
    g0, g1, _, _ = net
    c = Checks("wrong BTH P_Key")
    v = start(victims, g0, "c", "rc", g1.ip4, ["wait /tmp/hv-c-go", "check", "state", "exit"])
    before, viol = counters(g0), port_violations(g0)
    sent = attack(g1, g0, "rc_write_only", 2, v, v.rq_psn,
                  extra="--pkey 0x1234 --payload-len 128 --ecn 3")
    after = settle(g0, before, "rx_drop_pkey", sent)
    bad_pkey = port_violations(g0)[0] - viol[0]
    c.expect(bad_pkey == sent, "the port's bad_pkey_cntr grew by %d, not %d" % (bad_pkey, sent))
    c.expect(grew(before, after, "np_ecn_marked_roce_packets") == sent,
             "np_ecn_marked_roce_packets grew by %d, not %d"
             % (grew(before, after, "np_ecn_marked_roce_packets"), sent))
    c.expect(grew(before, after, "np_cnp_sent") == 0,
             "np_cnp_sent grew by %d" % grew(before, after, "np_cnp_sent"))
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(values(out, "mr_changed") == [0], "victim MR written: %s" % values(out, "mr_changed"))
    c.expect(grew(before, after, "rx_drop_pkey") == sent,
             "rx_drop_pkey grew by %d, not %d" % (grew(before, after, "rx_drop_pkey"), sent))
    c.done()


# victim of the ACK/NAK cases: 4 SENDs to a peer that never answers; 1 s ACK
# timeout x 8 tries, so nothing completes by itself within the test's window
SENDER = ["send 4", "touch /tmp/hv-%s-sent", "wait /tmp/hv-%s-go"]


def sender(victims, g0, g1, tag, tail, extra="--timeout 18 --retry 7"):
    cmds = [c % tag if "%s" in c else c for c in SENDER] + tail
    v = start(victims, g0, tag, "rc", g1.ip4, cmds, extra=extra)
    v.wait_file("sent")
    return v


def attacked_sender(net, victims, tag, tail, mode, psn_offset, counter, src=None):
    """A sender() victim, hit by one packet of mode for PSN sq_psn + psn_offset (from
    src): (the victim's output, packets sent, how much counter grew)."""
    g0, g1 = net[:2]
    v = sender(victims, g0, g1, tag, tail)
    before = counters(g0)
    sent = attack(g1, g0, mode, 1, v, v.sq_psn + psn_offset, src=src)
    after = settle(g0, before, counter, sent)
    v.go()
    out = v.finish()
    return out, sent, grew(before, after, counter)


def test_d1_spoofed_ack_from_non_peer(net, victims):
    """An ACK for the victim's outstanding SENDs from a non-peer address must
    not complete them; rx_drop_peer counts it."""
    c = Checks("spoofed ACK from a non-peer address")
    out, sent, dropped = attacked_sender(net, victims, "d1", ["poll 2000", "state", "exit"],
                                         "ack", 3, "rx_drop_peer", src=net[2])
    c.note(out.strip())
    ok = [w for w in completions(out) if w[0] == "IBV_WC_SUCCESS"]
    c.expect(not ok, "%d SENDs completed successfully on a spoofed ACK" % len(ok))
    c.expect(dropped == sent, "rx_drop_peer grew by %d, not %d" % (dropped, sent))
    c.done()


def test_d2_spoofed_nak_from_non_peer(net, victims):
    """A remote-access NAK from a non-peer address must not move the QP to ERR."""
    c = Checks("spoofed NAK from a non-peer address")
    out, sent, dropped = attacked_sender(net, victims, "d2",
                                         ["sleep 300", "state", "poll 300", "exit"],
                                         "nak_access", 0, "rx_drop_peer", src=net[2])
    c.note(out.strip())
    c.expect(states(out) == ["RTS"], "QP state after the spoofed NAK: %s, not RTS" % states(out))
    bad = [w for w in completions(out) if w[0] == "IBV_WC_REM_ACCESS_ERR"]
    c.expect(not bad, "a SEND failed with REM_ACCESS_ERR on the spoofed NAK")
    c.expect(dropped == sent, "rx_drop_peer grew by %d, not %d" % (dropped, sent))
    c.done()


def test_d3_ack_beyond_sent_psn_from_peer(net, victims):
    """An ACK from the peer's own address for a PSN never sent (sq_psn + 1000)
    completes nothing; rx_drop_psn counts it."""
    c = Checks("ACK for a PSN beyond anything sent")
    out, sent, dropped = attacked_sender(net, victims, "d3", ["poll 2000", "state", "exit"],
                                         "ack", 1000, "rx_drop_psn")
    c.note(out.strip())
    ok = [w for w in completions(out) if w[0] == "IBV_WC_SUCCESS"]
    c.expect(not ok, "%d SENDs completed successfully on an ACK beyond the sent PSNs" % len(ok))
    c.expect(dropped >= sent, "rx_drop_psn grew by %d, not %d" % (dropped, sent))
    c.done()


def test_d4_nak_with_progress_renews_the_retry_budget(net, victims):
    """The peer's sequence NAKs, with retry_cnt 1: a NAK that acknowledges nothing
    new uses up the one retry; one that acknowledges the first SEND is progress
    and renews it, so a third NAK that acknowledges nothing new is retried, not
    fatal. Then the first SEND has completed and nothing has failed (the ACK
    timeout, 4.3 s, doubling, has not run out)."""
    g0, g1 = net[:2]
    c = Checks("sequence NAKs with and without progress")
    v = sender(victims, g0, g1, "d4", ["poll 300", "state", "exit"],
               extra="--timeout 20 --retry 1")
    before = counters(g0)
    for k, offset in enumerate((0, 1, 1)):
        attack(g1, g0, "nak_seq", 1, v, v.sq_psn + offset)
        settle(g0, before, "seq_nak_rcvd", k + 1)
    v.go()
    out = v.finish()
    c.note(out.strip())
    wcs = completions(out)
    c.expect(wcs == [("IBV_WC_SUCCESS", "SEND")],
             "completions %s, want the first SEND's success alone" % wcs)
    c.expect(states(out) == ["RTS"], "QP state %s, not RTS" % states(out))
    c.done()


def test_d5_reserved_nak_code_is_a_remote_operation_error(net, victims):
    """The peer's NAK with a reserved code (syndrome 0x65: NAK, code 5) for
    the first SEND: it completes with IBV_WC_REM_OP_ERR, as rdma_rxe and
    hardware report an unknown NAK, not with the Reliable Datagram status
    REM_INV_RD_REQ_ERR; the rest are flushed and the QP is in ERR."""
    g0, g1 = net[:2]
    c = Checks("a NAK with a reserved code")
    v = sender(victims, g0, g1, "d5", ["poll 2000", "state", "exit"])
    attack(g1, g0, "ack", 1, v, v.sq_psn, extra="--syndrome %d" % 0x65)
    v.go()
    out = v.finish()
    c.note(out.strip())
    wcs = completions(out)
    c.expect(wcs[:1] == [("IBV_WC_REM_OP_ERR", "SEND")],
             "first completion %s, want IBV_WC_REM_OP_ERR" % wcs[:1])
    c.expect(states(out) == ["ERR"], "QP state %s, not ERR" % states(out))
    c.done()


# ------------------------------------------------------------ PEER: a hostile peer

def test_h_uc_bad_rkey_then_valid_write(net, victims):
    """UC WRITE ONLY with a bad rkey from the peer: the UC QP stays in RTS,
    rx_drop_uc counts it, and the next valid UC WRITE (next PSN) lands."""
    g0, g1, _, _ = net
    c = Checks("UC WRITE with a bad rkey, then a valid one")
    v = start(victims, g0, "h", "uc", g1.ip4,
              ["wait /tmp/hv-h-go", "state", "check", "touch /tmp/hv-h-checked",
               "wait /tmp/hv-h-go2", "check", "state", "exit"])
    before = counters(g0)
    sent = attack(g1, g0, "uc_write", 1, v, v.rq_psn,
                  extra="--rkey %d --payload-len 256" % (v.rkey ^ 0x5a5a00))
    after = settle(g0, before, "rx_drop_uc", sent)
    v.go()
    v.wait_file("checked")
    attack(g1, g0, "uc_write", 1, v, v.rq_psn + 1, extra="--payload-len 256")
    time.sleep(1)
    v.go("go2")
    out = v.finish()
    c.note(out.strip())
    c.expect(states(out)[:1] == ["RTS"], "UC QP state after a bad rkey: %s" % states(out)[:1])
    c.expect(values(out, "mr_changed")[:1] == [0], "MR written by a bad-rkey WRITE")
    landed = values(out, "mr_pattern_bytes")[1:2]
    c.expect(landed and landed[0] > 0, "the valid UC WRITE after the bad one did not land (%s)"
             % landed)
    c.expect(grew(before, after, "rx_drop_uc") == sent,
             "rx_drop_uc grew by %d, not %d" % (grew(before, after, "rx_drop_uc"), sent))
    c.done()


def test_t_uc_send_without_a_receive_is_lost_and_counted(net, victims):
    """UC SEND ONLY from the peer to a UC QP with no receive WQE posted: lost, as
    UC has no RNR NAK; rx_drop_no_recv counts each, nothing completes, no NAK
    goes back, and the QP stays in RTS."""
    g0, g1, _, _ = net
    c = Checks("UC SEND without a receive")
    v = start(victims, g0, "t", "uc", g1.ip4, ["wait /tmp/hv-t-go", "poll 300", "state", "exit"],
              extra="--recvs 0")
    before = counters(g0)
    sent = attack(g1, g0, "uc_send_only", 3, v, v.rq_psn, extra="--payload-len 64")
    after = settle(g0, before, "rx_drop_no_recv", sent)
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(grew(before, after, "rx_drop_no_recv") == sent,
             "rx_drop_no_recv grew by %d, not %d" % (grew(before, after, "rx_drop_no_recv"), sent))
    for name in ("rx_drop_uc", "rx_stale", "tx_packets"):
        c.expect(grew(before, after, name) == 0, "%s grew by %d" % (name, grew(before, after, name)))
    c.expect("wc status=" not in out, "a completion for a lost message: %s" % out)
    c.expect(states(out) == ["RTS"], "UC QP state: %s" % states(out))
    c.done()


def test_u_packets_off_the_expected_psn_are_counted(net, victims):
    """RC: three SEND ONLY packets from the peer two PSNs ahead of the expected
    one are dropped: out_of_sequence counts all three, seq_nak_sent one (the
    first of the gap), nothing completes and the QP stays in RTS. UC: a SEND
    LAST at the expected PSN without its FIRST is dropped (rx_drop_uc); a SEND
    LAST behind a gap too (out_of_sequence) and the one right after it, part of
    the same lost message, is skipped without being counted again; then a SEND
    ONLY behind another gap starts a message: out_of_sequence counts it, and it
    is received (one completion of its 64 bytes)."""
    g0, g1, _, _ = net
    c = Checks("packets off the expected PSN")
    rc = start(victims, g0, "u1", "rc", g1.ip4, ["wait /tmp/hv-u1-go", "poll 300", "state",
                                                 "exit"])
    uc = start(victims, g0, "u2", "uc", g1.ip4, ["wait /tmp/hv-u2-go", "poll 300", "state",
                                                 "exit"], extra="--recvs 1")
    before = counters(g0)
    sent = attack(g1, g0, "rc_send_only", 3, rc, rc.rq_psn + 2, extra="--payload-len 64")
    mid = settle(g0, before, "out_of_sequence", sent)
    rc.go()
    out_rc = rc.finish()
    c.note("RC: " + out_rc.strip())
    c.expect(grew(before, mid, "out_of_sequence") == sent,
             "RC: out_of_sequence grew by %d, not %d" % (grew(before, mid, "out_of_sequence"),
                                                         sent))
    c.expect(grew(before, mid, "seq_nak_sent") == 1,
             "RC: seq_nak_sent grew by %d, not 1" % grew(before, mid, "seq_nak_sent"))
    c.expect("wc status=" not in out_rc, "RC: a completion for a dropped SEND: %s" % out_rc)
    c.expect(states(out_rc) == ["RTS"], "RC QP state: %s" % states(out_rc))

    alone = attack(g1, g0, "uc_send_last", 1, uc, uc.rq_psn, extra="--payload-len 64")
    mid2 = settle(g0, mid, "rx_drop_uc", alone)
    gap = attack(g1, g0, "uc_send_last", 2, uc, uc.rq_psn + 5, extra="--payload-len 64")
    settle(g0, mid2, "out_of_sequence", 1)
    time.sleep(0.5)  # the second of them is skipped: no counter to wait for
    mid3 = counters(g0)
    good = attack(g1, g0, "uc_send_only", 1, uc, uc.rq_psn + 9, extra="--payload-len 64")
    after = settle(g0, mid3, "out_of_sequence", good)
    uc.go()
    out_uc = uc.finish()
    # The QP's packets are handled in order: once the SEND ONLY has completed, the
    # skipped LAST before it has been handled too, whenever it was, and counted or not.
    final = counters(g0)
    c.note("UC: " + out_uc.strip())
    c.note("counters grew: %s" % {k: after[k] - before.get(k, 0) for k in after
                                  if after[k] != before.get(k, 0)})
    c.expect(alone == 1 and gap == 2 and good == 1, "sent %d, %d, %d" % (alone, gap, good))
    c.expect(grew(mid, mid2, "rx_drop_uc") == 1,
             "UC: rx_drop_uc grew by %d for a LAST without its FIRST, not 1" %
             grew(mid, mid2, "rx_drop_uc"))
    c.expect(grew(mid, mid2, "out_of_sequence") == 0,
             "UC: a LAST without its FIRST at the expected PSN counted out_of_sequence")
    c.expect(grew(mid2, mid3, "out_of_sequence") == 1,
             "UC: out_of_sequence grew by %d for a LAST behind a gap and the next one, not 1"
             % grew(mid2, mid3, "out_of_sequence"))
    c.expect(grew(mid3, after, "out_of_sequence") == 1,
             "UC: out_of_sequence grew by %d for a SEND ONLY behind a gap, not 1"
             % grew(mid3, after, "out_of_sequence"))
    c.expect(grew(mid2, final, "out_of_sequence") == 2,
             "UC: out_of_sequence grew by %d for the LAST packets behind a gap and the SEND "
             "ONLY, not 2" % grew(mid2, final, "out_of_sequence"))
    for name in ("rx_drop_no_recv", "rx_stale", "seq_nak_sent"):
        c.expect(grew(mid, after, name) == 0, "UC: %s grew by %d" % (name, grew(mid, after, name)))
    wcs = [ln for ln in out_uc.splitlines() if ln.startswith("wc status=")]
    c.expect(len(wcs) == 1 and "status=IBV_WC_SUCCESS" in wcs[0] and "len=64" in wcs[0],
             "UC: completions %s, want one SUCCESS of 64 bytes" % wcs)
    c.expect(states(out_uc) == ["RTS"], "UC QP state: %s" % states(out_uc))
    c.done()


def test_i_read_response_longer_than_asked(net, victims):
    """A 1024-byte READ RESPONSE ONLY to a 64-byte RDMA READ: the READ
    completes in error and nothing beyond the 64 bytes asked for is written."""
    g0, g1, _, _ = net
    c = Checks("READ response longer than the READ")
    v = start(victims, g0, "i", "rc", g1.ip4,
              ["read 64", "touch /tmp/hv-i-sent", "wait /tmp/hv-i-go", "poll 10000 1", "check",
               "state", "exit"],
              extra="--timeout 18 --retry 7 --remote-va 0x10000 --remote-rkey 0x1234")
    v.wait_file("sent")
    attack(g1, g0, "read_resp_long", 1, v, v.sq_psn, extra="--payload-len 1024")
    v.go()
    out = v.finish(60)
    c.note(out.strip())
    wcs = completions(out)
    c.expect(wcs and all(w[0] != "IBV_WC_SUCCESS" for w in wcs),
             "the READ did not complete in error: %s" % wcs)
    changed = values(out, "mr_changed")
    c.expect(changed and changed[0] <= 64, "%s MR bytes written for a 64-byte READ" % changed)
    last = values(out, "mr_last_changed")
    c.expect(not last or last[0] < v.len // 2 + 64,
             "MR written up to offset %s, the READ's buffer ends at %d" % (last, v.len // 2 + 64))
    c.expect(values(out, "guard_changed") == [0], "guard written")
    c.done()


def requester(victims, net, tag, posts, poll_ms, extra):
    """A victim that posts posts (READs at a made-up remote address), then,
    once told to go, polls for poll_ms and reports its QP's state."""
    g0, g1 = net[:2]
    v = start(victims, g0, tag, "rc", g1.ip4,
              posts + ["touch /tmp/hv-%s-sent" % tag, "wait /tmp/hv-%s-go" % tag,
                       "poll %d" % poll_ms, "state", "exit"],
              extra=extra + " --remote-va 0x10000 --remote-rkey 0x1234")
    v.wait_file("sent")
    return v


def finish_requester(v, c):
    """Let a requester() victim poll: its output and completions."""
    v.go()
    out = v.finish(60)
    c.note(out.strip())
    return out, completions(out)


def test_o_acked_send_behind_a_lost_read_response_completes(net, victims):
    """A READ (PSN p) and a SEND (p + 1) behind it; the peer's ACK for p + 1
    comes first, as when the READ's response was lost, then the response of
    the READ asked for again. Both complete with success at once and the QP
    stays in RTS: the acknowledged SEND does not wait for ACK timeouts and
    fail with retry exceeded (retry_cnt 1, timeout 1.1 s)."""
    g0, g1, _, _ = net
    c = Checks("an acknowledged SEND behind a READ whose response was lost")
    v = requester(victims, net, "o", ["read 64", "send 1"], 4000, "--timeout 18 --retry 1")
    attack(g1, g0, "ack", 1, v, v.sq_psn + 1)
    attack(g1, g0, "read_resp_long", 1, v, v.sq_psn, extra="--payload-len 64")
    out, wcs = finish_requester(v, c)
    c.expect(wcs == [("IBV_WC_SUCCESS", "RDMA_READ"), ("IBV_WC_SUCCESS", "SEND")],
             "completions %s, want the READ's and the SEND's success" % wcs)
    c.expect(states(out) == ["RTS"], "QP state %s, not RTS" % states(out))
    c.done()


def test_p_bad_response_behind_the_oldest_fails_when_it_is_reached(net, victims):
    """Two READs (PSN p, p + 1); a response of the wrong length for the second
    comes first, then the first's good response. The first completes with
    success and the second at once with a bad response error (the QP enters
    ERR), not one ACK timeout (4.3 s) later."""
    g0, g1, _, _ = net
    c = Checks("a bad READ response behind the oldest READ")
    v = requester(victims, net, "p", ["read 1024", "read 64"], 2000, "--timeout 20 --retry 7")
    attack(g1, g0, "read_resp_long", 1, v, v.sq_psn + 1, extra="--payload-len 32")
    attack(g1, g0, "read_resp_long", 1, v, v.sq_psn, extra="--payload-len 1024")
    out, wcs = finish_requester(v, c)
    c.expect(wcs[:2] == [("IBV_WC_SUCCESS", "RDMA_READ"), ("IBV_WC_BAD_RESP_ERR", "RDMA_READ")],
             "completions %s, want the first READ's success and the second's BAD_RESP" % wcs)
    c.expect(states(out) == ["ERR"], "QP state %s, not ERR" % states(out))
    c.done()


def test_n_duplicate_read_must_match_the_original(net, victims):
    """A 64-byte READ request from the peer is answered; duplicates of it (its
    PSN again) are answered again only when their RETH names the original's key
    and lies within the original's range, as a requester that retries sends
    them: a duplicate with another key, or reaching past the original's end, is
    dropped (rx_drop_dup_read) and sends nothing, so a forged duplicate with a
    guessed PSN does not make the QP send a READ's data again."""
    g0, g1, _, _ = net
    c = Checks("duplicate READ requests")
    v = start(victims, g0, "n", "rc", g1.ip4, ["wait /tmp/hv-n-go", "state", "exit"])
    steps = [("the original READ", "", 1, 0),
             ("a duplicate with another key", "--rkey %d" % (v.rkey ^ 0x5a5a00), 0, 1),
             ("a duplicate past the original's end", "--va %d" % (v.va + 32), 0, 1),
             ("a retry of its second half", "--va %d --len 32" % (v.va + 32), 1, 0),
             ("the same duplicate", "", 1, 0)]
    before = counters(g0)
    for what, extra, responses, drops in steps:
        attack(g1, g0, "read_req", 1, v, v.rq_psn, extra=extra)
        after = settle(g0, before, "tx_packets" if responses else "rx_drop_dup_read",
                       responses or drops)
        time.sleep(0.5)
        after = counters(g0)
        sent, dropped = grew(before, after, "tx_packets"), grew(before, after, "rx_drop_dup_read")
        c.note("%s: %d sent, %d dropped" % (what, sent, dropped))
        c.expect(sent == responses and dropped == drops,
                 "%s: %d packets sent (want %d), rx_drop_dup_read +%d (want %d)" % (
                     what, sent, responses, dropped, drops))
        before = after
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(states(out)[:1] == ["RTS"], "QP state after the duplicates: %s" % states(out)[:1])
    # one of the first QPs of a fresh device: its number is not the count of QPs
    c.expect(v.qpn >= 16 + 64, "QPN %d: QPNs are counted up from 16" % v.qpn)
    c.done()


def responses(cap):
    """(opcode, PSN) of the packets a capture holds, as integers."""
    return [(int(op), int(psn)) for op, psn in
            cap.fields(["infiniband.bth.opcode", "infiniband.bth.psn"]) if op and psn]


ACK, READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY = 0x11, 0x0d, 0x0e, 0x0f, 0x10


def answers(net, victims, c, tag, steps):
    """A responder victim in guest 0; guest 1 sends it steps, (pktgen mode, PSN
    offset from its rq_psn, extra arguments; "--va +N" is N past its MR's va),
    half a second apart, and captures what guest 0 sends back: (the victim's
    rq_psn, [(opcode, PSN)], the victim's output)."""
    g0, g1 = net[:2]
    v = start(victims, g0, tag, "rc", g1.ip4, ["wait /tmp/hv-%s-go" % tag, "state", "exit"])
    with Capture(g1, bpf="udp dst port 4791 and src host %s" % g0.ip4, count=100) as cap:
        for mode, offset, extra in steps:
            extra = re.sub(r"--va \+(\d+)", lambda m: "--va %d" % (v.va + int(m.group(1))),
                           extra)
            attack(g1, g0, mode, 1, v, v.rq_psn + offset, extra=extra)
            time.sleep(0.5)
    rows = responses(cap)
    v.go()
    out = v.finish()
    c.note("captured (opcode, psn): %s" % rows)
    c.note(out.strip())
    return v.rq_psn, rows, out


def test_q_duplicate_write_ack_names_no_read(net, victims):
    """The peer's WRITE (PSN p), a READ (p + 1), then the WRITE again, as a
    requester resends after losing the ACK and the READ's response: the
    duplicate's ACK names p, not p + 1. An ACK naming the READ's PSN completes
    the READ, without its data, at an rdma_rxe requester (rxe_comp.c), which is
    what rdma_rxe's own responder avoids."""
    c = Checks("the ACK of a duplicate WRITE after a READ")
    p, rows, out = answers(net, victims, c, "q", [("rc_write_only", 0, ""), ("read_req", 1, ""),
                                                  ("rc_write_only", 0, "")])
    after_read = rows[[op for op, _ in rows].index(READ_ONLY) + 1:] \
        if READ_ONLY in [op for op, _ in rows] else []
    c.expect((READ_ONLY, p + 1) in rows, "no READ response for PSN %d" % (p + 1))
    c.expect(after_read == [(ACK, p)],
             "after the READ response %s, want one ACK for PSN %d" % (after_read, p))
    c.expect(states(out) == ["RTS"], "QP state %s, not RTS" % states(out))
    c.done()


def test_r_read_asked_again_from_its_middle_goes_on_with_middle(net, victims):
    """The peer's 4 KiB READ (four responses at path MTU 1024: FIRST, MIDDLE,
    MIDDLE, LAST), then the same READ asked for again from its third
    response (PSN p + 2, va and length moved up), as a requester that lost
    it: the responses go on as MIDDLE and LAST, numbered as the original's
    (rdma_rxe's requester takes FIRST only at a READ's first PSN)."""
    c = Checks("a READ asked for again from its middle")
    p, rows, out = answers(net, victims, c, "r", [("read_req", 0, "--len 4096"),
                                                  ("read_req", 2, "--len 2048 --va +2048")])
    want = [(READ_FIRST, p), (READ_MIDDLE, p + 1), (READ_MIDDLE, p + 2), (READ_LAST, p + 3),
            (READ_MIDDLE, p + 2), (READ_LAST, p + 3)]
    c.expect(rows == want, "responses %s, want %s" % (rows, want))
    c.expect(states(out) == ["RTS"], "QP state %s, not RTS" % states(out))
    c.done()


# longer than the victim's path MTU, short enough for the rig's 1500-byte link
OVER_MTU = MTU + 256


def test_j_payload_longer_than_path_mtu(net, victims):
    """RC WRITE ONLY and SEND ONLY, and UC WRITE ONLY, with 1280 bytes of payload
    on a path MTU 1024 QP (2048 would not fit the rig's 1500-byte Ethernet MTU),
    each at its own victim's expected PSN: not placed, not delivered,
    rx_drop_mtu counts each once (and only it: rx_drop_uc does not count the
    UC one again); the RC QP goes to the error state (an invalid request, fatal
    for RC), the UC QP stays in RTS (UC drops the message)."""
    g0, g1, _, _ = net
    c = Checks("payload longer than the path MTU")
    for tag, kind, mode in (("j", "rc", "rc_write_only"), ("j2", "rc", "rc_send_only"),
                            ("j3", "uc", "uc_write")):
        v = start(victims, g0, tag, kind, g1.ip4,
                  ["wait /tmp/hv-%s-go" % tag, "check", "poll 500", "state", "exit"])
        before = counters(g0)
        attack(g1, g0, mode, 1, v, v.rq_psn, extra="--payload-len %d" % OVER_MTU)
        after = settle(g0, before, "rx_drop_mtu", 1)
        v.go()
        out = v.finish()
        c.note(out.strip())
        c.expect(values(out, "mr_changed") == [0], "%s placed: mr_changed=%s" %
                 (mode, values(out, "mr_changed")))
        recv = [w for w in completions(out) if w[1] == "RECV" and w[0] == "IBV_WC_SUCCESS"]
        c.expect(not recv, "%s delivered to a receive buffer" % mode)
        c.expect(grew(before, after, "rx_drop_mtu") == 1,
                 "%s: rx_drop_mtu grew by %d, not 1" % (mode, grew(before, after, "rx_drop_mtu")))
        c.expect(grew(before, after, "rx_drop_uc") == 0,
                 "%s: rx_drop_uc grew by %d, not 0" % (mode, grew(before, after, "rx_drop_uc")))
        want = "RTS" if kind == "uc" else "ERR"
        c.expect(states(out) == [want], "%s: QP state %s, not %s" % (mode, states(out), want))
    c.done()


def test_k_live_random_packets(net, victims):
    """2000 valid-ICRC random requests and responses at the victim's QPN around
    its PSN, from the peer: guards unchanged, the device still works."""
    g0, g1, _, _ = net
    c = Checks("live random packets")
    v = start(victims, g0, "k", "rc", g1.ip4, ["wait /tmp/hv-k-go", "check", "state", "exit"])
    attack(g1, g0, "live", 2000, v, v.rq_psn, interval=50,
           extra="--len %d --seed 4791" % v.len)
    settle(g0)
    v.go()
    out = v.finish()
    c.note(out.strip())
    c.expect(values(out, "guard_changed") == [0], "guard written: %s" % values(out, "guard_changed"))
    loopback_ok(g0, c)
    c.done()


# ------------------------------------------------------------ GSI starvation


def test_l_transmit_refused_for_good_fails_the_wqe(net, victims):
    """A qdisc that refuses every packet (pfifo limit 0): the requester holds
    back and tries again, but not forever: once its retry budget's worth of
    time has passed, the SEND completes with IBV_WC_RETRY_EXC_ERR."""
    g0, g1, _, _ = net
    c = Checks("transmit refused by the qdisc")
    g0.check("ping -c 1 -W 5 %s" % g1.ip4)    # the neighbour is known: packets reach the qdisc
    g0.check("tc qdisc replace dev eth0 root pfifo limit 0")
    try:
        v = start(victims, g0, "l", "rc", g1.ip4, ["send 1", "poll 12000 1", "state", "exit"],
                  extra="--timeout 14 --retry 3")
        out = v.finish(60)
    finally:
        g0.run("tc qdisc del dev eth0 root")
    c.note(out.strip())
    wcs = completions(out)
    c.expect(any(w[0] == "IBV_WC_RETRY_EXC_ERR" for w in wcs),
             "no IBV_WC_RETRY_EXC_ERR completion within 12 s: %s" % (wcs or "no completion"))
    c.expect(not any(w[0] == "IBV_WC_SUCCESS" for w in wcs), "a SEND that never left succeeded")
    c.done()

def test_m_posts_go_out_while_no_ack_comes(net, victims):
    """A peer that never answers, and a QP without an ACK timeout (timeout 0:
    nothing is ever resent). A SEND posted while an earlier one still waits
    for its ACK must leave all the same: a requester that waits for the next
    response before it looks at the ring again (no doorbell system call while
    responses are due) must not wait for one that never comes. Five SENDs
    posted one at a time, three of them back to back: guest 1 sees five SEND
    packets of five consecutive PSNs, none twice, and none completes. Each
    of the three left through its own doorbell, none through the fetch timer
    (fetch_by_timer does not grow): the requester was idle when the first
    was posted, so the second must not wait behind it for a response (a
    round trip on a live link) or the timer's tick."""
    g0, g1, _, _ = net
    c = Checks("posts while no ACK comes")
    g0.check("ping -c 1 -W 5 %s" % g1.ip4)
    before = counters(g0)
    with Capture(g1, bpf="udp dst port 4791", count=1000) as cap:
        v = start(victims, g0, "m", "rc", g1.ip4,
                  ["send 1", "sleep 300", "send 1", "sleep 300", "send 3", "poll 1500",
                   "state", "exit"], extra="--timeout 0")
        out = v.finish(60)
    rows = cap.fields(["infiniband.bth.opcode", "infiniband.bth.psn"])
    c.note(out.strip())
    c.note("captured (opcode psn): %s" % rows)
    psns = [int(psn) for op, psn in rows if op == "4"]    # RC SEND Only
    want = [(v.sq_psn + i) & 0xffffff for i in range(5)]
    c.expect(sorted(psns) == sorted(want),
             "SEND packets of PSNs %s, want one each of %s" % (psns, want))
    c.expect(not completions(out), "a SEND nobody acknowledged completed: %s" % completions(out))
    c.expect(states(out) == ["RTS"], "QP state afterwards: %s, not RTS" % states(out))
    c.expect("fetch_by_timer" in before, "no fetch_by_timer counter: %s" % sorted(before))
    by_timer = grew(before, counters(g0), "fetch_by_timer")
    c.expect(by_timer == 0, "%d fetch timer runs found SENDs posted behind a doorbell" % by_timer)
    c.done()


def rping(g0, g1, count):
    """rping server in guest 0, client in guest 1 (count pings, bounded)."""
    flags = "-a %s -p %d -C %d -v" % (g0.ip4, RPING_PORT, count)
    return client_server(g0, "rping -s " + flags, g1, "rping -c " + flags, port=RPING_PORT,
                         timeout=40, listen_timeout=30, is_listening=cm_listening)


def test_e_gsi_flood_then_rdma_cm(net):
    """600 UD SENDs of 300 bytes to QP 1 (more than a MAD receive buffer
    holds): rdma_cm still connects afterwards, rx_drop_ud_len counts them."""
    g0, g1, _, _ = net
    c = Checks("GSI flood")
    for g in (g0, g1):
        g.check("modprobe rdma_ucm && test -c /dev/infiniband/rdma_cm")
    add_link(g1)
    try:
        # the baseline: rdma_cm works before the flood, else the flood proves nothing
        s, cl = rping(g0, g1, 1)
        if not (cl.ok and "ping data: " in cl.out):
            pytest.fail("rping does not work even before the flood: %r / %r" % (s, cl))
        before = counters(g0)
        sent = attack(g1, g0, "gsi_flood", 600, interval=0, extra="--payload-len 300")
        after = settle(g0, before, "rx_drop_ud_len", sent)
        c.note("counters grew: %s" % {k: after[k] - before.get(k, 0) for k in after
                                      if after[k] != before.get(k, 0)})
        s, cl = rping(g0, g1, 3)
        c.note("rping server: %r" % s)
        c.note("rping client: %r" % cl)
        pings = [ln for ln in cl.out.splitlines() if "ping data: " in ln]
        c.expect(cl.ok and len(pings) == 3,
                 "rping after the flood: client rc=%d, %d of 3 pings" % (cl.rc, len(pings)))
        c.expect(grew(before, after, "rx_drop_ud_len") == sent,
                 "rx_drop_ud_len grew by %d, not %d" % (grew(before, after, "rx_drop_ud_len"), sent))
    finally:
        g1.run("modprobe -r %s 2>/dev/null; true" % " ".join(CM_MODULES), timeout=60)
        unload_all_rdma_links(g1)
    c.done()


UD_IDLE = "/src/tests/vm/guest_ud_idle.py"


def test_s_ud_messages_it_cannot_take_are_counted(net):
    """UD SENDs to a UD QP in RTS with no receive WQE posted are lost (UD has no
    RNR NAK): rx_drop_no_recv counts each, nothing completes, the QP stays in RTS.
    With a wrong Q_Key, to that QP and to the GSI QP, rx_drop_qkey counts them,
    and so does the port's qkey_viol_cntr; rx_stale counts none of them."""
    g0, g1, _, _ = net
    c = Checks("UD drops")
    ready, done = "/tmp/hv-ud-ready", "/tmp/hv-ud-done"
    g0.check("rm -f %s %s" % (ready, done))
    p = g0.spawn("python3 %s sroce0 0x1234 %s %s 90" % (UD_IDLE, ready, done))
    try:
        wait_for(lambda: ready in g0.read_files([ready])[0] or p.poll() is not None,
                 timeout=60, what="the UD QP")
        files = g0.read_files([ready])[0]
        assert ready in files, p.wait(5)
        qpn = int(files[ready])
        before, viol = counters(g0), port_violations(g0)
        n = attack(g1, g0, "ud_send", 20, extra="--qpn %d --qkey 0x1234" % qpn)
        mid = settle(g0, before, "rx_drop_no_recv", n)
        wrong = attack(g1, g0, "ud_send", 7, extra="--qpn %d --qkey 0x4321" % qpn)
        wrong += attack(g1, g0, "gsi_flood", 5, extra="--qkey 0x4321 --payload-len 64")
        after = settle(g0, mid, "rx_drop_qkey", wrong)
        qkey_viol = port_violations(g0)[1] - viol[1]
        g0.check("touch %s" % done)
        r = p.wait(30)
        c.note("counters grew: %s" % {k: after[k] - before.get(k, 0) for k in after
                                      if after[k] != before.get(k, 0)})
        c.expect(grew(before, mid, "rx_drop_no_recv") == n,
                 "rx_drop_no_recv grew by %d, not %d" % (grew(before, mid, "rx_drop_no_recv"), n))
        c.expect(grew(mid, after, "rx_drop_no_recv") == 0,
                 "wrong Q_Key messages counted in rx_drop_no_recv")
        c.expect(grew(mid, after, "rx_drop_qkey") == wrong,
                 "rx_drop_qkey grew by %d, not %d" % (grew(mid, after, "rx_drop_qkey"), wrong))
        c.expect(qkey_viol == wrong, "qkey_viol_cntr grew by %d, not %d" % (qkey_viol, wrong))
        c.expect(grew(before, after, "rx_stale") == 0,
                 "rx_stale grew by %d" % grew(before, after, "rx_stale"))
        c.expect(r.ok and "qp_state=RTS completions=0" in r.out, "the UD QP: %r" % r)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    c.done()


# ------------------------------------------------------------ MR teardown vs. a peer (last)

WRITE_LEN = 65536


def test_g_rest_of_write_after_dereg(net, victims):
    """WRITE FIRST from the peer, the victim deregisters the MR (its memory stays
    mapped), then the peer sends the rest of the message: the first packet's
    bytes are there, no byte past them may change."""
    g0, g1, _, _ = net
    c = Checks("rest of an RDMA WRITE after dereg")
    v = start(victims, g0, "g", "rc", g1.ip4,
              ["wait /tmp/hv-g-go", "dereg", "wait /tmp/hv-g-rest", "check", "exit"])
    attack(g1, g0, "rc_write_first", 1, v, v.rq_psn, extra="--len %d --payload-len %d" %
           (WRITE_LEN, MTU))
    time.sleep(0.5)
    v.go()
    if v.wait_line(r"dereg_ms=", 10) is None:
        c.expect(False, "dereg still blocked 10 s after the peer's first packet")
    attack(g1, g0, "rc_write_rest", 1, v, v.rq_psn + 1, extra="--len %d --payload-len %d" %
           (WRITE_LEN, MTU))
    time.sleep(1)       # the rest has been received and dealt with
    v.go("rest")
    out = v.finish(30)
    c.note(out.strip())
    ms = values(out, "dereg_ms")
    c.expect(ms and ms[0] < 2000, "dereg took %s ms (it waited for the peer's message)" % ms)
    c.expect(values(out, "mr_pattern_bytes") == [MTU],
             "the WRITE FIRST did not land whole (mr_pattern_bytes=%s, want %d)" %
             (values(out, "mr_pattern_bytes"), MTU))
    last = values(out, "mr_last_changed")
    c.expect(last == [MTU - 1],
             "MR written up to offset %s after dereg (first packet: %d bytes)" % (last, MTU))
    c.expect(values(out, "guard_changed") == [0], "guard written")
    c.done()


def test_f_dereg_during_unfinished_write(net, victims):
    """WRITE FIRST from the peer, then silence: dereg and destroy_qp must finish
    within a few seconds. A kernel that waits for the message forever is given
    10 s, then the test finishes the message itself (rc_write_rest) to free it."""
    g0, g1, _, _ = net
    c = Checks("dereg while a peer's RDMA WRITE is unfinished")
    v = start(victims, g0, "f", "rc", g1.ip4,
              ["wait /tmp/hv-f-go", "dereg", "destroy_qp", "check", "exit"])
    attack(g1, g0, "rc_write_first", 1, v, v.rq_psn, extra="--len %d --payload-len %d" %
           (WRITE_LEN, MTU))
    time.sleep(0.5)
    v.go()
    if v.wait_line(r"destroy_qp_ms=", 10) is None:
        c.expect(False, "dereg/destroy_qp still blocked 10 s after the peer went silent")
        c.note("blocked victim: %s" % v.text().strip())
        c.note("kernel stack: %s" % g0.run(
            "for p in $(pgrep -f sroce-victim); do cat /proc/$p/stack; done", timeout=30).out)
        attack(g1, g0, "rc_write_rest", 1, v, v.rq_psn + 1,
               extra="--len %d --payload-len %d" % (WRITE_LEN, MTU))
    out = v.finish(30)
    c.note(out.strip())
    c.expect(values(out, "mr_pattern_bytes")[:1] == [MTU],
             "the WRITE FIRST did not land, so no message was unfinished "
             "(mr_pattern_bytes=%s, want %d)" % (values(out, "mr_pattern_bytes"), MTU))
    for k in ("dereg_ms", "destroy_qp_ms"):
        ms = values(out, k)
        c.expect(ms and ms[0] < 3000, "%s=%s" % (k, ms))
    loopback_ok(g0, c)
    c.done()
