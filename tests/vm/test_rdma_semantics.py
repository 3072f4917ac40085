# SPDX-License-Identifier: GPL-2.0
"""RDMA semantics with every byte and every completion checked: sroce-rdma-test.

Loopback: one guest, one device, fresh QP pairs per case connected to each
other through the device's own RoCE v2 GID. The tool runs once per device
and address family with all its cases; every case is a test here that
asserts the case's own PASS line (the tool prints "PASS|FAIL <case>" and,
for a failure, one "  <case>: <problem>" line per problem). Every case runs
over the IPv4 GID, the LOOPBACK_IPV6 subset over the global IPv6 one.

Two hosts: the server (responder) in guest 0, the client (requester) in
guest 1, all two-host cases in one run per pair of device kinds and address
family, like test_verbs.py:

  sroce-sroce, sroce-rxe, rxe-sroce   always
  rxe-rxe                             the harness baseline, only with
                                      SROCE_TEST_RXE_BASELINE=1

Loopback runs on sroce0; with SROCE_TEST_RXE_BASELINE=1 also on rxe0.
Where rdma_rxe itself deviates from the IBTA semantics the tool asserts
(RXE_DEVIATIONS), its failure is reported as an expected failure with the
reason, on rxe only; sroce is held to the full semantics.

Guest consoles are checked around every tool run. A WARNING, BUG, hung task
etc. printed during a run cannot be pinned on one case, so it fails every
test of that run, each still showing its own case's verdict.

A tool stuck in the kernel (uninterruptible, immune to SIGKILL) would also
block the guest agent, which waits for the process it runs, and every test
after it would spend minutes on timeouts. So the tool runs in the background
under a guest-side shell that gives up after a time limit and returns,
reporting "HUNG" and the kernel stacks of the stuck process. That guest is
then marked as wedged: later runs needing it are reported as not run.
"""
import os
import re
import subprocess

import pytest

from guestrdma import (DEVNAME, FAMILIES, REPO, TOOLS, client_server, configure, console_guard,
                       rigmod)
from pairs import KINDS, PAIRS, configure_pair, unconfigure

TOOL = TOOLS + "/sroce-rdma-test"
HOST_TOOL = os.path.join(REPO, "build", "cmake", "userspace", "tools", "sroce-rdma-test")
PORT = 18524
# Deadline of every wait for completions inside the tool: ample under TCG (a
# 1 MiB transfer takes under a second) while a dead data path fails fast.
WAIT = 10
# Time budget of one run (--budget): cases left when it is spent are reported
# as failed without running, so a data path that drops everything (each case
# then waits out its deadline) cannot stretch the module to many minutes.
# A healthy run takes a few seconds.
BUDGET = {"loopback": 150, "loopback-ipv6": 60, "two-host": 90}
# The tool prints a line per case and its watchdog ends a case hung in user
# space after 10 * WAIT s: a run silent for longer than STALL is stuck in the
# kernel. No run may take longer than its budget plus STALL.
STALL = 10 * WAIT + 20
HUNG_RC = 125

# guest name -> why it cannot be used any more (a process stuck in the kernel)
WEDGED = {}

# `sroce-rdma-test --list` (test_case_lists_match_the_tool keeps these honest)
LOOPBACK_CASES = [
    "rc_send", "rc_send_multi_sge", "rc_send_imm", "rc_send_inline", "rc_send_unsignaled",
    "rc_send_solicited", "rc_write", "rc_write_imm", "rc_read", "rc_atomic_fetch_add",
    "rc_atomic_cmp_swp", "rc_chain_100", "rc_read_fence_send", "uc_send", "uc_write",
    "ud_send", "ud_send_imm", "srq_shared", "srq_limit", "err_bad_rkey",
    "err_read_out_of_bounds", "err_write_no_remote_access", "err_bad_lkey",
    "err_bad_lkey_after_writes", "err_recv_too_small", "err_rnr_retry_exceeded", "err_rnr_retry_recovers",
    "err_rnr_retry_per_message", "err_flush_on_error", "comp_channel",
]
LOOPBACK_IPV6 = ["rc_send", "rc_read", "uc_send", "ud_send", "ud_send_imm"]
# `sroce-rdma-test --list --client x`
HOST_CASES = ["rc_send", "rc_write", "rc_read", "rc_atomic", "rc_atomic_write",
              "rc_read_fence_send", "uc_send", "uc_write", "ud_send", "srq_send"]


def host_cases_unknown(rig, kinds):
    """Host cases one of the pair cannot run: rdma_rxe before Linux 6.2 has no
    ATOMIC WRITE (it drops the opcode; the requester's retries run out)."""
    major, minor = (int(x) for x in rig.kver.split(".")[:2])
    if "rxe" in kinds and (major, minor) < (6, 2):
        return {"rc_atomic_write": "rdma_rxe of Linux %d.%d has no ATOMIC WRITE" % (major, minor)}
    return {}

# Where rdma_rxe (Linux 6.1) itself does not give the IBTA completion status.
RXE_DEVIATIONS = {
    "err_bad_lkey": "rxe completes a SEND whose SGE has an invalid lkey with "
                    "IBV_WC_LOC_QP_OP_ERR, not IBV_WC_LOC_PROT_ERR (rxe_req.c: lookup_mr "
                    "fails with -EINVAL, only -EFAULT maps to LOC_PROT_ERR)",
    "err_bad_lkey_after_writes": "as err_bad_lkey: rxe completes the WRITE with the invalid "
                                 "lkey with IBV_WC_LOC_QP_OP_ERR, not IBV_WC_LOC_PROT_ERR",
    "err_recv_too_small": "rxe treats a SEND longer than the receive buffer as a malformed "
                          "WQE: sender IBV_WC_REM_OP_ERR, receiver IBV_WC_LOC_QP_OP_ERR, not "
                          "REM_INV_REQ_ERR / LOC_LEN_ERR (rxe_mr.c copy_data returns -EINVAL "
                          "when length > resid, before the -ENOSPC length path)",
    "ud_send": "rxe reports sl 0 for a RoCE UD receive, not the packet type ConnectX NICs "
               "report there (8 | 2 for RoCE v2 over IPv4, 8 | 1 over IPv6), which UCX reads",
    "ud_send_imm": "as ud_send: rxe reports sl 0 for a RoCE UD receive",
}


CASE_LINE = re.compile(r"^(PASS|FAIL) (\S+) \(([\d.]+) s\)(?:: (.*))?$")
DETAIL_LINE = re.compile(r"^  (\S+): (.*)$")
HEADER = re.compile(r"^device \S+ port \d+: gid\[(\d+)\]")


class Run:
    """One tool run: per-case verdicts and problem lines, how the run ended,
    and the kernel problems the guest consoles showed meanwhile."""

    def __init__(self, result, what, expected_gid=None, console=()):
        self.result, self.what = result, what
        self.expected_gid = expected_gid
        self.console = list(console)
        self.cases = {}     # name -> (verdict, seconds, [detail lines])
        self.gid = None
        details = {}
        for line in result.out.splitlines():
            m = CASE_LINE.match(line)
            if m:
                self.cases[m.group(2)] = (m.group(1), float(m.group(3)),
                                          details.pop(m.group(2), []))
                continue
            m = DETAIL_LINE.match(line)
            if m:
                details.setdefault(m.group(1), []).append(m.group(2))
                continue
            m = HEADER.match(line)
            if m:
                self.gid = int(m.group(1))
        self.completed = re.search(r"^RESULT: (PASS|FAIL) \(", result.out, re.M) is not None
        self.hung = result.rc == HUNG_RC and "HUNG:" in result.out

    def tail(self):
        return "rc=%s\n--- stdout (tail)\n%s\n--- stderr (tail)\n%s" % (
            self.result.rc, self.result.out[-4000:], self.result.err[-2000:])

    def verdict(self, case):
        """(passed, text): text explains a failure or a missing result."""
        if case not in self.cases:
            if self.hung:
                why = ("the tool got stuck in the kernel before this case's result (the case "
                       "it was running is the first without a result line)")
            else:
                why = "no result for case %s" % case
            return False, "%s: %s\n%s" % (self.what, why, self.tail())
        verdict, secs, details = self.cases[case]
        text = "%s: %s %s (%.2f s)\n  %s" % (self.what, verdict, case, secs,
                                             "\n  ".join(details))
        return verdict == "PASS", text

    def check_console(self, text=""):
        assert not self.console, "guest console shows kernel problems during %s:\n%s\n%s" % (
            self.what, "\n".join(self.console), text)

    def check_completed(self):
        assert self.completed and self.result.rc in (0, 1), \
            "%s did not complete:\n%s" % (self.what, self.tail())
        assert self.gid == self.expected_gid, "%s: tool picked GID %s, want %s\n%s" % (
            self.what, self.gid, self.expected_gid, self.tail())


def guarded(cmd, budget):
    """cmd run in the background by a guest shell that SIGKILLs it once it has
    printed nothing for STALL seconds or has run for budget + STALL. A process
    still there after SIGKILL is stuck in the kernel: the shell prints HUNG and
    its threads' kernel stacks and exits HUNG_RC without waiting for it.
    Otherwise it exits with the command's status (137: killed). stdout and
    stderr of cmd come out on stdout, in order."""
    return (
        "o=$(mktemp); (exec %(cmd)s >$o 2>&1 </dev/null) & p=$!; "
        "alive() { s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); [ -n \"$s\" ] && "
        "[ \"$s\" != Z ]; }; "
        "end=$((SECONDS + %(limit)d)); last=$SECONDS; size=0; "
        "while alive && [ $SECONDS -lt $end ] && [ $((SECONDS - last)) -lt %(stall)d ]; do "
        "sleep 0.3; n=$(stat -c %%s $o); [ \"$n\" != \"$size\" ] && size=$n && last=$SECONDS; "
        "done; "
        "if alive; then kill -9 $p; sleep 2; fi; "
        "if alive; then cat $o; echo \"HUNG: pid $p still there after SIGKILL, state "
        "$(cut -d' ' -f3 /proc/$p/stat)\"; for t in /proc/$p/task/*; do "
        "echo \"--- kernel stack of task ${t##*/} ($(cat $t/comm)):\"; cat $t/stack; done; "
        "exit %(hung)d; fi; "
        "wait $p; rc=$?; cat $o; rm -f $o; "
        "[ $rc = 137 ] && echo \"KILLED: no output for %(stall)d s or over %(limit)d s\"; "
        "exit $rc" % {"cmd": cmd, "limit": budget + STALL, "stall": STALL, "hung": HUNG_RC})


def not_run(cmd, guests):
    why = "; ".join("%s is unusable: %s" % (g.name, WEDGED[g.name])
                    for g in guests if g.name in WEDGED)
    return rigmod.Result(cmd, -1, "", "not run: " + why)


def note_hang(g, r, what):
    if r.rc == HUNG_RC and "HUNG:" in r.out:
        WEDGED[g.name] = "%s got stuck in the kernel" % what


def tool_cmd(dev, budget, *args):
    return "%s -d %s --timeout %d --budget %d %s" % (TOOL, dev, WAIT, budget, " ".join(args))


def usable(guests):
    """Fail unless every guest is usable (no process of an earlier run stuck in its kernel)."""
    for g in guests:
        if g.name in WEDGED:
            pytest.fail("%s is unusable: %s" % (g.name, WEDGED[g.name]))


def judge(run, case, kind):
    ok, text = run.verdict(case)
    run.check_console(text)
    if not ok and kind == "rxe" and case in RXE_DEVIATIONS:
        pytest.xfail("rdma_rxe deviation: %s\n%s" % (RXE_DEVIATIONS[case], text))
    assert ok, text


# ------------------------------------------------------------ loopback

@pytest.fixture(scope="module", params=KINDS)
def loopback(request, rig):
    """Both loopback runs in one guest (0 unless wedged) on one device:
    (kind, {family: Run})."""
    kind = request.param
    # guest 0 unless a process stuck in its kernel made it unusable
    g = next((x for x in rig.guests if x.name not in WEDGED), rig[0])
    usable([g])
    with console_guard(rig, "adding " + DEVNAME[kind]):
        gid = configure(g, kind).gid
    runs = {}
    coalesced = {}
    for family in FAMILIES:
        before = {c: hw_counter(g, kind, c) for c in ACK_COUNTERS}
        if family == "ipv6":
            budget = BUDGET["loopback-ipv6"]
            cmd = tool_cmd(DEVNAME[kind], budget, "--ipv6",
                           *["--case %s" % c for c in LOOPBACK_IPV6])
        else:
            budget = BUDGET["loopback"]
            cmd = tool_cmd(DEVNAME[kind], budget)
        what = "loopback in %s on %s over %s" % (g.name, DEVNAME[kind], family)
        rig.mark_consoles()
        if g.name in WEDGED:
            r = not_run(cmd, [g])
        else:
            r = g.run(guarded(cmd, budget), timeout=budget + STALL + 30)
            note_hang(g, r, what)
        runs[family] = Run(r, what, gid[family], rig.console_problems())
        if kind == "sroce" and g.name not in WEDGED:
            coalesced[family] = {c: hw_counter(g, kind, c) - before[c] for c in ACK_COUNTERS}
    yield kind, runs, coalesced
    unconfigure(rig, [x for x in [g] if x.name not in WEDGED], DEVNAME[kind])


# sroce's counters of ACKs not asked for (requester) and not sent (responder)
ACK_COUNTERS = ("ack_coalesced", "ackreq_skipped")


def hw_counter(g, kind, name):
    """A port counter of sroce's device in guest g (None for rdma_rxe)."""
    if kind != "sroce":
        return None
    return int(g.read_file("/sys/class/infiniband/%s/ports/1/hw_counters/%s" %
                           (DEVNAME[kind], name)))


@pytest.mark.parametrize("family", FAMILIES)
def test_loopback_run(loopback, family):
    """The run got through every case (no crash, no hang, no watchdog) on the
    GID the suite's own lookup finds for the family."""
    run = loopback[1][family]
    run.check_console()
    run.check_completed()


LOOPBACK_PARAMS = ([pytest.param("ipv4", c, id="ipv4-" + c) for c in LOOPBACK_CASES] +
                   [pytest.param("ipv6", c, id="ipv6-" + c) for c in LOOPBACK_IPV6])


@pytest.mark.parametrize("family,case", LOOPBACK_PARAMS)
def test_loopback(loopback, family, case):
    kind, runs, _ = loopback
    judge(runs[family], case, kind)


def test_loopback_acks_coalesced(loopback):
    """sroce acknowledges the requests of one receive batch with one ACK. On
    loopback the requester sends up to its budget of packets before the
    receive tasklet takes them, so trains of messages that ask for ACKs
    (rc_chain_100, the sends of the other cases) arrive together: ACKs must
    have been coalesced (ack_coalesced counts those a later ACK covered; about
    90 over the IPv4 run, 20 over the IPv6 one), and every case above passed
    with it. The requester asks for no ACK at the end of an unsignaled message
    the next WQE follows at once (rc_send_unsignaled,
    err_bad_lkey_after_writes: ackreq_skipped), and those cases passed too."""
    kind, runs, coalesced = loopback
    if kind != "sroce":
        pytest.skip("ack_coalesced and ackreq_skipped are sroce's counters")
    for family in FAMILIES:
        runs[family].check_completed()
        assert family in coalesced, "guest wedged: counter not read"
        assert coalesced[family]["ack_coalesced"] > 0, coalesced
    assert coalesced["ipv4"]["ackreq_skipped"] >= 15, coalesced


# ------------------------------------------------------------ two hosts

def run_two_host(rig, kinds, families):
    """Configure the pair, run the tool once per address family: (Pair, {family:
    (server Run, client Run)})."""
    srv, cli = rig.guests
    usable(rig.guests)
    p = configure_pair(rig, kinds)
    budget = BUDGET["two-host"]
    runs = {}
    for family in families:
        fam = ["--ipv6"] if family == "ipv6" else []
        host = srv.ip6 if family == "ipv6" else srv.ip4
        unknown = host_cases_unknown(rig, kinds)
        only = ["--case %s" % c for c in HOST_CASES if c not in unknown] if unknown else []
        scmd = tool_cmd(DEVNAME[kinds[0]], budget, "--server", "--port %d" % PORT, *fam)
        ccmd = tool_cmd(DEVNAME[kinds[1]], budget, "--client", host, "--port %d" % PORT,
                        *(fam + only))
        what = "%s server %s / %s client %s over %s" % (srv.name, DEVNAME[kinds[0]], cli.name,
                                                        DEVNAME[kinds[1]], family)
        rig.mark_consoles()
        if srv.name in WEDGED or cli.name in WEDGED:
            s, c = not_run(scmd, [srv, cli]), not_run(ccmd, [srv, cli])
        else:
            s, c = client_server(srv, guarded(scmd, budget), cli, guarded(ccmd, budget),
                                 port=PORT, timeout=budget + STALL + 30)
            note_hang(srv, s, what + " (server side)")
            note_hang(cli, c, what + " (client side)")
        bad = rig.console_problems()
        runs[family] = (Run(s, what + " (server side)", p.server.gid[family], bad),
                        Run(c, what + " (client side)", p.client.gid[family], bad))
    return p, runs


@pytest.fixture(scope="module", params=PAIRS)
def two_host(request, rig):
    """Server in guest 0, client in guest 1, one run per address family:
    (kinds, {family: (server Run, client Run)})."""
    kinds = request.param
    _, runs = run_two_host(rig, kinds, FAMILIES)
    yield kinds, runs
    unconfigure(rig, [g for g in rig.guests if g.name not in WEDGED], "-".join(kinds))


@pytest.mark.parametrize("family", FAMILIES)
def test_two_host_run(two_host, family):
    for run in two_host[1][family]:
        run.check_console()
        run.check_completed()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", HOST_CASES)
def test_two_host(rig, two_host, family, case):
    """Both sides exchange verdicts, so the client's line covers the server's
    checks too; the server's line is shown with a failure."""
    unknown = host_cases_unknown(rig, two_host[0])
    if case in unknown:
        pytest.skip(unknown[case])
    judge_pair(*two_host[1][family], case)


def judge_pair(srv_run, cli_run, case):
    ok, text = cli_run.verdict(case)
    srv_ok, srv_text = srv_run.verdict(case)
    cli_run.check_console(text + "\n" + srv_text)
    assert ok, text + "\n" + srv_text
    assert srv_ok, srv_text


# ------------------------------------------------------------ jumbo frames

def rx_nonlinear(g):
    return int(g.check("cat /sys/class/infiniband/%s/ports/1/hw_counters/rx_nonlinear" %
                       DEVNAME["sroce"]))


# The jumbo run's two ends compute their ICRCs with different CRC-32 code
# (kernel/icrc.c): guest 0 with the crypto API's crc32 (crc32-pclmul on these
# guests' CPU), guest 1 with sroce's sparse reduction. Every packet is then
# checked by the other implementation than the one that made it, in linear
# buffers and in page fragments. "auto" would pick the sparse one on both
# under TCG (the sroce-rdma_rxe runs cross it with rdma_rxe's CRC too).
# Both guests also run eth0's receive path in a NAPI kthread (threaded NAPI,
# what the user guide suggests on 6.12 against softirq starvation), so sroce's
# receive code runs there instead of in the NET_RX softirq.
ICRC_CONF = "/etc/modprobe.d/sroce-icrc.conf"
JUMBO_ICRC = ("crypto", "sparse")


@pytest.fixture(scope="module")
def two_host_jumbo(rig):
    """sroce-sroce over IPv4 at netdev MTU 9000, so RoCE MTU 4096: every full
    data packet is larger than a virtio-net receive buffer and reaches sroce as
    a head plus page fragments, which it reads in place (ICRC, placement into
    memory). Loaded with icrc= JUMBO_ICRC, threaded NAPI on. (runs, {guest
    name: {counter, "icrc" or "napi_threads": value after the run}})."""
    # sroce must load afresh to read the options: the last two_host pair (rdma_rxe
    # server, sroce client) may still be set up, its module kept loaded.
    unconfigure(rig, [g for g in rig.guests if g.name not in WEDGED], "the two_host pairs")
    for g, icrc in zip(rig.guests, JUMBO_ICRC):
        g.check("ip link set eth0 mtu 9000 && echo 1 > /sys/class/net/eth0/threaded && "
                "echo 'options sroce icrc=%s' > %s" % (icrc, ICRC_CONF))
    try:
        p, runs = run_two_host(rig, ("sroce", "sroce"), ["ipv4"])
        assert p.mtu == 4096, "RoCE MTU %d at netdev MTU 9000" % p.mtu
        after = {}
        for g in rig.guests:
            if g.name not in WEDGED:
                after[g.name] = {c: hw_counter(g, "sroce", c)
                                 for c in ("rx_nonlinear", "rx_drop_icrc", "rx_packets")}
                after[g.name]["icrc"] = g.check("cat /sys/module/sroce/parameters/icrc").strip()
                after[g.name]["napi_threads"] = g.check(
                    "cat /sys/class/net/eth0/threaded; grep -l '^napi/eth0' /proc/[0-9]*/comm "
                    "2>/dev/null | wc -l").split()
        yield runs["ipv4"], after
    finally:
        unconfigure(rig, [g for g in rig.guests if g.name not in WEDGED], "sroce-sroce jumbo")
        for g in rig.guests:
            if g.name not in WEDGED:
                g.check("rm -f %s; echo 0 > /sys/class/net/eth0/threaded; "
                        "ip link set eth0 mtu 1500" % ICRC_CONF)


@pytest.mark.parametrize("case", HOST_CASES)
def test_two_host_jumbo(two_host_jumbo, case):
    judge_pair(*two_host_jumbo[0], case)


def test_two_host_jumbo_took_fragments(two_host_jumbo):
    """Requests reached the server, and READ responses the client, in page
    fragments: the cases above ran over that path."""
    runs, after = two_host_jumbo
    for run in runs:
        run.check_completed()
    assert len(after) == 2 and all(a["rx_nonlinear"] > 0 for a in after.values()), after


def test_two_host_jumbo_crossed_icrc_implementations(two_host_jumbo):
    """The module parameter reads back what each end used: a crypto driver on
    guest 0 (crc32-pclmul, or crc32-generic on a CPU without PCLMULQDQ), the
    sparse reduction on guest 1. Both took packets and dropped none for a bad
    ICRC, and the cases above passed, so each implementation's ICRCs were
    accepted by the other."""
    runs, after = two_host_jumbo
    for run in runs:
        run.check_completed()
    assert len(after) == 2, after
    g0, g1 = (after[g] for g in sorted(after))
    assert g0["icrc"] in ("crc32-pclmul", "crc32-generic"), after
    assert g1["icrc"] == "sparse", after
    for a in (g0, g1):
        assert a["rx_packets"] > 100 and a["rx_drop_icrc"] == 0, after


def test_two_host_jumbo_ran_in_napi_threads(two_host_jumbo):
    """eth0 of both guests received in its NAPI kthread (threaded NAPI), where
    sroce's receive path runs in process context with bottom halves off, and
    the cases above passed there."""
    runs, after = two_host_jumbo
    for run in runs:
        run.check_completed()
    assert len(after) == 2, after
    for a in after.values():
        assert a["napi_threads"][0] == "1" and int(a["napi_threads"][1]) >= 1, after


# ------------------------------------------------------------ the case lists

def test_case_lists_match_the_tool():
    """The lists above are the tool's own (--list needs no device: run on the host)."""
    if not os.path.exists(HOST_TOOL):
        pytest.fail("%s not built: run 'make userspace'" % HOST_TOOL)
    loop = subprocess.run([HOST_TOOL, "--list"], capture_output=True, text=True, check=True)
    host = subprocess.run([HOST_TOOL, "--list", "--client", "x"], capture_output=True, text=True,
                          check=True)
    assert loop.stdout.split() == LOOPBACK_CASES
    assert host.stdout.split() == HOST_CASES
    assert set(LOOPBACK_IPV6) <= set(LOOPBACK_CASES)
    assert set(RXE_DEVIATIONS) <= set(LOOPBACK_CASES)
