# SPDX-License-Identifier: GPL-2.0
"""The install contract: exactly three files, and a module that ib_core can autoload."""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KVER = os.environ.get("KVER") or subprocess.run(
    [os.path.join(REPO, "scripts", "default-kver.sh")], capture_output=True, text=True,
    check=True).stdout.strip()


def test_make_install_installs_exactly_the_contract(tmp_path):
    dest = tmp_path / "root"
    subprocess.run(["make", "-s", "install", "DESTDIR=%s" % dest, "KVER=%s" % KVER], cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    assert files == sorted([
        "lib/modules/%s/extra/sroce.ko" % KVER,
        "usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav34.so",
        "etc/libibverbs.d/sroce.driver",
    ])
    assert (dest / "etc/libibverbs.d/sroce.driver").read_text().split() == ["driver", "sroce"]


def modinfo(field):
    ko = os.path.join(REPO, "build", "kmod", KVER, "kernel", "sroce.ko")
    return subprocess.run(["/usr/sbin/modinfo", "-F", field, ko], capture_output=True, text=True,
                          check=True).stdout.split("\n")


def test_module_metadata():
    assert "rdma-link-sroce" in modinfo("alias")
    assert modinfo("license")[0] == "GPL"
    assert modinfo("vermagic")[0].split()[0] == KVER
    deps = modinfo("depends")[0].split(",")
    assert "ib_core" in deps


def test_provider_exports_only_what_libibverbs_needs():
    so = os.path.join(REPO, "build", "cmake", "userspace", "provider", "libsroce-rdmav34.so")
    syms = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True,
                          check=True).stdout
    names = {ln.split()[-1] for ln in syms.splitlines() if ln.strip()}
    # libibverbs dlopen()s the provider; it must not leak C++ runtime symbols.
    assert not [n for n in names if n.startswith("_Z")], names
    undef = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True,
                           check=True).stdout
    assert "verbs_register_driver_34@IBVERBS_PRIVATE_34" in undef, undef
