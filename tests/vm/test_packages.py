# SPDX-License-Identifier: GPL-2.0
"""The Debian packages in use: the module DKMS built, the provider from libsroce.

tests/build/debroot.py builds the packages (make deb), unpacks both into
build/deb/root and has DKMS build and install sroce.ko there for every
installed kernel with headers, the way the packages' maintainer scripts and the
kernel's postinst hook do on a host. A guest of each such kernel then gets that
tree copied into / (and nothing from "make install": no build/install tree), so
it looks like a host where "apt install ./sroce-dkms_*.deb ./libsroce_*.deb"
ran. In it "rdma link add" must autoload the DKMS-built module (the same GNU
build ID as the file DKMS produced), and ibv_rc_pingpong must run through the
packaged provider (server and client in the guest, over the device's own GID:
one guest boots in half the time of two, and traffic between guests is the
session rig's business).

Runs before the other VM suites (conftest.py orders it first), so that its
rigs are never up at the same time as their session rig.
"""
import concurrent.futures
import hashlib
import os
import sys

import pytest

from guestrdma import REPO, client_server, gid_index, loaded_build_id, rigmod

sys.path.insert(0, os.path.join(REPO, "tests", "build"))
import debroot  # noqa: E402

KVERS = [k for k in debroot.kernels_with_headers() if os.path.exists("/boot/vmlinuz-" + k)]
PROVIDER = "/usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav34.so"


@pytest.fixture(scope="module")
def user_root():
    debs = debroot.build_debs()
    return debroot.make_root(debs, KVERS)


def _boot(kver):
    r = rigmod.Rig(guests=1, kver=kver, install_tree=debroot.ROOT,
                   outdir=os.path.join(REPO, "build", "vm", "packages-" + kver))
    r.start()
    sys.stderr.write("\nrig: a guest of %s (%s) with the packaged sroce up in %.1f s\n" %
                     (kver, "kvm" if r.kvm else "tcg", r.boot_seconds))
    return r


@pytest.fixture(scope="module")
def pkg_rigs(user_root):
    """A one-guest rig per kernel, all booted at once: a second one-vCPU guest
    booting beside the first costs a few seconds, one after the other a boot."""
    with concurrent.futures.ThreadPoolExecutor(len(KVERS)) as pool:
        futures = {k: pool.submit(_boot, k) for k in KVERS}
    rigs = {}
    errors = []
    for k, f in futures.items():
        try:
            rigs[k] = f.result()
            rigs[k].dkms_module = user_root[k]
        except Exception as e:  # noqa: BLE001 (reported below, after the others stop)
            errors.append("%s: %s" % (k, e))
    try:
        if errors:
            pytest.fail("package rigs did not boot:\n" + "\n".join(errors))
        yield rigs
    finally:
        for r in rigs.values():
            r.stop()


@pytest.fixture(scope="module", params=KVERS)
def pkg_rig(request, pkg_rigs):
    r = pkg_rigs[request.param]
    yield r
    r.stop()
    bad = r.bad_console_lines()
    if bad:
        pytest.fail("guest console shows kernel problems:\n" + "\n".join(bad))


def test_rdma_link_add_autoloads_the_dkms_module(pkg_rig):
    kver = pkg_rig.kver
    want = debroot.build_id(pkg_rig.dkms_module)
    for g in pkg_rig:
        assert g.check("uname -r").strip() == kver
        # The only sroce.ko in the guest is the one DKMS installed.
        found = g.check("find /lib/modules/%s -name 'sroce.ko*'" % kver).split()
        assert found == ["/" + os.path.relpath(pkg_rig.dkms_module, debroot.ROOT)], found
        assert g.check("modinfo -n sroce").strip() == found[0]
        assert g.run("test -e /sys/module/sroce").rc != 0, "sroce loaded before rdma link add"
        r = g.run("rdma link add sroce0 type sroce netdev eth0", timeout=60)
        assert r.ok, r
        assert loaded_build_id(g) == want
        assert "sroce0" in g.check("rdma link show")


def test_pingpong_through_the_packaged_provider(pkg_rig):
    provider = hashlib.sha256(open(os.path.join(debroot.ROOT, PROVIDER.lstrip("/")),
                                   "rb").read()).hexdigest()
    for g in pkg_rig:
        if g.run("test -e /sys/class/infiniband/sroce0").rc != 0:
            assert g.run("rdma link add sroce0 type sroce netdev eth0", timeout=60).ok
        assert g.check("sha256sum %s" % PROVIDER).split()[0] == provider
        assert g.check("cat /etc/libibverbs.d/sroce.driver").split() == ["driver", "sroce"]
        # Only libsroce can open an sroce device (its uverbs ABI version is
        # outside every other provider's range).
        assert "PORT_ACTIVE" in g.check("ibv_devinfo -d sroce0")
    g = pkg_rig[0]

    def cmd(host=""):
        return "ibv_rc_pingpong -d sroce0 -i 1 -g %d -c -s 4096 -n 100 %s" % (
            gid_index(g, "sroce0"), host)
    s, c = client_server(g, cmd(), g, cmd(g.ip4), timeout=120)
    assert c.rc == 0 and s.rc == 0, (s, c)
    assert "invalid data" not in s.out + c.out
    assert "iters in" in c.out, c
