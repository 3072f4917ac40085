# SPDX-License-Identifier: GPL-2.0
"""The Debian packages (make deb) and the DKMS path a user takes, offline.

The VM half, booting the DKMS-built module and the packaged provider, is
tests/vm/test_packages.py. Nothing here changes the machine: DKMS builds into
scratch trees under build/deb (see debroot.py)."""
import glob
import os
import subprocess

import pytest

import debroot

REPO = debroot.REPO


@pytest.fixture(scope="module")
def debs():
    return debroot.build_debs()


def test_make_deb_leaves_nothing_behind(debs):
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    # Only build/ (ignored) may hold results; nothing in the tree or next to it.
    assert [ln for ln in status.splitlines() if "debian/" in ln or ".deb" in ln] == []
    parent = os.path.dirname(REPO)
    assert not [f for f in os.listdir(parent)
                if f.endswith((".deb", ".buildinfo", ".changes"))]
    assert not os.path.exists(os.path.join(debroot.DEB_DIR, "src", "sroce"))


def test_sroce_dkms_package(debs):
    deb = debs["sroce-dkms"]
    v = debroot.version()
    assert os.path.basename(deb) == "sroce-dkms_%s_all.deb" % v
    assert debroot.deb_field(deb, "Architecture") == "all"
    depends = debroot.deb_field(deb, "Depends")
    assert "dkms" in depends and "linux-headers-amd64 | linux-headers" in depends
    src = "/usr/src/sroce-%s/" % v
    files = [f for f in debroot.deb_files(deb) if not f.startswith("/usr/share/doc/")]
    kernel = sorted(os.path.basename(f) for f in os.listdir(os.path.join(REPO, "kernel"))
                    if f.endswith((".c", ".h")) or f == "Kbuild")
    include = sorted(os.path.relpath(os.path.join(d, f), REPO)
                     for d, _, fs in os.walk(os.path.join(REPO, "include")) for f in fs)
    # The layout "make module" builds from (build/kmod/KVER/), plus dkms.conf.
    assert files == sorted([src + "dkms.conf"] + [src + "kernel/" + f for f in kernel] +
                           [src + f for f in include])
    # dh_dkms' maintainer scripts: add/build/install on configure, remove on removal.
    ctl = subprocess.run(["dpkg-deb", "-I", deb, "postinst"], capture_output=True, text=True,
                         check=True).stdout
    assert "/usr/lib/dkms/common.postinst" in ctl
    ctl = subprocess.run(["dpkg-deb", "-I", deb, "prerm"], capture_output=True, text=True,
                         check=True).stdout
    assert "dkms remove" in ctl


def test_dkms_conf(debs):
    out = subprocess.run(["dpkg-deb", "--fsys-tarfile", debs["sroce-dkms"]], capture_output=True,
                         check=True).stdout
    conf = subprocess.run(["tar", "-xOf", "-", "./usr/src/sroce-%s/dkms.conf" %
                           debroot.version()], input=out, capture_output=True,
                          check=True).stdout.decode()
    # dkms.conf is a shell fragment: read it the way dkms does.
    vals = subprocess.run(["bash", "-c", 'source /dev/stdin; echo "$PACKAGE_NAME|'
                           '$PACKAGE_VERSION|${BUILT_MODULE_NAME[0]}|'
                           '${DEST_MODULE_LOCATION[0]}|$AUTOINSTALL"'], input=conf,
                          capture_output=True, text=True, check=True).stdout.strip().split("|")
    assert vals == ["sroce", debroot.version(), "sroce", "/updates/dkms", "yes"]


def test_libsroce_package(debs):
    deb = debs["libsroce"]
    assert debroot.deb_field(deb, "Architecture") == "amd64"
    assert "libibverbs1" in debroot.deb_field(deb, "Depends")
    files = [f for f in debroot.deb_files(deb) if not f.startswith("/usr/share/doc/")]
    # Exactly what "make install" installs for user space (test_install.py).
    assert files == sorted(["/usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav34.so",
                            "/etc/libibverbs.d/sroce.driver"])


def test_dkms_builds_the_module_for_every_installed_kernel(debs):
    """dkms add + autoinstall (sroce-dkms' postinst, the kernel's postinst hook)
    for each kernel that has headers, into build/deb/root."""
    kvers = debroot.kernels_with_headers()
    assert kvers, "no kernel headers installed"
    before = {k: [os.stat(p).st_mtime_ns for p in
                  sorted(glob_modules(k))] for k in kvers}
    had = {p: os.path.exists(p) for p in ("/var/lib/dkms/sroce", "/var/lib/dkms/mok.key")}
    mods = debroot.make_root(debs, kvers)
    assert sorted(mods) == kvers
    for k, ko in mods.items():
        info = subprocess.run(["/usr/sbin/modinfo", ko], capture_output=True, text=True,
                              check=True).stdout
        assert "vermagic:       %s " % k in info
        assert "rdma-link-sroce" in info
        assert "DKMS module signing key" in info  # signed with the scratch MOK key
    # The host's module tree and DKMS state are untouched.
    after = {k: [os.stat(p).st_mtime_ns for p in sorted(glob_modules(k))] for k in kvers}
    assert before == after
    assert had == {p: os.path.exists(p) for p in had}
    assert not any(os.path.exists(debroot.module_path(k, "/")) for k in kvers)


def glob_modules(kver):
    return glob.glob("/lib/modules/%s/modules.*" % kver)
