# SPDX-License-Identifier: GPL-2.0
"""RDMA in the rig's guests: the one set of helpers every VM suite and vm/bench.py use.

A suite says what it tests; how a guest gets its RDMA device, how a GID
index is found, how a client and a server are run against each other and
how the guest consoles are watched meanwhile is said here, once:

  configure(g, kind)            every RDMA link in g removed, one device of
                                kind ("sroce" or "rxe") added on eth0, its
                                RoCE v2 GIDs waited for: a Side (the other
                                kind's module unloaded, this kind's kept)
  configure_each(guests, kinds) configure() in all of them at once: Sides
  unload_all_rdma_links(g)      no RDMA link, sroce and rdma_rxe unloaded
  module_refs(g)                {module: use count} of what g has loaded
  del_netdevs(g, *names)        delete those of these netdevs that exist
  add_link(g, name, netdev, kind)
  gid_index(g, dev, ipv6)       the RoCE v2 GID of g's link address, now
  wait_gids(g, dev, families)   {family: index} once the GIDs are there
  client_server(srv, scmd, cli, ccmd, port)
                                server in the background, client once the
                                server listens (TCP, or rdma_cm with
                                is_listening=cm_listening): both Results
  both_ok(s, c)                 assert both ends exited 0
  console_guard(rig, what)      with-block that fails if a guest console
                                shows a kernel problem meanwhile
  wait_for(fn, timeout, what)   poll fn until it returns something true
  Capture(g, bpf, count)        with-block that records g's eth0 (dumpcap);
                                fields() decodes the file with tshark on the host
  perftest_clock_failed(*results)
                                perftest's cycle-counter calibration failed
                                in one of these runs (its figures are void)

Failures raise AssertionError (pytest reports them as failures; vm/bench.py
reports them as the kind's error). Usable without pytest: vm/bench.py puts
this directory on sys.path and imports it.
"""
import contextlib
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(REPO, "vm") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "vm"))

import rig as rigmod  # noqa: E402

# The user-space tools as the guests see the source tree (/src).
TOOLS = "/src/build/cmake/userspace/tools"
# The device each kind gets in these suites, and its module (sroce and rdma_rxe
# cannot share a guest: both bind UDP 4791).
DEVNAME = {"sroce": "sroce0", "rxe": "rxe0"}
MODULES = {"sroce": "sroce", "rxe": "rdma_rxe"}
FAMILIES = ("ipv4", "ipv6")
# ibverbs-utils pingpongs and perftest exchange QP numbers over TCP on this
# port (their default) before any RDMA traffic flows.
EXCH_PORT = 18515
# perftest calibrates its cycle counter against the clock at start; when the fit
# is poor (now and then under TCG) it warns so, and its bandwidth figures are then
# garbage (a BW average of 0), whatever the device did.
PERFTEST_CLOCK_WARNING = re.compile(r"Correlation coefficient r\^2: [\d.]+ < ")


def perftest_clock_failed(*results):
    """True if perftest warned in any of these Results that its clock calibration failed."""
    return any(PERFTEST_CLOCK_WARNING.search(r.out + r.err) for r in results)


def wait_for(fn, timeout=20, interval=0.3, what="condition"):
    """fn()'s first true value, polled every interval s; AssertionError after timeout s."""
    end = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


def loaded_build_id(g):
    """The GNU build ID of the loaded sroce module, from its ELF note in sysfs."""
    return g.check("python3 -c \"import sys; d=open('/sys/module/sroce/notes/"
                   ".note.gnu.build-id','rb').read(); n=int.from_bytes(d[0:4],'little'); "
                   "s=int.from_bytes(d[4:8],'little'); o=12+(n+3)//4*4; "
                   "print(d[o:o+s].hex())\"").strip()


# ------------------------------------------------------------ devices

def module_refs(g):
    """{module: use count} of the modules loaded in guest g, from /proc/modules
    (read by the agent: no command is started)."""
    return {f[0]: int(f[2]) for f in (ln.split() for ln in
                                      g.read_file("/proc/modules").splitlines()) if len(f) > 2}


def del_netdevs(g, *names):
    """ip link del each of the netdevs names that exists in g (the agent looks
    in sysfs first: a shell and an ip for a netdev that is not there cost
    nearly a second under TCG)."""
    files, _ = g.read_files(["/sys/class/net/%s/ifindex" % n for n in names])
    for n in names:
        if "/sys/class/net/%s/ifindex" % n in files:
            g.check("ip link del %s" % n)


def unload_all_rdma_links(g, keep=None):
    """Remove every RDMA link and unload sroce and rdma_rxe, so a test starts
    clean; with keep (a kind), that kind's module stays loaded if it is."""
    def loaded():
        return set(MODULES.values()) & set(module_refs(g))
    # Neither module loaded: no such link exists, and nothing need be started.
    was = loaded()
    if not was:
        return
    others = [m for k, m in sorted(MODULES.items()) if k != keep]
    # Unloading a module removes its devices (as "rdma link del" would), so
    # links are deleted one by one only when a module stays. Plain commands
    # (the agent starts them without a shell): under TCG each bash, awk or
    # grep started costs a tenth of a second, and this runs before most tests.
    if keep and MODULES[keep] in was:
        # "link sroce0/1 state ACTIVE ..." per port: every device once.
        devs = sorted({ln.split()[1].split("/")[0] for ln in
                       g.run("rdma link show", timeout=60).out.splitlines()
                       if ln.startswith("link ")})
        for d in devs:
            g.run("rdma link del %s" % d, timeout=120)
    for m in others:
        if m in was:
            g.run("modprobe -r %s" % m, timeout=120)
    left = sorted(loaded() & set(others))
    assert not left, "%s: modules still loaded: %s" % (g.name, " ".join(left))


def add_link(g, name="sroce0", netdev="eth0", kind="sroce"):
    """rdma link add name type kind netdev netdev (rdma_rxe must be loaded by hand)."""
    r = g.run("rdma link add %s type %s netdev %s" % (name, kind, netdev), timeout=60)
    assert r.ok, r
    return name


def sysfs(g, dev, path):
    """An attribute of RDMA device dev in guest g (read by the agent: no command)."""
    return g.read_file("/sys/class/infiniband/%s/%s" % (dev, path)).strip()


def hw_counters(g, dev="sroce0"):
    """{name: value} of port 1's hw_counters of device dev (read by the agent: no
    command), without ib_core's "lifespan" setting; {} if dev has none."""
    files, errors = g.read_files(pattern="/sys/class/infiniband/%s/ports/1/hw_counters/*" % dev)
    assert not errors, "%s: hw_counters of %s not read: %s" % (g.name, dev, errors)
    res = {}
    for path, text in files.items():
        name = path.rsplit("/", 1)[1]
        if name != "lifespan":
            try:
                res[name] = int(text)
            except ValueError:
                pass
    return res


def active_mtu(g, dev):
    """Port 1's active MTU in bytes, as ibv_devinfo reports it."""
    m = re.search(r"active_mtu:\s*(\d+)", g.check("ibv_devinfo -d %s -i 1" % dev))
    assert m, "no active_mtu for %s" % dev
    return int(m.group(1))


def gid_table(g, dev):
    """[(index, GID, type)] of every GID table entry of dev's port 1 that has a
    type (unused entries have none: reading it fails with EINVAL)."""
    port = "/sys/class/infiniband/%s/ports/1/" % dev
    if not hasattr(g, "read_files"):
        # A view of g that runs commands elsewhere (test_netns.InNs): its shell.
        out = g.check("cd %s && grep -H . gid_attrs/types/* 2>/dev/null | while IFS=: "
                      "read -r f t; do i=${f##*/}; echo $i $(cat gids/$i) $t; done" % port)
        return [(int(i), gid, t) for i, gid, t in
                (ln.split(maxsplit=2) for ln in out.splitlines() if len(ln.split()) >= 3)]
    # Two reads by the agent, no command started.
    types, _ = g.read_files(pattern=port + "gid_attrs/types/*")
    kinds = {int(p.rsplit("/", 1)[1]): t.strip() for p, t in types.items()}
    paths = {i: "%sgids/%d" % (port, i) for i in sorted(kinds)}
    gids, _ = g.read_files(paths.values())
    return [(i, gids[p].strip(), kinds[i]) for i, p in paths.items() if p in gids]


def gid_index(g, dev, ipv6=False, addr=None):
    """Index of the RoCE v2 GID for the guest's link address (IPv4-mapped or IPv6),
    or for addr (either family) if given."""
    want = ipaddress.ip_address(addr or (g.ip6 if ipv6 else g.ip4))
    table = gid_table(g, dev)
    for i, gid, kind in table:
        if "v2" not in kind:
            continue
        gid = ipaddress.ip_address(gid)
        if gid == want or gid.ipv4_mapped == want:
            return i
    raise AssertionError("%s: no RoCE v2 GID for %s on %s:\n%s" %
                         (g.name, want, dev, "\n".join("%d %s %s" % t for t in table)))


def gid_index_or_none(g, dev, addr):
    """(index,) of addr's RoCE v2 GID on dev, or None while there is none (a
    true value to wait_for)."""
    try:
        return (gid_index(g, dev, addr=addr),)
    except AssertionError:
        return None


def wait_gids(g, dev, families=FAMILIES, timeout=30):
    """{family: GID index} of dev, once ib_core has put every family's GID in the
    table (it fills the table from the netdev's addresses asynchronously)."""
    def gids():
        try:
            return {f: gid_index(g, dev, ipv6=(f == "ipv6")) for f in families}
        except AssertionError:
            return None
    return wait_for(gids, timeout=timeout,
                    what="%s: %s RoCE v2 GIDs on %s" % (g.name, " and ".join(families), dev))


class Side:
    """A guest with one RDMA device of one kind: dev, gid {family: index}, mtu."""

    def __init__(self, guest, kind, dev, gid, mtu):
        self.guest, self.kind, self.dev, self.gid, self.mtu = guest, kind, dev, gid, mtu

    def __repr__(self):
        return "%s:%s" % (self.guest.name, self.dev)


def configure(g, kind="sroce", families=FAMILIES):
    """Remove every RDMA link in g, then add the one device of kind on eth0 and
    wait for its RoCE v2 GIDs of families; returns its Side. The other kind's
    module is unloaded; this kind's stays loaded if it was (a module load and
    unload take about a second under TCG: suites unload at their end)."""
    unload_all_rdma_links(g, keep=kind)
    if kind == "rxe":
        g.check("modprobe rdma_rxe")
    dev = add_link(g, DEVNAME[kind], "eth0", kind)
    gid = wait_gids(g, dev, families)
    return Side(g, kind, dev, gid, active_mtu(g, dev))


def on_each(fn, args):
    """fn(a) for every a in args at once, one thread each (commands in
    different guests run side by side: each guest has its own CPU); the
    results in order. The first exception raised is raised again here."""
    results, errors = [None] * len(args), [None] * len(args)

    def run(i, a):
        try:
            results[i] = fn(a)
        except BaseException as e:  # raised again below, in the caller
            errors[i] = e
    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(args)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return results


def configure_each(guests, kinds, families=FAMILIES):
    """configure() in every guest at once (kinds: one kind for all, or one per
    guest): their Sides, in order."""
    if isinstance(kinds, str):
        kinds = [kinds] * len(guests)
    return on_each(lambda gk: configure(gk[0], gk[1], families), list(zip(guests, kinds)))


# ------------------------------------------------------------ consoles

@contextlib.contextmanager
def console_guard(rig, what):
    """Fail (AssertionError) if a guest console shows a kernel problem during the
    block: for fixtures' setup and teardown and for runs whose results several
    tests share, which the per-test check of conftest.py does not pin down.
    Problems that reached the consoles since the last check fail it too."""
    bad = ["(before it) " + ln for ln in rig.bad_console_lines()]
    rig.mark_consoles()
    yield
    bad += rig.console_problems()
    assert not bad, "guest console shows kernel problems while %s:\n%s" % (what, "\n".join(bad))


# ------------------------------------------------------------ packet captures

class Capture:
    """dumpcap on g's eth0 while the with-block runs (at most count packets, BPF
    filter bpf); fields(names) then gives one tuple of strings per packet.

    dumpcap, not tshark, records: under TCG it starts in about half a second,
    where tshark spends 13 s loading every dissector. The file goes to the
    guest's /tmp while it grows and then to its /out, which is the guest's
    directory on the host, where the host's tshark (the same package the
    guests see) decodes it in a fraction of the time the guest would take."""

    def __init__(self, g, bpf="udp port 4791", count=3000, iface="eth0"):
        self.g, self.name = g, "cap-%d.pcap" % time.time_ns()
        self.cmd = "exec dumpcap -q -P -i %s -c %d%s -w /tmp/%s" % (
            iface, count, " -f " + shlex.quote(bpf) if bpf else "", self.name)

    def __enter__(self):
        self.proc = self.g.spawn(self.cmd)
        wait_for(lambda: self._started() or self.proc.poll(),
                 timeout=60, interval=0.1, what="dumpcap to start")
        assert self._started(), self.proc.wait(1)
        return self

    def _started(self):
        # dumpcap writes the file's header once it captures. stat, not the
        # shell's test: a program the agent starts without a shell.
        r = self.g.run("stat -c %s /tmp/" + self.name)
        return r.ok and r.out.strip() not in ("", "0")

    def __exit__(self, *exc):
        time.sleep(1)  # what is still in flight
        self.proc.kill(signal.SIGINT)
        r = self.proc.wait(20)
        if exc[0] is None:
            assert not r.timeout, r
            self.g.check("mv /tmp/%s /out/%s" % (self.name, self.name))
        else:
            self.g.run("rm -f /tmp/" + self.name)

    def fields(self, names):
        path = os.path.join(self.g.dir, self.name)
        try:
            out = subprocess.run(["tshark", "-r", path, "-T", "fields"] +
                                 [a for n in names for a in ("-e", n)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 check=True, timeout=120, text=True).stdout
        finally:
            os.unlink(path)
        return [tuple((line.split("\t") + [""] * len(names))[:len(names)])
                for line in out.splitlines()]


# ------------------------------------------------------------ client/server traffic

def listening(g, port=EXCH_PORT):
    """True if a process in guest g listens on TCP port (checked inside g, so the
    single-connection servers of pingpong and perftest never see a probe)."""
    if not hasattr(g, "tcp_listening"):
        # A view of g that runs commands elsewhere (test_netns.InNs): its shell.
        return g.run("ss -Hltn 'sport = :%d'" % port, timeout=30).out.strip() != ""
    return g.tcp_listening(port)


def cm_ids(g):
    """The rdma_cm IDs that exist in guest g (as "rdma -j res show cm_id" gives them)."""
    out = g.run("rdma -j res show cm_id", timeout=30).out.strip()
    try:
        return json.loads(out) if out else []
    except ValueError:
        return []


def cm_listening(g, port, dev=None):
    """True if an rdma_cm ID in guest g listens on port (any address, any port
    space): rdma_cm ports are not TCP ports. A wildcard listener is in LISTEN
    state before rdma_cm has made its per-device listeners, and a connect
    request in between is rejected (invalid service ID): with dev, wait for
    the listener on that device when rdma names devices in its output."""
    ids = [i for i in cm_ids(g) if i.get("state") == "LISTEN" and
           i.get("src-addr", "").rsplit(":", 1)[-1] == str(port)]
    named = [i for i in ids if "ifname" in i or "dev" in i]
    if dev is None or not named:
        return bool(ids)
    return any(i.get("ifname", i.get("dev")) == dev for i in named)


def client_server(server, server_cmd, client, client_cmd, port=EXCH_PORT, timeout=180,
                  listen_timeout=60, is_listening=listening, before_client=None):
    """Spawn server_cmd in guest server, wait until it listens on port (as
    is_listening(guest, port) tells: a TCP listener by default), run
    client_cmd in guest client, then collect the server.

    Returns (server Result, client Result). If the port is already taken, or
    the server exits or never listens, the client is not run and its Result has
    rc -1 and says why. A server that outlives a failed client by 5 s (it may
    wait for a peer that is gone, forever) or a good one by timeout is killed
    (rc 124). before_client() is called just before the client starts."""
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
            time.sleep(0.1)
        if before_client:
            before_client()
        cli = client.run(client_cmd, timeout=timeout)
        return srv.wait(timeout if cli.ok else 5), cli
    finally:
        if srv.result is None:
            srv.kill()
            srv.wait(10)


def both_ok(s, c):
    assert c.rc == 0, "client failed: %r\nserver: %r" % (c, s)
    assert s.rc == 0, "server failed: %r\nclient: %r" % (s, c)


def pingpong_ok(s, c, iters):
    """The verdicts of an ibv_*_pingpong -c server s and client c: both exit 0
    after iters iterations, and neither printed "invalid data in page N" (the
    server checks its buffer with -c, and still exits 0 when the check fails)."""
    both_ok(s, c)
    for who, r in (("server", s), ("client", c)):
        assert "%d iters in" % iters in r.out, "%s printed no result: %r" % (who, r)
        assert "invalid data" not in r.out + r.err, "%s: data check failed: %r" % (who, r)


def wait_all(procs, timeout):
    """Results of the background Procs, all given one deadline (not timeout s each):
    those still running then are killed and get rc 124."""
    end = time.time() + timeout
    pause = rigmod.poll_pauses()
    while time.time() < end and any(p.poll() is None for p in procs):
        time.sleep(next(pause))
    return [p.poll() or p.wait(0) for p in procs]
