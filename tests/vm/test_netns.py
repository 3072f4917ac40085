# SPDX-License-Identifier: GPL-2.0
"""sroce in network namespaces, as a container uses it.

Inside guest 0, namespaces A and B are joined by a veth pair (va 10.77.0.1 /
fd77::1 in A, vb 10.77.0.2 / fd77::2 in B), and each gets an sroce device
created from inside it (sa on va, sb on vb). Everything between them crosses
the veth pair, in their namespaces: their own UDP 4791 sockets, routes and
neighbours; init_net has no sroce socket at all. The tools run inside the
namespaces (ibv_rc_pingpong and perftest exchange QP numbers over TCP there,
rping resolves addresses there).

Also: deleting a namespace under traffic removes its devices and sockets and
leaves the kernel clean (the console check), a netdev leaving its namespace
takes its device with it, ib_core's exclusive netns mode (a device is usable
only where "rdma dev set ... netns" put it), and a namespace on a macvlan of
eth0 talking to guest 1 over the real link.
"""
import re
import shlex

import pytest

from guestrdma import (client_server, pingpong_ok, gid_index, gid_index_or_none, listening,
                       unload_all_rdma_links, wait_all, wait_for)
from test_rdmacm import CM_MODULES, check_pings
from test_verbs import RESULT_ROW

NS = {"A": ("va", "sa", "10.77.0.1", "fd77::1"),
      "B": ("vb", "sb", "10.77.0.2", "fd77::2")}


class InNs:
    """Guest g as seen from inside network namespace ns: run, check and spawn
    run their command there (ip netns exec also gives it the namespace's
    /sys, so sysfs paths work as in init_net)."""

    def __init__(self, g, ns):
        self.g, self.ns, self.name = g, ns, "%s:%s" % (g.name, ns)

    def _in(self, cmd):
        return "ip netns exec %s bash -c %s" % (self.ns, shlex.quote(cmd))

    def run(self, cmd, timeout=120):
        return self.g.run(self._in(cmd), timeout=timeout)

    def check(self, cmd, timeout=120):
        return self.g.check(self._in(cmd), timeout=timeout)

    def spawn(self, cmd):
        return self.g.spawn(self._in(cmd))


def rdma_devs(g):
    return set(g.check("ls /sys/class/infiniband").split())


def sockets_4791(g):
    """The UDP sockets bound to port 4791 in g's (or an InNs') namespace."""
    return g.run("ss -Huan 'sport = :4791'").out.strip().splitlines()


def make_pair(g):
    """Namespaces A and B joined by veth, each with its sroce device made inside it."""
    g.check("ip netns add A && ip netns add B && "
            "ip link add va type veth peer name vb && "
            "ip link set va netns A && ip link set vb netns B")
    for ns, (ndev, _, ip4, ip6) in NS.items():
        g.check("ip -n {ns} link set lo up && ip -n {ns} addr add {ip4}/24 dev {nd} && "
                "ip -n {ns} -6 addr add {ip6}/64 dev {nd} nodad && "
                "ip -n {ns} link set {nd} up".format(ns=ns, nd=ndev, ip4=ip4, ip6=ip6))
    for ns, (ndev, dev, _, _) in NS.items():
        InNs(g, ns).check("rdma link add %s type sroce netdev %s" % (dev, ndev), timeout=60)


def drop_namespaces(g, devs=("sa", "sb", "sm")):
    """Delete every namespace and wait until the devices that lived in them are
    gone (namespace cleanup runs in the background)."""
    g.run("ip -all netns delete; true", timeout=60)
    wait_for(lambda: not rdma_devs(g) & set(devs), timeout=60, what="namespace devices gone")


def gid(g, ns, ipv6=False):
    ndev, dev, ip4, ip6 = NS[ns]
    return gid_index(InNs(g, ns), dev, addr=ip6 if ipv6 else ip4)


@pytest.fixture(scope="module")
def g0(rig):
    g = rig[0]
    unload_all_rdma_links(g)
    g.check("modprobe rdma_ucm")
    yield g
    drop_namespaces(g)
    g.run("rdma system set netns shared", timeout=30)
    unload_all_rdma_links(g)
    g.run("modprobe -r %s" % " ".join(CM_MODULES), timeout=60)


@pytest.fixture
def pair(g0):
    """A and B with their devices; made afresh if a test took them away."""
    if not {"sa", "sb"} <= rdma_devs(g0):
        drop_namespaces(g0)
        make_pair(g0)
    return InNs(g0, "A"), InNs(g0, "B")


def pingpong(a, b, ipv6=False, n=200):
    """RC ping-pong sb -> sa with data check, over the IPv4 or the IPv6 GIDs (the
    QP numbers go over TCP/IPv4: the server listens on IPv4 only)."""
    return client_server(
        a, "ibv_rc_pingpong -d sa -g %d -c -s 4096 -n %d" % (gid(a.g, "A", ipv6), n),
        b, "ibv_rc_pingpong -d sb -g %d -c -s 4096 -n %d %s"
        % (gid(b.g, "B", ipv6), n, NS["A"][2]), timeout=120)


def assert_pingpong_ok(srv, cli, n=200):
    pingpong_ok(srv, cli, n)


# ------------------------------------------------------------ shared mode

def test_devices_and_sockets_live_in_their_namespace(pair):
    a, b = pair
    g = a.g
    assert g.check("rdma system show netns").split()[1] == "shared"
    for side, (ndev, dev, ip4, _) in zip((a, b), NS.values()):
        link = side.check("rdma link show %s/1" % dev)
        assert "state ACTIVE" in link and "netdev %s" % ndev in link, link
        assert gid(g, side.ns) >= 0
        socks = sockets_4791(side)
        assert len(socks) == 2, socks        # IPv4 and IPv6 (v6only)
    # nothing of sroce's in init_net
    assert sockets_4791(g) == [], sockets_4791(g)


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_rc_pingpong_between_namespaces(pair, ipv6):
    # the packets go through the veth pair, not the loopback shortcut (ib_core
    # shows hw_counters in init_net only)
    a, _ = pair
    counts = ("cat /sys/class/infiniband/sa/ports/1/hw_counters/rx_packets",
              "cat /sys/class/net/va/statistics/rx_packets")
    before = [int(a.g.check(counts[0])), int(a.check(counts[1]))]
    assert_pingpong_ok(*pingpong(*pair, ipv6=ipv6))
    after = [int(a.g.check(counts[0])), int(a.check(counts[1]))]
    grew = [y - x for x, y in zip(before, after)]
    assert grew[0] >= 200 and grew[1] >= 200, "sa and va received %s packets" % grew


@pytest.mark.parametrize("tool,args,size", [
    ("ib_write_bw", "-s 65536 -n 200 --report_gbits", 65536),
    ("ib_send_lat", "-s 2 -n 200", 2),
], ids=["write_bw", "send_lat"])
def test_perftest_between_namespaces(pair, tool, args, size):
    a, b = pair
    srv, cli = client_server(
        a, "%s -d sa -x %d %s" % (tool, gid(a.g, "A"), args),
        b, "%s -d sb -x %d %s %s" % (tool, gid(b.g, "B"), args, NS["A"][2]), timeout=120)
    assert srv.ok and cli.ok, (srv, cli)
    assert re.search(RESULT_ROW % size, cli.out, re.M), cli


def cm_listening(side, port):
    return any("LISTEN" in ln and (":%d " % port) in ln + " "
               for ln in side.run("rdma res show cm_id").out.splitlines())


def test_rping_between_namespaces(pair):
    """rdma_cm resolves addresses and routes in the caller's namespace."""
    a, b = pair
    port, count, size = 7175, 3, 4096
    flags = "-p %d -v -C %d -S %d" % (port, count, size)
    srv, cli = client_server(a, "rping -s -a %s %s" % (NS["A"][2], flags),
                             b, "rping -c -a %s -V %s" % (NS["A"][2], flags),
                             port=port, timeout=120, listen_timeout=30,
                             is_listening=cm_listening)
    assert srv.ok and cli.ok, (srv, cli)
    check_pings("client", cli, "ping data: ", size, count)
    check_pings("server", srv, "server ping data: ", size, count)


def test_delete_namespace_under_traffic(pair):
    """ib_write_bw between sa and sb, run from init_net (in shared mode every
    namespace sees every device) so that nothing pins namespace A; then A is
    deleted. Its veth goes, and with it its peer in B: both devices are
    unregistered, the applications lose them, both namespaces' sockets close,
    and new devices carry traffic again."""
    a, b = pair
    g = a.g
    port = 18620
    flags = "-s 65536 -n 1000000 -p %d" % port
    procs = []
    try:
        procs.append(g.spawn("ib_write_bw -d sa -x %d %s" % (gid(g, "A"), flags)))
        wait_for(lambda: listening(g, port), timeout=60,
                 what="ib_write_bw listening")
        procs.append(g.spawn("ib_write_bw -d sb -x %d %s 127.0.0.1" % (gid(g, "B"), flags)))

        def tx():
            return int(g.read_file("/sys/class/infiniband/sb/ports/1/hw_counters/tx_packets"))
        start = tx()
        wait_for(lambda: tx() > start + 1000, timeout=60, what="traffic sb -> sa")
        g.check("ip netns del A", timeout=60)
        wait_for(lambda: not rdma_devs(g) & {"sa", "sb"}, timeout=60,
                 what="sa and sb unregistered")
        # perftest never reads the fatal event: whatever ends by itself must
        # not claim success, the rest is killed
        results, procs = wait_all(procs, timeout=10), []
        for r in results:
            if not r.timeout:
                assert r.rc != 0, r
        assert sockets_4791(b) == [], sockets_4791(b)
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
    dmesg = g.check("dmesg")
    assert "unregister_netdevice: waiting" not in dmesg, dmesg[-3000:]
    drop_namespaces(g)
    make_pair(g)
    assert_pingpong_ok(*pingpong(InNs(g, "A"), InNs(g, "B"), n=50), n=50)


def test_netdev_leaving_namespace_takes_its_device(pair):
    """A netdev moved out of its namespace is unregistered there first: its
    device goes, and with the namespace's last device its sockets."""
    a, _ = pair
    g = a.g
    g.check("ip netns add C && ip -n C link add d0 type dummy && ip -n C link set d0 up")
    c = InNs(g, "C")
    c.check("rdma link add sc type sroce netdev d0")
    assert len(sockets_4791(c)) == 2
    g.check("ip -n C link set d0 netns 1")     # to init_net (PID 1's namespace)
    wait_for(lambda: "sc" not in rdma_devs(g), what="sc unregistered")
    assert sockets_4791(c) == [] and sockets_4791(g) == []
    g.check("ip link del d0 && ip netns del C")
    # A's and B's devices were not disturbed
    assert {"sa", "sb"} <= rdma_devs(g)


def test_link_added_right_after_its_netdev_moved(pair):
    """A container script's pattern: move a netdev into a namespace and add a
    link on it there at once, then back, 20 round trips with no pause. Each
    move unregisters the device the netdev leaves behind (queued when the
    netdev goes); the new link must not meet it (EEXIST) nor wait for ever."""
    a, _ = pair
    g = a.g
    g.check("ip netns add C && ip link add d0 type dummy && ip link set d0 up")
    try:
        r = g.run("rdma link add sd type sroce netdev d0 && for i in $(seq 20); do "
                  "ip link set d0 netns C && "
                  "ip netns exec C rdma link add sc type sroce netdev d0 || exit 1; "
                  "ip -n C link set d0 netns 1 && "
                  "rdma link add sd type sroce netdev d0 || exit 2; done", timeout=300)
        assert r.ok, r
        wait_for(lambda: "sc" not in rdma_devs(g), what="sc unregistered")
        assert "sd" in rdma_devs(g)
    finally:
        g.run("rdma link del sd; ip link del d0; ip -n C link del d0; ip netns del C")
    assert {"sa", "sb"} <= rdma_devs(g)


def test_rxe_in_init_net_leaves_namespaces_alone(g0):
    """rdma_rxe binds port 4791 in init_net only: sroce in other namespaces
    still opens its sockets and works; in init_net the port stays rxe's."""
    drop_namespaces(g0)
    g0.check("modprobe rdma_rxe")
    try:
        make_pair(g0)
        assert_pingpong_ok(*pingpong(InNs(g0, "A"), InNs(g0, "B"), n=50), n=50)
        r = g0.run("rdma link add sroce0 type sroce netdev eth0")
        assert r.rc != 0 and "Address already in use" in r.err, r
    finally:
        drop_namespaces(g0)
        g0.run("modprobe -r rdma_rxe", timeout=60)


# ------------------------------------------------------------ exclusive mode

def set_netns_mode(g, mode):
    """ib_core switches only while init_net is the only namespace: retry while
    deleted ones are still being cleaned up."""
    wait_for(lambda: g.run("rdma system set netns %s" % mode).ok, timeout=60,
             what="rdma system set netns " + mode)


def test_exclusive_mode(g0):
    """With "rdma system set netns exclusive" a device is visible and usable only
    in the namespace ib_core says it is in: init_net when created (also from
    inside a namespace), then wherever "rdma dev set DEV netns NS" puts it."""
    g = g0
    drop_namespaces(g)
    set_netns_mode(g, "exclusive")
    try:
        make_pair(g)
        a, b = InNs(g, "A"), InNs(g, "B")
        assert {"sa", "sb"} <= rdma_devs(g)
        assert not rdma_devs(a) & {"sa", "sb"}
        g.check("rdma dev set sa netns A && rdma dev set sb netns B")
        assert not rdma_devs(g) & {"sa", "sb"}
        assert rdma_devs(a) & {"sa", "sb"} == {"sa"}
        assert rdma_devs(b) & {"sa", "sb"} == {"sb"}
        assert "sb" not in a.check("ibv_devices")
        assert_pingpong_ok(*pingpong(a, b, n=50), n=50)
        # B cannot use A's device
        r = b.run("ibv_rc_pingpong -d sa -g 1 -n 1 %s" % NS["A"][2], timeout=30)
        assert r.rc != 0 and "IB device sa not found" in r.err, r
        drop_namespaces(g)
    finally:
        drop_namespaces(g)
        set_netns_mode(g, "shared")


# ------------------------------------------------------------ a real link

def test_namespace_on_macvlan_talks_to_other_guest(rig, g0):
    """A container's macvlan of eth0, with its own sroce device, next to sroce0
    on eth0 itself in init_net: two namespaces' sockets on one guest, and
    guest 1 reaches both over the real link."""
    g1 = rig[1]
    drop_namespaces(g0)
    unload_all_rdma_links(g1)
    addr = "10.99.0.11"
    g0.check("ip netns add M && ip link add m0 link eth0 type macvlan mode bridge && "
             "ip link set m0 netns M && ip -n M addr add %s/24 dev m0 && "
             "ip -n M link set lo up && ip -n M link set m0 up" % addr)
    m = InNs(g0, "M")
    try:
        m.check("rdma link add sm type sroce netdev m0")
        g0.check("rdma link add sroce0 type sroce netdev eth0")
        g1.check("rdma link add sroce0 type sroce netdev eth0")
        wait_for(lambda: g1.run("ping -c1 -W1 %s" % addr).ok, timeout=30, what="ping")
        for srv_side, dev, dst in ((m, "sm", addr), (g0, "sroce0", g0.ip4)):
            srv, cli = client_server(
                srv_side, "ibv_rc_pingpong -d %s -g %d -c -s 4096 -n 100"
                % (dev, gid_index(srv_side, dev, addr=dst)),
                g1, "ibv_rc_pingpong -d sroce0 -g %d -c -s 4096 -n 100 %s"
                % (gid_index(g1, "sroce0"), dst), timeout=120)
            assert_pingpong_ok(srv, cli, n=100)
    finally:
        drop_namespaces(g0)
        unload_all_rdma_links(g0)
        unload_all_rdma_links(g1)


def test_container_address_is_the_container_device_gid_only(rig, g0):
    """sroce0 on eth0 first, then a container's macvlan of eth0 with its own
    sroce device. ib_core offers the macvlan's address to sroce0 too (an upper
    device's, whatever its namespace); sroce0 refuses it, since it can neither
    route nor receive for it, so only sm has it. rdma_cm in the container,
    told no device, then binds sm and an rping from guest 1 to the container's
    address runs (with the GID on sroce0, registered first, rdma_cm took
    sroce0 and the connection was rejected)."""
    g1 = rig[1]
    drop_namespaces(g0)
    unload_all_rdma_links(g1)
    addr, port, count, size = "10.99.0.12", 7176, 3, 4096
    try:
        g1.check("modprobe rdma_ucm")
        g0.check("rdma link add sroce0 type sroce netdev eth0")
        g1.check("rdma link add sroce0 type sroce netdev eth0")
        g0.check("ip netns add M && ip link add m0 link eth0 type macvlan mode bridge && "
                 "ip link set m0 netns M && ip -n M addr add %s/24 dev m0 && "
                 "ip -n M link set lo up && ip -n M link set m0 up" % addr)
        m = InNs(g0, "M")
        m.check("rdma link add sm type sroce netdev m0")
        wait_for(lambda: g1.run("ping -c1 -W1 %s" % addr).ok, timeout=30, what="ping")
        wait_for(lambda: gid_index_or_none(m, "sm", addr), timeout=30, what="the address on sm")
        assert gid_index_or_none(g0, "sroce0", addr) is None, \
            g0.run("grep -H . /sys/class/infiniband/sroce0/ports/1/gids/* | grep -v ':0000:'").out
        flags = "-p %d -v -C %d -S %d" % (port, count, size)
        srv, cli = client_server(m, "rping -s -a %s %s" % (addr, flags),
                                 g1, "rping -c -a %s -V %s" % (addr, flags),
                                 port=port, timeout=120, listen_timeout=30,
                                 is_listening=cm_listening)
        assert srv.ok and cli.ok, (srv, cli)
        check_pings("client", cli, "ping data: ", size, count)
        check_pings("server", srv, "server ping data: ", size, count)
    finally:
        drop_namespaces(g0)
        unload_all_rdma_links(g0)
        unload_all_rdma_links(g1)
        g1.run("modprobe -r %s" % " ".join(CM_MODULES), timeout=60)


def test_gid_of_an_upper_macvlan_carries_traffic(rig, g0):
    """A macvlan of eth0 in init_net with an address of its own and no sroce
    device: ib_core puts its address into sroce0's GID table (as for a VLAN),
    and an RC ping-pong between the two guests' macvlan GIDs on sroce0 runs.
    The packets arrive with the macvlan as their netdev, which the receive path
    maps back to sroce0 through its lower devices."""
    g1 = rig[1]
    drop_namespaces(g0)
    guests = ((g0, "10.99.3.1"), (g1, "10.99.3.2"))
    try:
        for g, addr in guests:
            unload_all_rdma_links(g)
            g.check("ip link add up0 link eth0 type macvlan mode bridge && "
                    "ip addr add %s/24 dev up0 && ip link set up0 up" % addr)
            g.check("rdma link add sroce0 type sroce netdev eth0")
        wait_for(lambda: g1.run("ping -c1 -W1 -I up0 10.99.3.1").ok, timeout=30,
                 what="ping between the macvlans")
        idx = [wait_for(lambda g=g, a=addr: gid_index_or_none(g, "sroce0", a), timeout=30,
                        what="%s: the macvlan's GID on sroce0" % g.name)[0]
               for g, addr in guests]
        before = int(g0.read_file("/sys/class/infiniband/sroce0/ports/1/hw_counters/"
                                  "rx_packets"))
        srv, cli = client_server(
            g0, "ibv_rc_pingpong -d sroce0 -g %d -c -s 4096 -n 100" % idx[0],
            g1, "ibv_rc_pingpong -d sroce0 -g %d -c -s 4096 -n 100 10.99.3.1" % idx[1],
            timeout=120)
        assert_pingpong_ok(srv, cli, n=100)
        after = int(g0.read_file("/sys/class/infiniband/sroce0/ports/1/hw_counters/"
                                 "rx_packets"))
        assert after - before >= 100, (before, after)
    finally:
        for g, _ in guests:
            unload_all_rdma_links(g)
            g.run("ip link del up0 2>/dev/null; true")


def test_gid_of_an_upper_bridge_belongs_to_the_one_device_below_it(g0):
    """A bridge over two veth ports, its address on the bridge, a peer in a
    namespace behind one port. With an sroce device on one port only, RC
    traffic to the bridge's GID reaches it; with a second sroce device on the
    other port both tables hold that GID, a packet cannot be told apart, and
    it is dropped rather than handed to the wrong device."""
    g = g0
    drop_namespaces(g)
    unload_all_rdma_links(g)
    p = InNs(g, "P")
    try:
        g.check("ip netns add P && ip link add vp0 type veth peer name vp1 && "
                "ip link add vq0 type veth peer name vq1 && ip link set vp0 netns P && "
                "ip -n P addr add 10.98.0.2/24 dev vp0 && ip -n P link set vp0 up && "
                "ip -n P link set lo up && ip link add br9 type bridge && "
                "ip link set vp1 master br9 && ip link set vq1 master br9 && "
                "ip link set vp1 up && ip link set vq1 up && ip link set vq0 up && "
                "ip addr add 10.98.0.1/24 dev br9 && ip link set br9 up")
        g.check("rdma link add s1 type sroce netdev vp1")
        p.check("rdma link add sp type sroce netdev vp0")
        wait_for(lambda: p.run("ping -c1 -W1 10.98.0.1").ok, timeout=30, what="ping")

        def pingpong(timeout):
            srv_gid = wait_for(lambda: gid_index_or_none(g, "s1", "10.98.0.1"), timeout=30,
                               what="the bridge's GID on s1")[0]
            cli_gid = gid_index(p, "sp", addr="10.98.0.2")
            return client_server(
                g, "ibv_rc_pingpong -d s1 -g %d -c -n 20" % srv_gid,
                p, "ibv_rc_pingpong -d sp -g %d -c -n 20 10.98.0.1" % cli_gid,
                timeout=timeout)

        srv, cli = pingpong(120)
        assert_pingpong_ok(srv, cli, n=20)

        g.check("rdma link add s2 type sroce netdev vq1")
        wait_for(lambda: gid_index_or_none(g, "s2", "10.98.0.1"), timeout=30,
                 what="the bridge's GID on s2 too")
        rx = "/sys/class/infiniband/%s/ports/1/hw_counters/rx_packets"
        before = [int(g.read_file(rx % d)) for d in ("s1", "s2")]
        srv, cli = pingpong(60)
        assert not cli.ok and "retry counter exceeded" in cli.err, cli
        # The client's requests reached neither device (the server's own
        # packets to the client are not counted here).
        after = [int(g.read_file(rx % d)) for d in ("s1", "s2")]
        assert after == before, (before, after)
    finally:
        drop_namespaces(g, devs=("sp",))
        unload_all_rdma_links(g)
        g.run("ip link del br9; ip link del vq0; ip link del vp1; true")


def restore_eth0(g, mtu):
    """eth0 back in init_net after its namespace went: ib_core-style fallback
    name (devN), addresses lost; set it up as the guest's init did."""
    name = g.check("ip -o link | awk -F': ' '/%s/ {print $2}'" % g.mac).strip().split("@")[0]
    if name != "eth0":
        g.check("ip link set %s name eth0" % name)
    g.run("ip addr add %s/24 dev eth0; ip -6 addr add %s/64 dev eth0 nodad; true"
          % (g.ip4, g.ip6))
    g.check("ip link set eth0 mtu %d up" % mtu)


def test_nic_moved_into_namespace(rig, g0):
    """Guest 1's NIC itself in a namespace, with an sroce device made there,
    talks to sroce0 in guest 0. Deleting the namespace returns the NIC to
    init_net (it is not destroyed, so the device's unregistration is still
    queued when the namespace's exit runs, which waits for it), also while a
    process in init_net holds the device open."""
    g1 = rig[1]
    drop_namespaces(g0)
    unload_all_rdma_links(g0)
    unload_all_rdma_links(g1)
    n = InNs(g1, "N")
    holder = None
    try:
        g1.check("ip netns add N && ip link set eth0 netns N")
        n.check("ip link set lo up && ip addr add %s/24 dev eth0 && "
                "ip -6 addr add %s/64 dev eth0 nodad && ip link set eth0 mtu %d up"
                % (g1.ip4, g1.ip6, rig.mtu))
        n.check("rdma link add sn type sroce netdev eth0")
        g0.check("rdma link add sroce0 type sroce netdev eth0")
        wait_for(lambda: n.run("ping -c1 -W1 %s" % g0.ip4).ok, timeout=30, what="ping")
        srv, cli = client_server(
            g0, "ibv_rc_pingpong -d sroce0 -g %d -c -s 4096 -n 100" % gid_index(g0, "sroce0"),
            n, "ibv_rc_pingpong -d sn -g %d -c -s 4096 -n 100 %s"
            % (gid_index(n, "sn", addr=g1.ip4), g0.ip4), timeout=120)
        assert_pingpong_ok(srv, cli, n=100)
        # a server in init_net with sn open (QP created) waits for a peer
        holder = g1.spawn("ibv_rc_pingpong -d sn -g %d -p 18640"
                          % gid_index(n, "sn", addr=g1.ip4))
        wait_for(lambda: listening(g1, 18640), timeout=30,
                 what="holder listening")
        g1.check("ip netns del N")
        wait_for(lambda: "sn" not in rdma_devs(g1), timeout=60, what="sn unregistered")
        assert sockets_4791(g1) == []
    finally:
        if holder:
            holder.kill()
            holder.wait(10)
        g1.run("ip netns del N 2>/dev/null; true")
        wait_for(lambda: g1.run("ip link show eth0 || ip -o link | grep -q %s" % g1.mac).ok,
                 timeout=60, what="eth0 back in init_net")
        restore_eth0(g1, rig.mtu)
        unload_all_rdma_links(g0)
    # guest 1's link is whole again and its sroce0 works
    g1.check("rdma link add sroce0 type sroce netdev eth0")
    wait_for(lambda: g1.run("ping -c1 -W1 %s" % g0.ip4).ok, timeout=30, what="ping")
    g0.check("rdma link add sroce0 type sroce netdev eth0")
    srv, cli = client_server(
        g0, "ibv_rc_pingpong -d sroce0 -g %d -c -n 20" % gid_index(g0, "sroce0"),
        g1, "ibv_rc_pingpong -d sroce0 -g %d -c -n 20 %s" % (gid_index(g1, "sroce0"), g0.ip4))
    assert_pingpong_ok(srv, cli, n=20)
    unload_all_rdma_links(g0)
    unload_all_rdma_links(g1)
