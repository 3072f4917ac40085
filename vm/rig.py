#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The sroce QEMU rig: boots Debian kernels in guests joined by one Ethernet link.

Each guest boots a Debian kernel image from /boot with a small busybox
initramfs that mounts the host's /usr and /etc read-only over 9p, overlays
them with tmpfs and switches to vm/guest/init.sh. Guests are joined by QEMU
"-netdev stream" over unix sockets (two guests directly, more through a hub
process on the host). Tests talk to each guest through an agent on a
virtio-serial port (vm/guest/agent.py).

Library use (pytest fixtures):   rig = Rig(guests=2); rig.start(); rig[0].run("...")
Command line:                    vm/rig.py --guests 2 --script demo.sh
"""
import argparse
import glob
import hashlib
import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(REPO, "build")
NET4_PREFIX = "10.99.0"
NET6_PREFIX = "fd99"

# Console lines that fail the test that ran: guest consoles are evidence.
BAD_CONSOLE = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"lockdep|soft lockup|hard LOCKUP|blocked for more than|hung_task|"
    r"UBSAN:|KASAN:|kernel BUG|Call Trace:|list_add corruption|list_del corruption|"
    r"Poison overwritten|Redzone|Object padding|slab_out_of_bounds|"
    r"rcu_sched detected stall|rcu: INFO:")

HUNG_TASK = re.compile(r"blocked for more than")

# A report that BAD_CONSOLE finds by its first line; the failure shows it whole:
# the line before (a WARN's own message, e.g. which workqueue flushed which) and
# what follows up to its end marker (registers, modules, the call trace).
REPORT_HEAD = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|kernel BUG|UBSAN:|KASAN:|"
    r"possible circular locking|possible recursive locking|inconsistent lock state")
REPORT_END = re.compile(r"---\[ end trace")
REPORT_LINES = 60

# The one report that does not fail a test when the kernel that made it had no
# sroce loaded (its "Modules linked in:" line lacks sroce, no frame names it):
# the workqueue's flush-order check (a WQ_MEM_RECLAIM worker flushing a work
# item of a queue without it), which the Debian 6.12 kernel's own code trips in
# the guest that runs rdma_rxe as an interop peer (Documentation/rig.rst, Evidence).
# It is shown as a warning of the test instead.
FOREIGN_REPORT = re.compile(r"WARNING: .* at kernel/workqueue\.c:\d+ check_flush_dependency")

STAGE1_MODULES = ["virtio_pci", "virtio_net", "virtio_console", "9pnet_virtio", "9p",
                  "overlay"]


class RigError(Exception):
    pass


class AgentClosed(RigError):
    """The agent's socket reached EOF."""


# Boots that failed because a guest's QEMU exited before its agent answered,
# and were tried once more (Rig.start): the reports, for a test session's
# summary.
BOOT_REPORTS = []


# SROCE_RIG_TRACE=FILE: every agent request is appended to FILE as a JSON line
# (guest, op, command, when it was sent, seconds to the answer, the pytest test
# running): where a suite's time goes.
TRACE = os.environ.get("SROCE_RIG_TRACE")


def default_kver():
    """The kernel the Makefile defaults to (scripts/default-kver.sh: the newest kernel
    with headers); it needs /boot/vmlinuz-K."""
    k = subprocess.run([os.path.join(REPO, "scripts", "default-kver.sh")], check=True,
                       capture_output=True, text=True).stdout.strip()
    if not k or not os.path.exists("/boot/vmlinuz-" + k):
        raise RigError("no kernel with /boot/vmlinuz-K and /lib/modules/K/build; "
                       "run scripts/install-deps.sh")
    return k


# ---------------------------------------------------------------- accelerator

_BOOT_SECTOR = bytes([0xB0, 0x42,        # mov al, 0x42
                      0xE6, 0xF4,        # out 0xf4, al  (isa-debug-exit)
                      0xF4,              # hlt
                      0xEB, 0xFD])       # jmp back to hlt


_kvm_verdicts = {}


def _kvm_internal_error(path):
    """QEMU's output in path reports a KVM internal error (QEMU then pauses the guest)."""
    try:
        with open(path, "rb") as f:
            return b"KVM internal error" in f.read()
    except OSError:
        return False


def _kvm_runs_boot_sector(timeout):
    """A boot sector that writes to isa-debug-exit must make QEMU exit with 133."""
    with tempfile.TemporaryDirectory() as d:
        img = os.path.join(d, "boot.img")
        with open(img, "wb") as f:
            f.write(_BOOT_SECTOR.ljust(510, b"\0") + b"\x55\xaa")
        cmd = ["qemu-system-x86_64", "-accel", "kvm", "-display", "none", "-nodefaults",
               "-no-user-config", "-cpu", "host", "-m", "64", "-drive", "file=%s,format=raw,if=floppy" % img,
               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
        try:
            p = subprocess.run(cmd, timeout=timeout, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False
        return p.returncode == ((0x42 << 1) | 1)


def _kvm_runs_kernel(kernel, timeout):
    """The guest kernel itself, without an initramfs, must get as far as its
    panic for want of a root file system (panic=-1 and -no-reboot make QEMU
    exit then). Stops early when QEMU reports a KVM internal error (it pauses
    the guest and would wait for the timeout)."""
    with tempfile.TemporaryDirectory() as d:
        serial, err = os.path.join(d, "serial"), os.path.join(d, "err")
        cmd = ["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-m", "256",
               "-display", "none", "-nodefaults", "-no-user-config", "-no-reboot",
               "-kernel", kernel, "-append", "console=ttyS0 panic=-1 loglevel=4",
               "-serial", "file:" + serial]
        with open(err, "wb") as ef:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef,
                                 start_new_session=True)
        deadline = time.time() + timeout
        try:
            while (p.poll() is None and time.time() < deadline and
                   not _kvm_internal_error(err)):
                time.sleep(0.1)
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()
        try:
            with open(serial, "rb") as f:
                out = f.read()
        except OSError:
            out = b""
        return p.returncode == 0 and b"Kernel panic" in out


def probe_kvm(kernel=None, timeout=4.0):
    """True if KVM with the host CPU model really runs code here, quickly.

    Nested KVM may hang, abort (MSR errors with -cpu host) or crawl: a boot
    sector that writes to isa-debug-exit must make QEMU exit within timeout.
    It may also run a boot sector and fail on the guest kernel (QEMU: "KVM
    internal error", emulation failure in the decompressor): with kernel
    given, that image must boot to its no-root panic within 15 s as well
    (TCG gets there in about 8 s; nested KVM has hung there silently).
    One verdict per kernel and process. SROCE_ACCEL=kvm|tcg overrides the probe."""
    if os.environ.get("SROCE_ACCEL") in ("kvm", "tcg"):
        return os.environ["SROCE_ACCEL"] == "kvm"
    if kernel in _kvm_verdicts:
        return _kvm_verdicts[kernel]
    ok = os.access("/dev/kvm", os.R_OK | os.W_OK) and _kvm_runs_boot_sector(timeout)
    if ok and kernel:
        ok = _kvm_runs_kernel(kernel, 15.0)
    _kvm_verdicts[kernel] = ok
    return ok


def kvm_failed(kernel):
    """A guest of kernel failed under KVM: the rest of this process uses TCG for it."""
    _kvm_verdicts[kernel] = False


# ---------------------------------------------------------------- initramfs

STAGE1_INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.list); do insmod /modules/$m || echo "stage1: insmod $m failed"; done
o9p=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /newroot
mount -t tmpfs -o mode=0755 rootfs /newroot
cd /newroot
mkdir -p .ro/usr .ro/etc .rw/usr .rw/usrw .rw/etc .rw/etcw usr etc proc sys dev src out root mnt var/tmp
chmod 1777 var/tmp
mount -t 9p -o $o9p,ro,cache=loose usr .ro/usr || exec sh
mount -t 9p -o $o9p,ro,cache=loose hostetc .ro/etc || exec sh
mount -t overlay -o lowerdir=.ro/usr,upperdir=.rw/usr,workdir=.rw/usrw overlay usr || exec sh
mount -t overlay -o lowerdir=.ro/etc,upperdir=.rw/etc,workdir=.rw/etcw overlay etc || exec sh
mount -t 9p -o $o9p,ro src src || exec sh
mount -t 9p -o $o9p out out || exec sh
ln -s usr/bin bin; ln -s usr/sbin sbin; ln -s usr/lib lib; ln -s usr/lib64 lib64
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /src/vm/guest/init.sh
"""


def _module_files(kver, names):
    """Module files to insmod, dependencies first (resolved from the host's modules.dep)."""
    files = []
    for n in names:
        out = subprocess.run(["modprobe", "-S", kver, "--show-depends", n], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "insmod" and parts[1] not in files:
                files.append(parts[1])
    return files


def build_initramfs(kver, outdir=None):
    """Build (or reuse) the stage-1 initramfs for kver; returns its path."""
    outdir = outdir or os.path.join(BUILD, "vm")
    os.makedirs(outdir, exist_ok=True)
    busybox = shutil.which("busybox") or "/bin/busybox"
    mods = _module_files(kver, STAGE1_MODULES)
    h = hashlib.sha256()
    h.update(STAGE1_INIT.encode())
    for f in [busybox] + mods:
        st = os.stat(f)
        h.update(("%s %d %d\n" % (f, st.st_size, st.st_mtime)).encode())
    path = os.path.join(outdir, "initramfs-%s-%s.cpio.gz" % (kver, h.hexdigest()[:12]))
    if os.path.exists(path):
        return path
    with tempfile.TemporaryDirectory() as root:
        for d in ("bin", "proc", "sys", "dev", "modules", "newroot"):
            os.makedirs(os.path.join(root, d))
        shutil.copy2(busybox, os.path.join(root, "bin", "busybox"))
        names = []
        for f in mods:
            base = os.path.basename(f)
            dst = os.path.join(root, "modules", base)
            if base.endswith(".xz"):
                with open(dst[:-3], "wb") as o:
                    subprocess.run(["xz", "-dc", f], stdout=o, check=True)
                base = base[:-3]
            elif base.endswith(".zst"):
                with open(dst[:-4], "wb") as o:
                    subprocess.run(["zstd", "-dcq", f], stdout=o, check=True)
                base = base[:-4]
            else:
                shutil.copy2(f, dst)
            names.append(base)
        with open(os.path.join(root, "modules.list"), "w") as f:
            f.write("\n".join(names) + "\n")
        with open(os.path.join(root, "init"), "w") as f:
            f.write(STAGE1_INIT)
        os.chmod(os.path.join(root, "init"), 0o755)
        tmp = path + ".tmp"
        with open(tmp, "wb") as o:
            find = subprocess.Popen(["find", "."], cwd=root, stdout=subprocess.PIPE)
            cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root,
                                    stdin=find.stdout, stdout=subprocess.PIPE)
            gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout, stdout=o)
            find.stdout.close()
            cpio.stdout.close()
            if gz.wait() or cpio.wait() or find.wait():
                raise RigError("initramfs build failed")
        os.replace(tmp, path)
    return path


def host_depmod(kver, install_tree, outdir=None):
    """modules.dep & co. for the host's module tree plus the install tree's modules.

    Made by the host's depmod in a scratch tree of symlinks (about 1 s); in a TCG
    guest "depmod -a" takes about 40 s. The guest copies the files into
    /lib/modules/KVER. Cached per set of module files."""
    outdir = outdir or os.path.join(BUILD, "vm")
    src = os.path.join(install_tree, "lib", "modules", kver)
    mods = sorted(os.path.relpath(f, src) for f in glob.glob(os.path.join(src, "**", "*.ko*"),
                                                              recursive=True))
    h = hashlib.sha256(kver.encode())
    for m in mods:
        st = os.stat(os.path.join(src, m))
        h.update(("%s %d %d\n" % (m, st.st_size, st.st_mtime_ns)).encode())
    out = os.path.join(outdir, "depmod-%s-%s" % (kver, h.hexdigest()[:12]))
    if os.path.isdir(out):
        return out
    scratch = tempfile.mkdtemp(prefix="depmod-", dir=outdir)
    try:
        base = os.path.join(scratch, "lib", "modules", kver)
        os.makedirs(os.path.dirname(base))
        subprocess.run(["cp", "-as", "/lib/modules/" + kver, os.path.dirname(base)], check=True)
        # Only real files named modules.* in the scratch tree, so that depmod can
        # never write through a symlink into the host's /lib/modules.
        for f in glob.glob(os.path.join(base, "modules.*")):
            os.unlink(f)
        for n in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
            if os.path.exists(os.path.join("/lib/modules", kver, n)):
                shutil.copyfile(os.path.join("/lib/modules", kver, n), os.path.join(base, n))
        for m in mods:
            dst = os.path.join(base, m)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst):
                os.unlink(dst)
            shutil.copyfile(os.path.join(src, m), dst)
        subprocess.run(["depmod", "-b", scratch, kver], check=True, capture_output=True)
        tmp_out = out + ".tmp"
        shutil.rmtree(tmp_out, ignore_errors=True)
        os.makedirs(tmp_out)
        for f in glob.glob(os.path.join(base, "modules.*")):
            shutil.copyfile(f, os.path.join(tmp_out, os.path.basename(f)))
        os.replace(tmp_out, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


# ---------------------------------------------------------------- link hub

class Hub(threading.Thread):
    """An Ethernet hub for more than two guests: QEMU stream framing
    (4-byte big-endian length + frame), every frame goes to every other port."""

    def __init__(self, paths):
        super().__init__(daemon=True)
        self.listeners = []
        for p in paths:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(p)
            s.listen(1)
            self.listeners.append(s)
        self.conns = {}
        self.stopped = False

    def run(self):
        sel = selectors.DefaultSelector()
        for s in self.listeners:
            sel.register(s, selectors.EVENT_READ, "listen")
        while not self.stopped:
            for key, _ in sel.select(0.5):
                s = key.fileobj
                if key.data == "listen":
                    c, _ = s.accept()
                    self.conns[c] = b""
                    sel.register(c, selectors.EVENT_READ, "conn")
                    continue
                try:
                    data = s.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    self.conns.pop(s, None)
                    s.close()
                    continue
                buf = self.conns[s] + data
                while len(buf) >= 4:
                    (n,) = struct.unpack(">I", buf[:4])
                    if len(buf) < 4 + n:
                        break
                    frame, buf = buf[:4 + n], buf[4 + n:]
                    for c in list(self.conns):
                        if c is not s:
                            try:
                                c.sendall(frame)
                            except OSError:
                                pass
                self.conns[s] = buf

    def stop(self):
        self.stopped = True
        for s in self.listeners:
            s.close()


# ---------------------------------------------------------------- guests

class Result:
    def __init__(self, cmd, rc, out, err, timeout=False):
        self.cmd, self.rc, self.out, self.err, self.timeout = cmd, rc, out, err, timeout

    @property
    def ok(self):
        return self.rc == 0

    def __repr__(self):
        err = self.err if len(self.err) <= 4000 else self.err[:2000] + "..." + self.err[-2000:]
        return "Result(rc=%r, cmd=%r, out=%r, err=%r)" % (self.rc, self.cmd, self.out[-2000:],
                                                           err)


def poll_pauses(first=0.02, longest=0.2):
    """Pauses between polls of something about to end: short at first, then
    doubling up to longest. A poll is one agent request (a few milliseconds), and
    most waited-for commands end soon after the wait starts."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, longest)


class Proc:
    """A command running in the background in a guest."""

    def __init__(self, guest, handle, cmd):
        self.guest, self.handle, self.cmd = guest, handle, cmd
        self.result = None

    def poll(self):
        if self.result is None:
            r = self.guest.request({"op": "poll", "handle": self.handle})
            if r.get("done"):
                self.result = Result(self.cmd, r["rc"], r["out"], r["err"])
        return self.result

    def wait(self, timeout=60):
        """The command's Result once it ends; killed after timeout s (rc 124). A
        command that has ended keeps its Result, whatever the timeout (even 0)."""
        deadline = time.time() + timeout
        pause = poll_pauses()
        while self.poll() is None:
            if time.time() >= deadline:
                break
            time.sleep(next(pause))
        else:
            return self.result
        self.kill()
        end = time.time() + 10
        pause = poll_pauses()
        while self.poll() is None and time.time() < end:
            time.sleep(next(pause))
        r = self.result or Result(self.cmd, 124, "", "", True)
        r.rc, r.timeout = 124, True
        self.result = r
        return r

    def kill(self, sig=signal.SIGKILL):
        if self.result is None:
            self.guest.request({"op": "kill", "handle": self.handle, "sig": int(sig)})


class Guest:
    def __init__(self, rig, index):
        self.rig, self.index = rig, index
        self.name = "g%d" % index
        self.dir = os.path.join(rig.outdir, self.name)
        self.console = os.path.join(self.dir, "console.log")
        self.agent_path = None
        self.ip4 = "%s.%d" % (NET4_PREFIX, index + 1)
        self.ip6 = "%s::%d" % (NET6_PREFIX, index + 1)
        self.mac = "52:54:00:99:00:%02x" % (index + 1)
        self.qemu = None
        self.sock = None
        self.rbuf = b""
        self.next_id = 1
        self.lock = threading.Lock()
        self.console_mark = 0
        self.sync_seq = 0
        self.foreign = []           # reports the last console scan let pass
        # Why this guest can no longer be trusted (None while it can): its agent
        # stopped answering ("wedged": requests then fail at once instead of
        # each waiting out its timeout), or a command it ran could not be killed.
        self.wedged = None
        self.stuck = None
        self.exited_during_boot = False

    # -- lifecycle
    def launch(self, netdev_args):
        os.makedirs(self.dir, exist_ok=True)
        self.wedged = self.stuck = None
        self.exited_during_boot = False
        self.rbuf = b""
        self.console_mark = 0
        r = self.rig
        with open(os.path.join(self.dir, "guest.conf"), "w") as f:
            conf = {"GUEST_INDEX": self.index, "GUEST_COUNT": r.n, "GUEST_MTU": r.mtu,
                    "NET4_PREFIX": NET4_PREFIX, "NET6_PREFIX": NET6_PREFIX,
                    "GUEST_NETEM": r.netem.get(self.index, ""),
                    "INSTALL_TREE": r.install_tree_guest or "",
                    "DEPMOD_DIR": r.depmod_guest or ""}
            for k, v in conf.items():
                f.write("%s=%s\n" % (k, shlex_quote(str(v))))
        for p in (self.console,):
            if os.path.exists(p):
                os.unlink(p)
        kargs = ("console=ttyS0 loglevel=5 panic=-1 %smitigations=off "
                 "rdinit=/init no_timer_check net.ifnames=0 %s"
                 % ("slub_debug=FZPU " if r.debug else "", r.kargs)).strip()
        cmd = ["qemu-system-x86_64", "-name", self.name, "-machine", "q35", "-nodefaults",
               "-no-user-config",
               "-display", "none", "-no-reboot", "-m", str(r.mem), "-smp", str(r.smp),
               "-kernel", r.kernel, "-initrd", r.initrd, "-append", kargs,
               "-serial", "file:" + self.console,
               "-device", "virtio-rng-pci",
               "-chardev", "socket,id=agent,path=%s,server=on,wait=off" % self.agent_path,
               "-device", "virtio-serial-pci",
               "-device", "virtserialport,chardev=agent,name=sroce.agent"]
        if r.kvm:
            cmd += ["-accel", "kvm", "-cpu", "host"]
        else:
            # Without cmpxchg16b: QEMU 7.2's TCG now and then leaves garbage
            # EFLAGS (trap flag included) behind the per-CPU cmpxchg16b of
            # SLUB's allocation fast path, and the guest dies of a double
            # fault or an unexpected debug trap (Documentation/performance.rst).
            # Without the feature the kernel emulates that instruction with
            # interrupts off, and user space does not need it.
            cmd += ["-accel", "tcg,thread=multi", "-cpu", "max,-cx16"]
        shares = [("usr", "/usr", True), ("hostetc", "/etc", True), ("src", REPO, True),
                  ("out", self.dir, False)]
        for i, (tag, path, ro) in enumerate(shares):
            cmd += ["-fsdev", "local,id=fs%d,path=%s,security_model=none%s" %
                    (i, path, ",readonly=on" if ro else ""),
                    "-device", "virtio-9p-pci,fsdev=fs%d,mount_tag=%s" % (i, tag)]
        cmd += netdev_args + ["-device", "virtio-net-pci,netdev=n0,mac=%s,speed=10000,duplex=full" % self.mac]
        self.qemu_log = open(os.path.join(self.dir, "qemu.log"), "w")
        self.qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.qemu_log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def connect(self, timeout):
        """Connect to the agent and wait for it to answer. Should QEMU drop the
        connection before the agent has answered (seen once in CI: a reset
        while the early pings waited unread), connect again."""
        deadline = time.time() + timeout
        while True:
            self._open_agent(deadline)
            try:
                if self._await_agent(deadline, timeout):
                    return
            except (ConnectionError, AgentClosed) as e:
                if self.wedged:
                    raise
                if self.qemu.poll() is not None:
                    raise self._exited_during_boot() from e
                sys.stderr.write("rig: %s: agent connection lost during boot (%s); "
                                 "connecting again\n" % (self.name, e))
                self.sock.close()
                self.rbuf = b""
                continue
            self.wedged = "did not come up"
            raise RigError("%s: guest did not come up in %ds; console:\n%s" %
                           (self.name, timeout, self.console_text()[-3000:]))

    def _exited_during_boot(self):
        self.exited_during_boot = True
        return RigError("%s: qemu exited (%s) during boot; console:\n%s" %
                        (self.name, self.qemu.returncode, self.console_text()[-3000:]))

    def _open_agent(self, deadline):
        while True:
            if self.qemu.poll() is not None:
                raise self._exited_during_boot()
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.agent_path)
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise RigError("%s: agent socket never appeared" % self.name)
                time.sleep(0.1)
        self.sock = s

    def _await_agent(self, deadline, timeout):
        """True once the agent answers; False when the deadline passed first."""
        last_ping = 0
        while time.time() < deadline:
            if self.qemu.poll() is not None:
                raise self._exited_during_boot()
            if self.rig.kvm and self.kvm_internal_error():
                self.wedged = "KVM internal error during boot"
                raise RigError("%s: KVM internal error during boot; see %s" %
                               (self.name, self.dir))
            if time.time() - last_ping > 5:
                # Best effort: until the guest opens its port QEMU may not
                # drain the socket, and a full buffer must not end the boot.
                try:
                    self.sock.settimeout(1)
                    self._send({"id": -1, "op": "ping"})
                except (socket.timeout, BlockingIOError):
                    pass
                last_ping = time.time()
            msg = self._recv(0.5)
            if msg is not None:
                self.rbuf = b""
                self.sock.settimeout(None)
                # Drain any duplicate answers to early pings.
                self.run("true", timeout=30)
                return True
        return False

    def kvm_internal_error(self):
        return _kvm_internal_error(os.path.join(self.dir, "qemu.log"))

    def _send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def _recv(self, timeout):
        self.sock.settimeout(timeout)
        deadline = time.time() + timeout if timeout is not None else None
        while b"\n" not in self.rbuf:
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                return None
            if not data:
                raise AgentClosed("%s: agent connection closed" % self.name)
            self.rbuf += data
            if deadline and time.time() > deadline and b"\n" not in self.rbuf:
                return None
        line, self.rbuf = self.rbuf.split(b"\n", 1)
        return json.loads(line)

    def request(self, req, timeout=None):
        if TRACE:
            t0 = time.time()
            try:
                return self._request(req, timeout)
            finally:
                with open(TRACE, "a") as f:
                    f.write(json.dumps({"guest": self.name, "op": req.get("op"),
                                        "cmd": req.get("cmd"), "t": round(t0, 4),
                                        "s": round(time.time() - t0, 4),
                                        "test": os.environ.get("PYTEST_CURRENT_TEST")}) + "\n")
        return self._request(req, timeout)

    def _request(self, req, timeout=None):
        with self.lock:
            if self.wedged:
                raise RigError("%s: not asked %r: %s" % (self.name, req, self.wedged))
            if self.qemu is None or self.qemu.poll() is not None:
                self.wedged = "qemu is not running"
                raise RigError("%s: not asked %r: qemu is not running" % (self.name, req))
            rid = self.next_id
            self.next_id += 1
            req = dict(req, id=rid)
            while True:
                try:
                    if req is not None:
                        self._send(req)
                        sent, req = req, None
                    msg = self._recv(timeout)
                except (RigError, OSError) as e:
                    self.wedged = "agent connection lost: %s" % e
                    raise RigError("%s: %s" % (self.name, self.wedged)) from e
                if msg is None:
                    self.wedged = "agent gave no answer to %r in %s s" % (sent, timeout)
                    raise RigError("%s: %s" % (self.name, self.wedged))
                if msg.get("id") == rid:
                    if "error" in msg:
                        raise RigError("%s: agent: %s" % (self.name, msg["error"]))
                    return msg

    # -- commands
    def run(self, cmd, timeout=120, check=False, reap_wait=None):
        """Run cmd; after timeout s it is killed (rc 124). One that cannot be
        reaped reap_wait s after that (the agent's REAP_WAIT by default) is
        reported stuck and the guest marked so."""
        req = {"op": "run", "cmd": cmd, "timeout": timeout}
        if reap_wait is not None:
            req["reap_wait"] = reap_wait
        # The agent's answer may wait for the command's timeout and then its reap.
        r = self.request(req, timeout=timeout + (10 if reap_wait is None else reap_wait) + 20)
        res = Result(cmd, r["rc"], r["out"], r["err"], r.get("timeout", False))
        if r.get("stuck"):
            self.stuck = "a killed command could not be reaped: %r" % cmd
        elif res.timeout:
            # What the kernel was waiting for when the command ran out of time.
            res.err += "\n[rig: tasks blocked in the kernel after the timeout]\n" + \
                "\n".join(self.blocked_tasks())
        if check and not res.ok:
            raise RigError("%s: command failed: %r" % (self.name, res))
        return res

    def check(self, cmd, timeout=120):
        """Run cmd, raise unless it exits 0; return its stdout."""
        return self.run(cmd, timeout=timeout, check=True).out

    def kmsg(self, text, timeout=30):
        """Write text to the guest's /dev/kmsg (one log record; "<N>" in front
        sets its level). The agent writes it itself: no command is started. A
        record without a newline at its end may wait on the console for the
        next one (the kernel keeps it open for a continuation): one is added."""
        if not text.endswith("\n"):
            text += "\n"
        self.request({"op": "kmsg", "text": text}, timeout=timeout)

    def tcp_listening(self, port, timeout=30):
        """True if a TCP socket of the guest's initial network namespace listens
        on port (read from /proc/net/tcp{,6} by the agent: no command is started)."""
        return self.request({"op": "listening", "port": port}, timeout=timeout)["listening"]

    def read_files(self, paths=None, pattern=None, timeout=120):
        """({path: text}, {path: strerror}) of the guest files paths, or of those
        matching the glob pattern, read by the agent itself (no command is
        started, so a sysfs attribute costs milliseconds, not a shell)."""
        req = {"op": "read", "paths": list(paths)} if paths is not None else \
            {"op": "read", "glob": pattern}
        r = self.request(req, timeout=timeout)
        return r["files"], r["errors"]

    def read_file(self, path, timeout=120):
        """The text of guest file path; RigError if it cannot be read."""
        files, errors = self.read_files([path], timeout=timeout)
        if path not in files:
            raise RigError("%s: cannot read %s: %s" % (self.name, path, errors.get(path)))
        return files[path]

    def write_file(self, path, text, timeout=120):
        """Write text to the guest file path (a sysfs attribute, say) from the
        agent itself, without starting a command; RigError if that fails."""
        self.request({"op": "write", "path": path, "text": text}, timeout=timeout)

    def set_netem(self, args):
        """Put a netem qdisc with args (e.g. "loss 1%") on eth0; "" removes it."""
        if args:
            self.check("modprobe sch_netem && tc qdisc replace dev eth0 root netem " + args)
        else:
            self.run("tc qdisc del dev eth0 root 2>/dev/null; true")

    def health(self, timeout=20):
        """None if the guest answers a ping within timeout and nothing it ran is
        stuck in the kernel; else why not."""
        if self.wedged or self.stuck:
            return self.wedged or self.stuck
        try:
            self.request({"op": "ping"}, timeout=timeout)
        except RigError as e:
            return str(e)
        return None

    def spawn(self, cmd):
        r = self.request({"op": "spawn", "cmd": cmd})
        return Proc(self, r["handle"], cmd)

    # -- evidence
    def console_bytes(self, start=0, end=None):
        """The console log from byte start (to byte end)."""
        try:
            with open(self.console, "rb") as f:
                f.seek(start)
                return f.read() if end is None else f.read(max(0, end - start))
        except OSError:
            return b""

    def console_text(self, start=0, end=None):
        return self.console_bytes(start, end).decode(errors="replace")

    def mark_console(self, offset=None):
        """Look for problems from here on (default: the console's current end)."""
        if offset is None:
            offset = os.path.getsize(self.console) if os.path.exists(self.console) else 0
        self.console_mark = offset

    def bad_console_lines(self, start=None, end=None):
        """Problem lines between start (default: the mark) and end (default: now).
        A hung task's report is followed by the kernel stacks of every task then
        blocked in the guest (the console, at loglevel 5, shows only its first
        line), and the guest is marked stuck: a task that never wakes holds what
        the next tests need, so the rig reboots before them."""
        text = self.console_text(self.console_mark if start is None else start, end)
        bad, self.foreign = [], []
        for report in console_reports(text.splitlines()):
            if foreign_report(report):
                self.foreign.append(report)
            else:
                bad += report
        if any(HUNG_TASK.search(ln) for ln in bad):
            bad += self.blocked_tasks()
            self.stuck = self.stuck or "a task hung in the kernel (see its stack)"
        return bad

    def blocked_tasks(self):
        """The kernel stack of every task in uninterruptible sleep (the hung-task
        detector's own backtrace goes to the log at KERN_INFO, below the console's
        loglevel), as lines; or why they could not be read."""
        try:
            tasks = self.request({"op": "blocked"}, timeout=30)["tasks"]
        except RigError as e:
            return ["(no task stacks: %s)" % e]
        return ["  " + ln for ln in (tasks.splitlines() or ["(no task blocked any more)"])]

    def sync_console(self, timeout=10):
        """Prove that console.log has caught up with the kernel: log a unique marker
        through /dev/kmsg at a level the console prints (loglevel=5 shows 0-4), and
        wait until it is in the file. Everything the kernel logged before it is
        then in the file too (the console prints the log in order). Returns the
        file offset just past the marker's line; RigError if it never shows."""
        self.sync_seq += 1
        tag = "sroce-rig console sync %s.%d.%d" % (self.name, os.getpid(), self.sync_seq)
        start = self.console_mark
        self.kmsg("<4>%s" % tag, timeout=timeout)
        deadline = time.time() + timeout
        while True:
            data = self.console_bytes(start)
            i = data.find(tag.encode())
            if i >= 0:
                nl = data.find(b"\n", i)
                if nl >= 0:
                    return start + nl + 1
            if time.time() > deadline:
                raise RigError("%s: console sync marker not in %s after %d s" %
                               (self.name, self.console, timeout))
            time.sleep(0.02)

    def collect_dmesg(self):
        try:
            self.run("dmesg > /out/dmesg.log", timeout=30)
        except (RigError, OSError):
            pass

    def shutdown(self, timeout=20):
        if self.qemu is None:
            return
        if self.qemu.poll() is None and self.sock is not None and not self.wedged:
            try:
                self.collect_dmesg()
                self.request({"op": "poweroff"}, timeout=10)
            except (RigError, OSError):
                pass
            try:
                self.qemu.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if self.qemu.poll() is None:
            os.killpg(self.qemu.pid, signal.SIGKILL)
            self.qemu.wait()
        if self.sock:
            self.sock.close()
            self.sock = None
        self.qemu_log.close()


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


class Rig:
    def __init__(self, guests=2, kver=None, mtu=1500, smp=1, mem=1024, kargs="", netem=None,
                 outdir=None, install_tree=None, boot_timeout=None, debug=True,
                 wire_priority=False):
        if guests < 1:
            raise RigError("need at least one guest")
        self.n = guests
        self.kver = kver or os.environ.get("KVER") or default_kver()
        self.mtu, self.smp, self.mem, self.kargs = mtu, smp, mem, kargs
        # Test guests check every slab object (slub_debug=FZPU); benchmarks boot
        # as users do (debug=False).
        self.debug = debug
        # Booted guests' emulator main threads (the wire) get SCHED_FIFO: see
        # set_wire_priority().
        self.wire_priority = wire_priority
        self.netem = netem or {}
        self.outdir = os.path.abspath(outdir or os.path.join(BUILD, "vm", "run"))
        if install_tree is None:
            cand = os.path.join(BUILD, "install", self.kver)
            install_tree = cand if os.path.isdir(cand) else None
        self.install_tree = install_tree
        self.install_tree_guest = None
        self.depmod_guest = None
        if install_tree:
            rel = os.path.relpath(os.path.abspath(install_tree), REPO)
            if rel.startswith(".."):
                raise RigError("install tree must live inside the repository")
            self.install_tree_guest = "/src/" + rel
        self.kernel = "/boot/vmlinuz-" + self.kver
        if not os.path.exists(self.kernel):
            raise RigError("no kernel image %s" % self.kernel)
        self.kvm = probe_kvm(self.kernel)
        self.boot_timeout_arg = boot_timeout
        self.boot_timeout = self._boot_timeout()
        self.guests = [Guest(self, i) for i in range(guests)]
        self.foreign_reports = {}   # (guest, report) -> its lines, until take_foreign()
        self.hub = None
        self.sockdir = None
        self.boot_seconds = None
        self.restarts = 0

    def __getitem__(self, i):
        return self.guests[i]

    def __len__(self):
        return self.n

    def start(self):
        """Boot the guests. A boot in which a guest's QEMU exited before its
        agent answered (a guest that panicked: -no-reboot) is tried once more;
        the first boot's directory stays beside the new one as evidence and
        the report goes to stderr and BOOT_REPORTS."""
        try:
            return self._start_or_tcg()
        except RigError as e:
            if not any(g.exited_during_boot for g in self.guests):
                raise
            failed = self.outdir + "-failed-boot"
            shutil.rmtree(failed, ignore_errors=True)
            os.rename(self.outdir, failed)
            report = ("rig: %s (%s): a guest's QEMU exited during boot; booting once more. "
                      "The failed boot's files: %s\n%s" % (self.outdir, self.kver, failed, e))
            BOOT_REPORTS.append(report)
            sys.stderr.write(report + "\n")
        return self._start_or_tcg()

    def _start_or_tcg(self):
        try:
            return self._start()
        except RigError:
            if not self.kvm or not any(g.kvm_internal_error() for g in self.guests):
                raise
        # The probe passed, the guests did not: use TCG from now on.
        sys.stderr.write("rig: KVM internal error booting %s; using TCG\n" % self.kver)
        kvm_failed(self.kernel)
        self.kvm = False
        self.boot_timeout = self._boot_timeout()
        return self._start()

    def _boot_timeout(self):
        return self.boot_timeout_arg or (60 if self.kvm else 120 + 30 * self.n)

    def _start(self):
        t0 = time.time()
        if os.path.isdir(self.outdir):
            shutil.rmtree(self.outdir)
        os.makedirs(self.outdir)
        self.initrd = build_initramfs(self.kver)
        if self.install_tree:
            self.depmod_guest = "/src/" + os.path.relpath(host_depmod(self.kver, self.install_tree),
                                                          REPO)
        # unix socket paths must be short: keep them in /tmp.
        self.sockdir = tempfile.mkdtemp(prefix="sroce-rig-")
        for g in self.guests:
            g.agent_path = os.path.join(self.sockdir, "agent%d.sock" % g.index)
        paths = [os.path.join(self.sockdir, "link%d.sock" % i) for i in range(self.n)]

        def stream(path, server):
            return ["-netdev", "stream,id=n0,server=%s,addr.type=unix,addr.path=%s" %
                    ("on" if server else "off", path)]
        try:
            if self.n == 1:
                self.guests[0].launch(["-netdev", "hubport,id=n0,hubid=0"])
            elif self.n == 2:
                self.guests[0].launch(stream(paths[0], True))
                deadline = time.time() + 10
                while not os.path.exists(paths[0]) and time.time() < deadline:
                    time.sleep(0.05)
                self.guests[1].launch(stream(paths[0], False))
            else:
                self.hub = Hub(paths)
                self.hub.start()
                for g in self.guests:
                    g.launch(stream(paths[g.index], False))
            for g in self.guests:
                g.connect(self.boot_timeout - (time.time() - t0))
            if self.wire_priority:
                self.set_wire_priority()
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.time() - t0
        return self

    def set_wire_priority(self):
        """Give each guest's QEMU main thread SCHED_FIFO priority 1 (threads it
        starts later do not inherit it). That thread moves every frame between
        virtio-net and the link socket: it is the NIC and the wire. With CFS it
        waits for a core behind vCPUs that busy-poll (perftest), which puts the
        host's scheduler into every packet's latency; a real host's NIC does
        not compete with its applications for a core. It sleeps when no frame
        moves, and the kernel's RT throttling leaves other threads at least 5 %
        of each core; but under load it takes the vCPUs' cores and bandwidth
        falls, so only latency studies use it (vm/bench.py --wire-priority).
        Root only (the rig runs as root)."""
        for g in self.guests:
            try:
                os.sched_setscheduler(g.qemu.pid, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK,
                                      os.sched_param(1))
            except OSError as e:
                raise RigError("%s: SCHED_FIFO for QEMU's main thread: %s" % (g.name, e))

    def stop(self):
        # What the console checks let pass and nobody took (the benches, --script
        # runs) is shown here at the latest.
        for report in self.take_foreign():
            sys.stderr.write("rig: a guest kernel report outside sroce passed "
                             "(FOREIGN_REPORT):\n  %s\n" % "\n  ".join(report))
        for g in self.guests:
            try:
                g.shutdown()
            except Exception:  # noqa: BLE001 - teardown must reach every guest
                pass
        if self.hub:
            self.hub.stop()
            self.hub = None
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def health(self):
        """{guest name: why it cannot be trusted} for every guest that cannot."""
        bad = {}
        for g in self.guests:
            why = g.health()
            if why:
                bad[g.name] = why
        return bad

    def restart(self):
        """Stop the guests, keep their output directory as <outdir>.dead-N (the
        evidence of what went wrong) and boot fresh ones. Returns that path."""
        self.stop()
        self.restarts += 1
        kept = "%s.dead-%d" % (self.outdir, self.restarts)
        shutil.rmtree(kept, ignore_errors=True)
        if os.path.isdir(self.outdir):
            os.rename(self.outdir, kept)
        self.start()
        return kept

    def mark_consoles(self):
        for g in self.guests:
            g.mark_console()

    def bad_console_lines(self):
        """Problem lines since the marks, as far as the console files hold them now."""
        bad = []
        for g in self.guests:
            bad += ["%s: %s" % (g.name, ln) for ln in g.bad_console_lines()]
            self.note_foreign(g)
        return bad

    def note_foreign(self, g):
        """Keep the reports g's last console scan let pass (FOREIGN_REPORT), once each."""
        for report in g.foreign:
            self.foreign_reports.setdefault((g.name, "\n".join(report)),
                                            ["%s: %s" % (g.name, ln) for ln in report])

    def take_foreign(self):
        """The reports that passed since the last call (lists of lines): a test
        shows them as its warnings."""
        reports = list(self.foreign_reports.values())
        self.foreign_reports.clear()
        return reports

    def console_problems(self):
        """Problem lines from the marks up to a sync marker (Guest.sync_console, in
        all guests at once), then mark every console past its marker: what the
        kernel logged until now, and only that, is judged. A guest whose console
        cannot be synced is a problem line itself."""
        ends, errors = {}, {}

        def sync(g):
            try:
                ends[g.name] = g.sync_console()
            except (RigError, OSError) as e:
                errors[g.name] = str(e)
        threads = [threading.Thread(target=sync, args=(g,)) for g in self.guests]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad = []
        for g in self.guests:
            bad += ["%s: %s" % (g.name, ln) for ln in g.bad_console_lines(end=ends.get(g.name))]
            self.note_foreign(g)
            if g.name in errors:
                bad.append("%s: %s" % (g.name, errors[g.name]))
            g.mark_console(ends.get(g.name))
        return bad


def console_reports(lines):
    """The lines BAD_CONSOLE matches, grouped: a report (its first line matches
    REPORT_HEAD) is one group with the line before it and its rest up to its end
    marker (at most REPORT_LINES lines), the lines that did not match indented
    with "| "; any other matching line is a group of its own."""
    groups, i, taken = [], 0, 0
    while i < len(lines):
        ln = lines[i]
        if not BAD_CONSOLE.search(ln):
            i += 1
            continue
        if not REPORT_HEAD.search(ln):
            groups.append([ln])
            i += 1
            continue
        group = ["| " + lines[i - 1]] if i > taken else []
        group.append(ln)
        j = i + 1
        while j < len(lines) and j <= i + REPORT_LINES and not REPORT_HEAD.search(lines[j]):
            group.append(lines[j] if BAD_CONSOLE.search(lines[j]) else "| " + lines[j])
            j += 1
            if REPORT_END.search(lines[j - 1]):
                break
        groups.append(group)
        i = taken = j
    return groups


def foreign_report(group):
    """True for a report that FOREIGN_REPORT lets pass: its first line matches,
    it lists the modules linked in and sroce is not among them, and no line of
    it names sroce."""
    if not FOREIGN_REPORT.search(group[1] if group[0].startswith("| ") else group[0]):
        return False
    mods = [ln for ln in group if "Modules linked in:" in ln]
    return bool(mods) and not any(re.search(r"\bsroce\b", ln) for ln in group)


def report_console(title, bad):
    """Print title and the bad console lines, if there are any: 1 if so, else 0."""
    if bad:
        print("%s:\n  %s" % (title, "\n  ".join(bad)))
    return 1 if bad else 0


def exit_on_sigterm():
    """SIGTERM (timeout(1), kill) unwinds like an exception, so that the rig's
    stop() runs and no QEMU outlives the script that started it."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def main():
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--guests", type=int, default=2)
    ap.add_argument("--kver", default=None, help="kernel version (default: newest with headers)")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=1024, help="MiB per guest")
    ap.add_argument("--kargs", default="", help="extra kernel arguments")
    ap.add_argument("--no-slub-debug", dest="debug", action="store_false",
                    help="boot without slub_debug=FZPU (as users do; for measurements)")
    ap.add_argument("--netem", action="append", default=[], metavar="IDX:ARGS",
                    help="netem qdisc on guest IDX's eth0, e.g. 1:'loss 1%%'")
    ap.add_argument("--out", default=None, help="output directory (default build/vm/run)")
    ap.add_argument("--script", action="append", default=[], metavar="FILE",
                    help="script run in every guest (GUEST_INDEX set), in order; "
                         "'IDX:FILE' runs it in guest IDX only")
    ap.add_argument("--timeout", type=int, default=600, help="per script")
    ap.add_argument("--probe-kvm", action="store_true", help="only report the accelerator")
    a = ap.parse_args()
    if a.probe_kvm:
        print("kvm" if probe_kvm("/boot/vmlinuz-" + (a.kver or os.environ.get("KVER")
                                                      or default_kver())) else "tcg")
        return 0
    netem = {}
    for n in a.netem:
        i, _, args = n.partition(":")
        netem[int(i)] = args
    rig = Rig(guests=a.guests, kver=a.kver, mtu=a.mtu, smp=a.smp, mem=a.mem, kargs=a.kargs,
              netem=netem, outdir=a.out, debug=a.debug)
    status = 0
    with rig:
        print("rig: %d guests of %s (%s) up in %.1f s; output in %s" %
              (rig.n, rig.kver, "kvm" if rig.kvm else "tcg", rig.boot_seconds, rig.outdir),
              flush=True)
        for spec in a.script:
            idx, sep, path = spec.partition(":")
            targets = [rig[int(idx)]] if sep and idx.isdigit() else rig.guests
            path = path if sep and idx.isdigit() else spec
            rel = os.path.relpath(os.path.abspath(path), REPO)
            procs = [(g, g.spawn("cd /src && GUEST_INDEX=%d bash %s" % (g.index, rel)))
                     for g in targets]
            for g, p in procs:
                r = p.wait(a.timeout)
                with open(os.path.join(g.dir, "script.log"), "a") as f:
                    f.write(r.out + r.err)
                print("==== %s: %s (rc=%d)" % (g.name, rel, r.rc))
                sys.stdout.write(r.out)
                sys.stderr.write(r.err)
                if r.rc:
                    status = 1
    # The whole of every console, shutdown included.
    status |= report_console("rig: bad console lines", rig.bad_console_lines())
    report_console("rig: guest kernel reports outside sroce (passed: FOREIGN_REPORT)",
                   [ln for report in rig.take_foreign() for ln in report])
    return status


if __name__ == "__main__":
    sys.exit(main())
