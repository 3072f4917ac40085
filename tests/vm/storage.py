# SPDX-License-Identifier: GPL-2.0
"""Helpers for the storage-over-RDMA suite (tests/vm/test_storage.py).

Every service is a context manager that sets itself up in a guest and, on the
way out, takes down exactly what it set up: configfs entries, daemons, mounts,
files, and the kernel modules that were not loaded before (GuestState). The
guests are minimal (no systemd, no udev); docs in Documentation/storage.rst
repeat the commands used here.
"""
import contextlib
import json
import os
import re
import shlex
import time

from guestrdma import module_refs, on_each, wait_for

NVME_NQN = "nqn.2026-01.org.example:sroce-nvme"
NVME_PORT = 4420
ISCSI_IQN = "iqn.2026-01.org.example:sroce-tgt"
NFS_PORT = 20049
NULLB = "sroce_nullb"           # configfs nullb name = its block device name


def host_nqn(g):
    return "nqn.2026-01.org.example:sroce-host-%s" % g.name


def host_id(g):
    return "5e7c0c5e-0000-4000-8000-%012d" % g.index


def initiator_iqn(g):
    return "iqn.2026-01.org.example:sroce-%s" % g.name


# ------------------------------------------------------------ guest state

class GuestState:
    """What a guest had before a service started: loaded modules and whether
    configfs was mounted. restore() unloads every module that came in since
    (they may have been pulled in as dependencies, in any order) and unmounts
    configfs if we mounted it; it returns the modules it could not unload."""

    def __init__(self, g):
        self.g = g
        self.mods = set(module_refs(g))
        self.configfs = g.run("mountpoint -q /sys/kernel/config").ok

    def mount_configfs(self):
        self.g.check("modprobe configfs && { mountpoint -q /sys/kernel/config || "
                     "mount -t configfs configfs /sys/kernel/config; }")

    def restore(self, settle=20):
        g = self.g
        if not self.configfs:
            g.run("mountpoint -q /sys/kernel/config && umount /sys/kernel/config; true")
        # Remove unused new modules until nothing more goes (dependencies free up
        # as their users go). After a failure, users may linger a while (an
        # interrupted mount, a connection being torn down): retry for settle s.
        # The agent reads /proc/modules and starts rmmod without a shell.
        end = time.time() + settle
        while True:
            refs = module_refs(g)
            for _ in range(30):
                unused = sorted(m for m, n in refs.items() if n == 0 and m not in self.mods)
                if not unused:
                    break
                g.run("rmmod %s" % " ".join(unused), timeout=120)
                refs = module_refs(g)
                if set(unused) <= set(refs):
                    break   # none of them went: wait for their users below
            left = sorted(set(refs) - self.mods)
            if not left or time.time() > end:
                return left
            time.sleep(2)


@contextlib.contextmanager
def guest_state(*guests):
    """Snapshot guests; on exit restore them and fail if a module stays loaded."""
    states = [GuestState(g) for g in guests]
    try:
        yield states
    finally:
        # Each guest has its own CPU: restore them side by side.
        left = dict(zip((s.g.name for s in states), on_each(lambda s: s.restore(), states)))
        left = {k: v for k, v in left.items() if v}
        assert not left, "modules left loaded after teardown: %r" % left


def kill_daemon(g, name, pidfile=None):
    """SIGTERM the process(es) named name, wait until they are gone (SIGKILL
    after 10 s). Returns True if none is left."""
    g.run("pkill -x %s; for i in $(seq 100); do pgrep -x %s >/dev/null || break; sleep 0.1; "
          "done; pkill -9 -x %s; %s true" % (name, name, name,
                                             "rm -f %s;" % pidfile if pidfile else ""))
    return g.run("pgrep -x %s" % name).rc != 0


# ------------------------------------------------------------ block devices and fio

def block_devices(g):
    """Names of g's block devices (each has a dev attribute; read by the agent)."""
    files, errors = g.read_files(pattern="/sys/block/*/dev")
    return {path.split("/")[3] for path in list(files) + list(errors)}


def ensure_dev_node(g, name):
    """/dev/NAME for block device NAME. devtmpfs normally creates it; without
    devtmpfs, make it from /sys/block/NAME/dev (there is no udev)."""
    g.check("[ -b /dev/{0} ] || {{ IFS=: read -r ma mi < /sys/block/{0}/dev && "
            "mknod /dev/{0} b $ma $mi; }}".format(name))
    return "/dev/" + name


class FioPatterns:
    """The two write-and-verify patterns run on every device: random 4 KiB writes
    (iodepth 16), then, in a separate region, sequential 128 KiB writes
    (iodepth 4). Each job writes its region once, then reads it all back and
    checks a crc32c and header in every block (--verify=crc32c). One fio
    process runs them on all devices, one job after the other (stonewall)."""

    def __init__(self, rand_bytes, seq_bytes):
        self.rand_bytes, self.seq_bytes = rand_bytes, seq_bytes

    @property
    def span(self):
        return self.rand_bytes + self.seq_bytes

    def cmd(self, devs, engine="libaio"):
        common = ("--ioengine=%s --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 "
                  "--verify_state_save=0 --output-format=json" % engine)
        jobs = []
        for dev in devs:
            name = dev.rsplit("/", 1)[-1]
            jobs.append("--name=rand4k-%s --filename=%s --stonewall --rw=randwrite --bs=4k "
                        "--iodepth=16 --offset=0 --size=%d" % (name, dev, self.rand_bytes))
            jobs.append("--name=seq128k-%s --filename=%s --stonewall --rw=write --bs=128k "
                        "--iodepth=4 --offset=%d --size=%d" % (name, dev, self.rand_bytes,
                                                               self.seq_bytes))
        return "cd /tmp && fio %s %s" % (common, " ".join(jobs))

    def expected(self, devs):
        exp = {}
        for dev in devs:
            name = dev.rsplit("/", 1)[-1]
            exp["rand4k-" + name] = self.rand_bytes
            exp["seq128k-" + name] = self.seq_bytes
        return exp


def parse_fio(r, expected):
    """Check a fio --output-format=json run: exit 0, no job error, every job
    wrote and verified (read back) exactly its size. Returns {job: (write s, read s)}."""
    assert r.rc == 0, "fio failed: %r" % r
    text = r.out[r.out.index("{"):] if "{" in r.out else r.out
    try:
        data = json.loads(text)
    except ValueError:
        raise AssertionError("fio printed no JSON: %r" % r)
    jobs = {j["jobname"]: j for j in data["jobs"]}
    assert set(jobs) == set(expected), "fio jobs %r, expected %r" % (sorted(jobs), expected)
    times = {}
    for name, size in expected.items():
        j = jobs[name]
        assert j["error"] == 0, "fio job %s: error %d (verify failure?): %r" % (name, j["error"], r)
        assert j["write"]["io_bytes"] == size, \
            "fio job %s wrote %d bytes, expected %d" % (name, j["write"]["io_bytes"], size)
        # The verify phase reads back every block written.
        assert j["read"]["io_bytes"] == size, \
            "fio job %s verified %d bytes, expected %d" % (name, j["read"]["io_bytes"], size)
        times[name] = (j["write"]["runtime"] / 1000.0, j["read"]["runtime"] / 1000.0)
    assert "verify:" not in r.err and "bad magic" not in r.err, "fio reported: %r" % r.err
    return times


def fio_verify(g, devs, patterns, timeout=300):
    """Run patterns on every device of devs in g; check the results."""
    r = g.run(patterns.cmd(devs), timeout=timeout)
    return parse_fio(r, patterns.expected(devs))


# ------------------------------------------------------------ NVMe over Fabrics

class NvmetTarget:
    """nvmet in guest g: one subsystem (any host allowed) with two namespaces,
    1 = a memory-backed null_blk disk, 2 = a file on tmpfs (buffered_io: tmpfs
    has no O_DIRECT in 6.1), exported on an RDMA port (or, with trtype="tcp", a
    TCP port: make bench's nvme-tcp baseline) at g's IPv4 address."""

    CFG = "/sys/kernel/config/nvmet"

    def __init__(self, g, size_mb=64, nqn=NVME_NQN, port_id=1, trtype="rdma"):
        self.g, self.size_mb, self.nqn, self.port_id = g, size_mb, nqn, port_id
        self.trtype = trtype
        self.file = "/run/sroce-nvmet/ns2.img"
        self.addr = g.ip4
        self.subsys = "%s/subsystems/%s" % (self.CFG, nqn)
        self.port = "%s/ports/%d" % (self.CFG, port_id)
        self.link = "%s/subsystems/%s" % (self.port, nqn)

    def setup(self, state):
        g = self.g
        state.mount_configfs()
        g.check("modprobe nvmet && modprobe nvmet-%s && modprobe null_blk nr_devices=0"
                % self.trtype)
        g.check("set -e; d=/sys/kernel/config/nullb/%s; mkdir $d; echo %d > $d/size; "
                "echo 4096 > $d/blocksize; echo 1 > $d/memory_backed; echo 1 > $d/power"
                % (NULLB, self.size_mb))
        wait_for(lambda: NULLB in block_devices(g), timeout=10, what="null_blk " + NULLB)
        nb = ensure_dev_node(g, NULLB)
        g.check("mkdir -p %s && truncate -s %dM %s" % (self.file.rsplit("/", 1)[0],
                                                        self.size_mb, self.file))
        g.check("set -e; s=%s; mkdir $s; echo 1 > $s/attr_allow_any_host; "
                "mkdir $s/namespaces/1; echo -n %s > $s/namespaces/1/device_path; "
                "echo 1 > $s/namespaces/1/enable; "
                "mkdir $s/namespaces/2; echo -n %s > $s/namespaces/2/device_path; "
                "echo 1 > $s/namespaces/2/buffered_io; echo 1 > $s/namespaces/2/enable; "
                "p=%s; mkdir $p; echo %s > $p/addr_trtype; echo ipv4 > $p/addr_adrfam; "
                "echo %s > $p/addr_traddr; echo %d > $p/addr_trsvcid"
                % (self.subsys, nb, self.file, self.port, self.trtype, self.addr, NVME_PORT))
        self.enable()

    def enable(self):
        """Link the subsystem to the port: nvmet-rdma starts listening."""
        self.g.check("ln -s %s %s" % (self.subsys, self.link))

    def disable(self):
        """Unlink it: with no subsystem left, the port stops listening and the
        target drops the hosts' queues."""
        self.g.check("rm %s" % self.link)

    def teardown(self):
        g = self.g
        g.run("rm -f %s/ports/*/subsystems/*; rmdir %s/ports/* 2>/dev/null; "
              "for n in %s/namespaces/*; do [ -d $n ] && echo 0 > $n/enable && rmdir $n; done; "
              "rmdir %s; rmdir /sys/kernel/config/nullb/%s; rm -rf /run/sroce-nvmet; true"
              % (self.CFG, self.CFG, self.subsys, self.subsys, NULLB), timeout=60)
        left = g.run("ls %s/ports %s/subsystems /sys/kernel/config/nullb 2>/dev/null"
                     % (self.CFG, self.CFG)).out.split()
        left = [x for x in left if x not in ("features",) and not x.endswith(":")]
        assert not left, "configfs entries left in %s: %r" % (g.name, left)
        g.check("modprobe -r nvmet_%s nvmet null_blk" % self.trtype)


@contextlib.contextmanager
def set_up(target, state):
    """A target (NvmetTarget, LioIserTarget, SrptTarget) set up for the with
    block and torn down after it, whatever happened."""
    try:
        target.setup(state)
        yield target
    finally:
        target.teardown()


def nvmet_target(g, state, **kw):
    return set_up(NvmetTarget(g, **kw), state)


def nvme_discover(g, target):
    out = g.check("nvme discover -t %s -a %s -s %d --hostnqn=%s --hostid=%s"
                  % (target.trtype, target.addr, NVME_PORT, host_nqn(g), host_id(g)),
                  timeout=120)
    return out


def nvme_controllers(g, nqn):
    """Names of g's fabrics controllers connected to subsystem nqn."""
    out = g.run("for c in /sys/class/nvme/nvme*; do [ -e $c/subsysnqn ] && "
                "echo ${c##*/} $(cat $c/subsysnqn); done").out
    return sorted(l.split()[0] for l in out.splitlines() if l.split()[1:] == [nqn])


def nvme_ctrl_attr(g, ctrl, attr):
    """Controller ctrl's sysfs attribute attr ("" if it cannot be read)."""
    path = "/sys/class/nvme/%s/%s" % (ctrl, attr)
    return g.read_files([path])[0].get(path, "").strip()


def nvme_namespaces(g, nqn):
    """{nsid: block device name} of the (multipath head) namespaces of nqn."""
    out = g.run("for b in /sys/block/nvme*n*; do n=${b##*/}; case $n in *c*) continue;; esac; "
                "[ \"$(cat $b/device/subsysnqn 2>/dev/null)\" = %s ] && "
                "echo $(cat $b/nsid) $n; done; true" % shlex.quote(nqn)).out
    return {int(a): b for a, b in (l.split() for l in out.splitlines())}


class NvmeHost:
    """nvme-rdma (nvme-tcp for a TCP target) in guest g, connected to target
    (short reconnect delay)."""

    def __init__(self, g, target):
        self.g, self.t = g, target
        self.ctrl = None
        self.ns = {}

    def connect(self):
        g, t = self.g, self.t
        g.check("modprobe nvme-%s" % t.trtype)
        disc = nvme_discover(g, t)
        assert re.search(r"subnqn:\s*%s" % re.escape(t.nqn), disc), disc
        assert re.search(r"trtype:\s*%s" % t.trtype, disc) and re.search(r"traddr:\s*%s\b" %
                                                                re.escape(t.addr), disc), disc
        g.check("nvme connect -t %s -n %s -a %s -s %d --hostnqn=%s --hostid=%s "
                "--reconnect-delay=1 --ctrl-loss-tmo=60"
                % (t.trtype, t.nqn, t.addr, NVME_PORT, host_nqn(g), host_id(g)), timeout=120)
        ctrls = nvme_controllers(g, t.nqn)
        assert len(ctrls) == 1, "controllers for %s: %r" % (t.nqn, ctrls)
        self.ctrl = ctrls[0]
        assert nvme_ctrl_attr(g, self.ctrl, "transport") == t.trtype
        addr = nvme_ctrl_attr(g, self.ctrl, "address")
        assert "traddr=%s" % t.addr in addr and "trsvcid=%d" % NVME_PORT in addr, addr
        # Namespaces are scanned asynchronously after connect.
        self.ns = wait_for(lambda: (lambda ns: ns if len(ns) == 2 else None)(
            nvme_namespaces(g, t.nqn)), timeout=30, what="two namespaces of " + t.nqn)
        for n, b in self.ns.items():
            ensure_dev_node(g, b)
            sectors = int(g.check("cat /sys/block/%s/size" % b))
            assert sectors * 512 == t.size_mb << 20, "%s: %d sectors" % (b, sectors)
        return self

    def state(self):
        return nvme_ctrl_attr(self.g, self.ctrl, "state")

    def disconnect(self):
        g = self.g
        r = g.run("nvme disconnect -n %s" % self.t.nqn, timeout=120)
        assert r.ok and "disconnected 1 controller" in r.out, r
        wait_for(lambda: not nvme_controllers(g, self.t.nqn), timeout=30,
                 what="controller of %s to go" % self.t.nqn)
        gone = block_devices(g) & set(self.ns.values())
        assert not gone, "namespaces still present after disconnect: %r" % gone


@contextlib.contextmanager
def nvme_host(g, target):
    h = NvmeHost(g, target)
    try:
        yield h.connect()
    finally:
        if nvme_controllers(g, target.nqn):
            h.disconnect()
        g.run("modprobe -r nvme_%s nvme_fabrics; true" % target.trtype, timeout=60)


# ------------------------------------------------------------ iSER (LIO + open-iscsi)

# LUN: (backstore kind, name); the configfs HBA directory of each kind.
LIO_BACKSTORES = {0: ("ramdisk", "sroce_rd"), 1: ("fileio", "sroce_fio")}
LIO_HBAS = {"ramdisk": "core/rd_mcp_0", "fileio": "core/fileio_1"}


class LioIserTarget:
    """LIO in guest g: a ramdisk LUN (0) and a fileio LUN (1, a file on tmpfs),
    an ACL for the initiator's IQN, and one portal on g's IPv4 address with iSER
    enabled (ib_isert).

    tool="targetcli" configures it as Documentation/storage.rst tells users to
    (targetcli-fb, which needs a D-Bus system bus); tool="configfs" writes the
    same objects into LIO's configfs tree directly, as targetcli's rtslib does.
    Both end in the same kernel objects; configfs takes well under a second
    where each targetcli process takes 12-15 s under TCG."""

    BACKSTORES = LIO_BACKSTORES
    CFS = "/sys/kernel/config/target"
    HBAS = LIO_HBAS
    # configfs directories of the backstores: core/<plugin>_<HBA index>/<name>
    SO_DIRS = {lun: "%s/%s" % (LIO_HBAS[kind], name)
               for lun, (kind, name) in LIO_BACKSTORES.items()}

    def __init__(self, g, initiator, size_mb=64, tool="targetcli"):
        assert tool in ("targetcli", "configfs"), tool
        self.g, self.initiator, self.size_mb, self.tool = g, initiator, size_mb, tool
        self.addr = g.ip4
        self.iqn = ISCSI_IQN
        self.file = "/run/sroce-lio/lun1.img"
        self.dbus = False
        self.tpg = "%s/iscsi/%s/tpgt_1" % (self.CFS, self.iqn)

    def targetcli(self, cmds, timeout=180):
        """Run targetcli commands in one process (it reads them from stdin)."""
        script = "\n".join(["set global auto_save_on_exit=false"] + cmds) + "\n"
        r = self.g.run("mkdir -p /run/sroce-lio/home && HOME=/run/sroce-lio/home targetcli "
                       "<<'EOF'\n%sEOF" % script, timeout=timeout)
        assert r.ok, r
        # targetcli exits 0 even when a command fails; it says why on stderr.
        errs = [l for l in r.err.splitlines()
                if l.strip() and not l.startswith("Warning: Could not load preferences")]
        assert not errs, "targetcli: %s\n%r" % ("; ".join(errs), r)
        return r.out

    def setup(self, state):
        g = self.g
        state.mount_configfs()
        g.check("modprobe target_core_mod && modprobe iscsi_target_mod && modprobe ib_isert")
        g.check("mkdir -p /run/sroce-lio")
        if self.tool == "targetcli":
            self.setup_targetcli()
        else:
            self.setup_configfs()
        np = "%s/np/%s:3260/iser" % (self.tpg, self.addr)
        assert g.check("cat " + np).strip() == "1", "portal has no iSER"

    def setup_targetcli(self):
        g = self.g
        # rtslib (under targetcli) asks the D-Bus system bus; there is no systemd.
        if g.run("[ -S /run/dbus/system_bus_socket ] && pgrep -x dbus-daemon").rc != 0:
            g.check("mkdir -p /run/dbus && rm -f /run/dbus/pid /run/dbus/system_bus_socket && "
                    "dbus-daemon --system --fork")
            self.dbus = True
        t = "/iscsi/%s/tpg1" % self.iqn
        out = self.targetcli([
            "/backstores/ramdisk create name=sroce_rd size=%dM" % self.size_mb,
            "/backstores/fileio create name=sroce_fio file_or_dev=%s size=%dM sparse=true "
            "write_back=false" % (self.file, self.size_mb),
            "/iscsi create %s" % self.iqn,
            "%s/luns create /backstores/ramdisk/sroce_rd lun=0" % t,
            "%s/luns create /backstores/fileio/sroce_fio lun=1" % t,
            "%s/portals delete 0.0.0.0 3260" % t,
            "%s/portals create %s 3260" % (t, self.addr),
            "%s/portals/%s:3260 enable_iser true" % (t, self.addr),
            "%s/acls create %s" % (t, self.initiator),
        ])
        assert "iSER enable now: True" in out, out

    def setup_configfs(self):
        """What the targetcli commands above make, written into configfs: each
        backstore configured ("control") and enabled, with its name as the SCSI
        model and a unit serial; the
        TPG with authentication off; LUNs linked to the backstores; the
        portal with iSER on; the ACL with each LUN mapped; the TPG enabled."""
        c, t, size = self.CFS, self.tpg, self.size_mb << 20
        rd, fio = ("%s/%s" % (c, self.SO_DIRS[i]) for i in (0, 1))
        acl = "%s/acls/%s" % (t, self.initiator)
        cmds = [
            "set -e",
            "truncate -s %d %s" % (size, self.file),
            "mkdir -p %s %s" % (rd, fio),
            "echo rd_pages=%d > %s/control" % (size // 4096, rd),
            "echo fd_dev_name=%s,fd_dev_size=%d > %s/control" % (self.file, size, fio),
            "echo %s > %s/udev_path" % (self.file, fio),
        ]
        for so in (rd, fio):
            # emulate_model_alias: the SCSI model is the backstore's name
            cmds += ["echo 1 > %s/enable" % so,
                     "echo 1 > %s/attrib/emulate_model_alias" % so,
                     "cat /proc/sys/kernel/random/uuid > %s/wwn/vpd_unit_serial" % so]
        cmds += ["mkdir -p %s" % t, "echo 0 > %s/attrib/authentication" % t]
        for lun, so in ((0, rd), (1, fio)):
            cmds += ["mkdir %s/lun/lun_%d" % (t, lun),
                     "ln -s %s %s/lun/lun_%d/%s" % (so, t, lun, os.path.basename(so))]
        cmds += ["mkdir %s/np/%s:3260" % (t, self.addr),
                 "echo 1 > %s/np/%s:3260/iser" % (t, self.addr),
                 "mkdir %s" % acl]
        for lun in (0, 1):
            cmds += ["mkdir %s/lun_%d" % (acl, lun),
                     "ln -s %s/lun/lun_%d %s/lun_%d/lun_%d" % (t, lun, acl, lun, lun)]
        cmds += ["echo 1 > %s/enable" % t]
        self.g.check("\n".join(cmds))

    def teardown_configfs(self):
        """Undo setup_configfs (and what targetcli's clearconfig undoes) in
        reverse: mapped LUNs, ACLs, LUNs, portals, the TPG and target, then
        the backstores and their HBAs."""
        c, t = self.CFS, self.tpg
        self.g.check(
            "T=%s; C=%s\n"
            "if [ -d $T ]; then\n"
            "  echo 0 > $T/enable 2>/dev/null || true\n"
            "  for m in $T/acls/*/lun_*; do [ -d $m ] || continue; "
            "find $m -maxdepth 1 -type l -delete; rmdir $m; done\n"
            "  for a in $T/acls/*; do [ -d $a ] && rmdir $a; done\n"
            "  for l in $T/lun/lun_*; do [ -d $l ] || continue; "
            "find $l -maxdepth 1 -type l -delete; rmdir $l; done\n"
            "  for n in $T/np/*; do [ -d $n ] && rmdir $n; done\n"
            "  rmdir $T %s/iscsi/%s\n"
            "fi\n"
            "for d in %s %s; do [ -d $C/$d ] && rmdir $C/$d; done\n"
            "true" % (t, c, c, self.iqn, " ".join(self.SO_DIRS.values()),
                      " ".join(self.HBAS.values())))

    def teardown(self):
        g = self.g
        try:
            # Either tool's objects are taken down through configfs, as
            # targetcli's clearconfig does (rtslib), which took 5 s under TCG.
            if g.run("[ -d %s/iscsi ]" % self.CFS).ok:
                self.teardown_configfs()
            left = g.run("ls %s/iscsi 2>/dev/null | grep ^iqn; "
                         "ls %s/core 2>/dev/null | grep -v ^alua; true"
                         % (self.CFS, self.CFS)).out
            assert not left.strip(), "LIO entries left in %s: %r" % (g.name, left)
        finally:
            # The fabric's configfs group holds a reference on iscsi_target_mod.
            g.run("rmdir %s/iscsi 2>/dev/null; rm -rf /run/sroce-lio; true" % self.CFS)
            if self.dbus:
                # It leaves its pid file behind, and refuses to start again while it exists.
                gone = kill_daemon(g, "dbus-daemon", "/run/dbus/pid /run/dbus/system_bus_socket")
            g.run("modprobe -r ib_isert iscsi_target_mod; true", timeout=60)
            assert not self.dbus or gone, "dbus-daemon still running in " + g.name


def lio_iser_target(g, initiator, state, **kw):
    return set_up(LioIserTarget(g, initiator, **kw), state)


def iscsi_sessions(g):
    """`iscsiadm -m session` lines (empty: no session)."""
    r = g.run("iscsiadm -m session")
    if r.rc == 21:      # ISCSI_ERR_NO_OBJS_FOUND: "No active sessions."
        return []
    assert r.ok, r
    return [l for l in r.out.splitlines() if l.strip()]


def iscsi_disks(g, iqn):
    """{LUN: sdX} of the SCSI disks behind sessions to target iqn."""
    out = g.run("for b in /sys/block/sd*; do [ -e $b ] || continue; "
                "d=$(readlink -f $b/device); s=${d%%/target*}; s=${s##*/}; "
                "[ \"$(cat /sys/class/iscsi_session/$s/targetname 2>/dev/null)\" = %s ] && "
                "echo ${d##*:} ${b##*/}; done; true" % shlex.quote(iqn)).out
    return {int(a): b for a, b in (l.split() for l in out.splitlines())}


class IserInitiator:
    """open-iscsi in guest g, logged in to target over the built-in "iser" iface."""

    def __init__(self, g, target):
        self.g, self.t = g, target
        self.disks = {}
        self.iscsid = False
        self.portal = "%s:3260" % target.addr

    def start(self):
        g = self.g
        # iscsid reads the initiator name from here; the host's file is not ours.
        g.check("cp -a /etc/iscsi/initiatorname.iscsi /run/sroce-initiatorname.orig 2>/dev/null; "
                "echo InitiatorName=%s > /etc/iscsi/initiatorname.iscsi" % self.t.initiator)
        g.check("modprobe ib_iser && modprobe sd_mod")
        # iscsid.conf's iscsid.startup would ask systemd; start it by hand.
        if g.run("pgrep -x iscsid").rc != 0:
            g.check("mkdir -p /run/lock/iscsi && iscsid")
            self.iscsid = True
            wait_for(lambda: g.run("iscsiadm -m session").rc in (0, 21), timeout=20,
                     what="iscsid to answer")

    def login(self):
        g, t = self.g, self.t
        # -d 4 (to stderr, which a failure shows): login, the SendTargets PDU
        # sent and every poll, should discovery time out again as it did once
        # in CI (iscsiadm then crashed with SIGSEGV, as in open-iscsi issue
        # 255 on InfiniBand hardware), not reproduced since.
        out = g.check("iscsiadm -d 4 -m discovery -t sendtargets -p %s -I iser" % self.portal,
                      timeout=120)
        assert re.search(r"^%s,1 %s$" % (re.escape(self.portal), re.escape(t.iqn)), out, re.M), out
        g.check("iscsiadm -m node -T %s -p %s -I iser --login" % (t.iqn, self.portal),
                timeout=120)
        sess = iscsi_sessions(g)
        assert len(sess) == 1 and sess[0].startswith("iser: ") and t.iqn in sess[0], sess
        self.disks = wait_for(lambda: (lambda d: d if len(d) == 2 else None)(
            iscsi_disks(g, t.iqn)), timeout=60, what="two iSER LUNs as sd disks")
        for lun, sd in self.disks.items():
            ensure_dev_node(g, sd)
            sectors = int(g.check("cat /sys/block/%s/size" % sd))
            assert sectors * 512 == t.size_mb << 20, "%s: %d sectors" % (sd, sectors)
            model = g.check("cat /sys/block/%s/device/model" % sd).strip()
            assert model == t.BACKSTORES[lun][1], "LUN %d is %s: model %r" % (lun, sd, model)
        return self

    def logout(self):
        g, t = self.g, self.t
        g.check("iscsiadm -m node -T %s -p %s -I iser --logout" % (t.iqn, self.portal),
                timeout=120)
        assert iscsi_sessions(g) == [], "session left after logout"
        wait_for(lambda: not (block_devices(g) & set(self.disks.values())), timeout=30,
                 what="iSER disks to go")

    def stop(self):
        g = self.g
        if g.run("iscsiadm -m session").ok:
            g.run("iscsiadm -m node -T %s -p %s -I iser --logout" % (self.t.iqn, self.portal),
                  timeout=120)
        g.run("iscsiadm -m node -o delete; iscsiadm -m discoverydb -t sendtargets -p %s -I iser "
              "-o delete; true" % self.portal)
        gone = True
        if self.iscsid:
            g.run("iscsiadm -k 0; true")
            gone = kill_daemon(g, "iscsid", "/run/iscsid.pid")
        g.run("[ -e /run/sroce-initiatorname.orig ] && mv /run/sroce-initiatorname.orig "
              "/etc/iscsi/initiatorname.iscsi; true")
        g.run("modprobe -r ib_iser; true", timeout=60)
        assert gone, "iscsid still running in " + g.name


@contextlib.contextmanager
def iser_initiator(g, target):
    i = IserInitiator(g, target)
    try:
        i.start()
        yield i
    finally:
        i.stop()


# ------------------------------------------------------------ SRP

SRP_PORT = 5555                 # the RDMA/CM port ib_srpt listens on


def srp_port_name(g, dev):
    """ib_srpt's name for dev's port 1: its GID 0 without the link-local prefix
    (the port GUID form, "5054:00ff:fe99:0001"), as blktests' srp suite names it."""
    gid = g.read_file("/sys/class/infiniband/%s/ports/1/gids/0" % dev).strip()
    assert gid.startswith("fe80:0000:0000:0000:"), gid
    return gid[len("fe80:0000:0000:0000:"):]


class SrptTarget:
    """LIO's SRP target (ib_srpt) in guest g on RDMA device dev: a ramdisk LUN
    (rd_mcp) behind the port named by dev's GUID, listening for RDMA/CM logins
    on SRP_PORT, and an ACL for the sessions that log in through the RDMA/CM.
    ib_srpt (6.1, 6.12) names such a session by its connection's source
    address, which on the listening side is the target's own address: the ACL
    is g's IPv4 address whoever logs in (blktests' srp suite, host and target
    on one machine, lists every local address). Written into configfs as that
    suite does."""

    CFS = "/sys/kernel/config/target"
    SO = "core/rd_mcp_0/sroce_srp"
    MODEL = "RAMDISK-MCP"

    def __init__(self, g, dev, size_mb=64):
        self.g, self.dev, self.size_mb = g, dev, size_mb
        self.addr = self.ini = g.ip4
        self.port = srp_port_name(g, dev)
        self.tpg = "%s/srpt/%s/%s" % (self.CFS, self.port, self.port)
        self.guid = None

    def setup(self, state):
        g, c, t = self.g, self.CFS, self.tpg
        state.mount_configfs()
        g.check("modprobe target_core_mod && modprobe ib_srpt")
        acl = "%s/acls/%s" % (t, self.ini)
        g.check("\n".join([
            "set -e",
            "mkdir -p %s/%s" % (c, self.SO),
            "echo rd_pages=%d > %s/%s/control" % ((self.size_mb << 20) // 4096, c, self.SO),
            "echo 1 > %s/%s/enable" % (c, self.SO),
            "mkdir -p %s/srpt" % c,
            "echo %d > %s/srpt/discovery_auth/rdma_cm_port" % (SRP_PORT, c),
            "mkdir %s/srpt/%s %s" % (c, self.port, t),
            "mkdir %s/lun/lun_0" % t,
            "ln -s %s/%s %s/lun/lun_0/sroce_srp" % (c, self.SO, t),
            "mkdir %s %s/lun_0" % (acl, acl),
            "ln -s %s/lun/lun_0 %s/lun_0/lun_0" % (t, acl),
            "echo 1 > %s/enable" % t,
        ]))
        self.guid = g.read_file("/sys/module/ib_srpt/parameters/srpt_service_guid").strip()
        assert self.guid.startswith("0x"), self.guid

    def teardown(self):
        c, t = self.CFS, self.tpg
        self.g.run(
            "C=%s; T=%s\n"
            "if [ -d $T ]; then\n"
            "  echo 0 > $T/enable\n"
            "  find $T/acls -mindepth 3 -maxdepth 3 -type l -delete\n"
            "  for m in $T/acls/*/lun_*; do [ -d $m ] && rmdir $m; done\n"
            "  for a in $T/acls/*; do [ -d $a ] && rmdir $a; done\n"
            "  rm -f $T/lun/lun_0/sroce_srp; rmdir $T/lun/lun_0 $T $C/srpt/%s\n"
            "fi\n"
            "rmdir $C/srpt 2>/dev/null\n"
            "[ -d $C/%s ] && rmdir $C/%s $(dirname $C/%s)\n"
            "true" % (c, t, self.port, self.SO, self.SO, self.SO))
        left = self.g.run("ls %s/srpt 2>/dev/null; ls %s/core 2>/dev/null | grep -v ^alua; "
                          "true" % (c, c)).out
        assert not left.strip(), "LIO entries left in %s: %r" % (self.g.name, left)


def srpt_target(g, dev, state, **kw):
    return set_up(SrptTarget(g, dev, **kw), state)


class SrpInitiator:
    """ib_srp in guest g on RDMA device dev, logged in to target through the
    RDMA/CM: the target's LUN as an sd disk."""

    def __init__(self, g, dev, target):
        self.g, self.dev, self.t = g, dev, target
        self.disk = None

    def rports(self):
        return self.g.check("ls /sys/class/srp_remote_ports 2>/dev/null; true").split()

    def login(self):
        g, t = self.g, self.t
        g.check("modprobe sd_mod && modprobe ib_srp")
        before = block_devices(g)
        gid = g.read_file("/sys/class/infiniband/%s/ports/1/gids/0" % self.dev).strip()
        g.check("echo id_ext=%s,initiator_ext=%s,ioc_guid=%s,dest=%s:%d > "
                "/sys/class/infiniband_srp/srp-%s-1/add_target"
                % (t.guid, gid.replace(":", "")[:16], t.guid, t.addr, SRP_PORT, self.dev))
        assert len(self.rports()) == 1, self.rports()
        new = wait_for(lambda: sorted(block_devices(g) - before) or None, timeout=60,
                       what="the SRP LUN as an sd disk")
        assert len(new) == 1 and new[0].startswith("sd"), new
        self.disk = new[0]
        ensure_dev_node(g, self.disk)
        sectors = int(g.check("cat /sys/block/%s/size" % self.disk))
        assert sectors * 512 == t.size_mb << 20, "%s: %d sectors" % (self.disk, sectors)
        model = g.check("cat /sys/block/%s/device/model" % self.disk).strip()
        assert model == t.MODEL, "%s: model %r" % (self.disk, model)
        return self

    def logout(self):
        g = self.g
        for p in self.rports():
            g.check("echo 1 > /sys/class/srp_remote_ports/%s/delete" % p)
        wait_for(lambda: not self.rports() and self.disk not in block_devices(g), timeout=30,
                 what="the SRP port and disk to go")

    def stop(self):
        g = self.g
        for p in self.rports():
            g.run("echo 1 > /sys/class/srp_remote_ports/%s/delete" % p)
        g.run("modprobe -r ib_srp; true", timeout=60)


@contextlib.contextmanager
def srp_initiator(g, dev, target):
    i = SrpInitiator(g, dev, target)
    try:
        yield i
    finally:
        i.stop()


# ------------------------------------------------------------ NFS over RDMA

class NfsRdmaServer:
    """knfsd in guest g exporting a tmpfs directory, listening on RDMA port
    20049 (and TCP 2049, which rpc.nfsd always opens). No systemd: rpcbind,
    exportfs, rpc.mountd and rpc.nfsd are started by hand."""

    def __init__(self, g, size_mb):
        self.g = g
        self.export = "/srv/sroce-nfs"
        self.size_mb = size_mb
        self.addr = g.ip4

    def setup(self, state):
        g = self.g
        g.check("modprobe nfsd && modprobe rpcrdma")
        g.check("mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd")
        g.check("mkdir -p %s /var/lib/nfs/v4recovery && touch /var/lib/nfs/etab "
                "/var/lib/nfs/rmtab && mount -t tmpfs -o size=%dM sroce-nfs %s"
                % (self.export, self.size_mb, self.export))
        g.check("rpcbind -w")
        g.check("exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=1 %s/24:%s"
                % (self.addr.rsplit(".", 1)[0] + ".0", self.export))
        g.check("rpc.mountd")
        # Shortest lease and grace the kernel allows (10 s), set before nfsd starts.
        g.check("echo 10 > /proc/fs/nfsd/nfsv4leasetime && echo 10 > /proc/fs/nfsd/nfsv4gracetime")
        g.check("rpc.nfsd 4", timeout=60)
        g.check("echo rdma %d > /proc/fs/nfsd/portlist" % NFS_PORT)
        ports = g.check("cat /proc/fs/nfsd/portlist")
        assert "rdma %d" % NFS_PORT in ports, ports
        # No client has state to reclaim: end the NFSv4 grace period now.
        g.check("echo Y > /proc/fs/nfsd/v4_end_grace")

    def teardown(self):
        g = self.g
        g.run("rpc.nfsd 0; exportfs -ua; true", timeout=60)
        gone = [d for d in ("rpc.mountd", "rpcbind") if kill_daemon(g, d)]
        g.run("umount /proc/fs/nfsd; umount %s; rmdir %s; rm -rf /var/lib/nfs; true"
              % (self.export, self.export))
        g.run("modprobe -r nfsd rpcrdma; true", timeout=60)
        assert len(gone) == 2, "rpc.mountd or rpcbind still running in " + g.name
        assert g.run("grep -E ' (/proc/fs/nfsd|%s) ' /proc/mounts" % self.export).rc != 0, \
            "nfsd or the export still mounted"


@contextlib.contextmanager
def nfs_rdma_server(g, state, size_mb):
    s = NfsRdmaServer(g, size_mb)
    try:
        s.setup(state)
        yield s
    finally:
        s.teardown()


NFS_MNT = "/mnt/sroce-nfs"


def nfs_mount(g, server, vers="4.2"):
    g.check("modprobe nfs && modprobe rpcrdma && mkdir -p %s" % NFS_MNT)
    # retry=0: one attempt, not mount.nfs's default of retrying for 2 minutes.
    g.check("mount -t nfs -o proto=rdma,port=%d,vers=%s,retry=0 %s:%s %s"
            % (NFS_PORT, vers, server.addr, server.export, NFS_MNT), timeout=60)
    line = g.check("grep ' %s ' /proc/mounts" % NFS_MNT)
    assert "proto=rdma" in line and "port=%d" % NFS_PORT in line and "vers=%s" % vers in line, line
    return line


def nfs_umount(g):
    g.check("umount %s" % NFS_MNT, timeout=120)
    assert g.run("grep -q ' %s ' /proc/mounts" % NFS_MNT).rc != 0


@contextlib.contextmanager
def nfs_client(g):
    try:
        yield
    finally:
        if g.run("grep -q ' %s ' /proc/mounts" % NFS_MNT).ok:
            g.run("umount -f %s || umount -l %s" % (NFS_MNT, NFS_MNT), timeout=120)
        g.run("rmdir %s; modprobe -r nfsv4 nfs rpcrdma; true" % NFS_MNT, timeout=60)


def sha256(g, path, timeout=300):
    out = g.check("sha256sum %s" % path, timeout=timeout)
    return out.split()[0]


class Stopwatch:
    def __init__(self):
        self.t0 = time.time()
        self.laps = []

    def lap(self, what):
        now = time.time()
        self.laps.append("%s %.1fs" % (what, now - self.t0))
        self.t0 = now

    def __str__(self):
        return ", ".join(self.laps)
