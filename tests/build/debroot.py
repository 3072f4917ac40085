# SPDX-License-Identifier: GPL-2.0
"""The user's path through the Debian packages, without touching this machine.

build_debs() runs "make deb". make_root() then does what installing both
packages does on a Debian host (dpkg unpacks them, sroce-dkms' postinst has
DKMS build and install the module, the kernel's postinst hook runs "dkms
autoinstall" for every later kernel), but into scratch trees under build/deb:

  root/   what a host would hold: the files of both packages (dpkg -x) plus the
          module DKMS installed, root/lib/modules/KVER/updates/dkms/sroce.ko
  work/   DKMS' own state (--dkmstree), a scratch signing key, TMPDIR

DKMS runs on the host against /lib/modules/KVER/build (the installed headers)
with --sourcetree/--dkmstree/--installtree pointing into build/deb, --no-depmod
(the host's depmod would rewrite /lib/modules/KVER/modules.*) and its module
signing key in work/ (by default it creates /var/lib/dkms/mok.key).
"""
import glob
import os
import shutil
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEB_DIR = os.path.join(REPO, "build", "deb")
ROOT = os.path.join(DEB_DIR, "root")
WORK = os.path.join(DEB_DIR, "work")
PACKAGES = ("sroce-dkms", "libsroce")


def version():
    return subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(REPO, "debian", "changelog"),
                           "-SVersion"], capture_output=True, text=True,
                          check=True).stdout.strip()


def kernels_with_headers():
    """Installed kernels DKMS can build for (like scripts/default-kver.sh)."""
    return sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                  for p in glob.glob("/lib/modules/*/build/Makefile"))


# One "make deb" and one DKMS root per test run: tests/build/test_deb.py and
# tests/vm/test_packages.py both need them, and the tree does not change while
# pytest runs (DKMS builds for two kernels take most of a minute under load).
_DEBS = {}
_ROOT = {}   # "made": (_stamp() of the .debs, {kver: sroce.ko}) of what ROOT holds


def _stamp(paths):
    return tuple((p, os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in sorted(paths))


def build_debs():
    """make deb (once per process); returns {package: path of its .deb}."""
    if _DEBS and all(os.path.exists(p) for p in _DEBS.values()):
        return dict(_DEBS)
    subprocess.run(["make", "-s", "deb"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    debs = {}
    for p in PACKAGES:
        found = glob.glob(os.path.join(DEB_DIR, "%s_%s_*.deb" % (p, version())))
        assert len(found) == 1, (p, found)
        debs[p] = found[0]
    _DEBS.clear()
    _DEBS.update(debs)
    return debs


def deb_files(deb):
    """The regular files a .deb installs, as absolute paths."""
    out = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True)
    names = subprocess.run(["tar", "-tvf", "-"], input=out.stdout, capture_output=True,
                           check=True).stdout.decode().splitlines()
    return sorted(ln.split()[-1][1:] for ln in names if ln.startswith("-"))


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()


def dkms(*args):
    src = os.path.join(ROOT, "usr", "src")
    env = dict(os.environ, TMPDIR=os.path.join(WORK, "tmp"),
               mok_signing_key=os.path.join(WORK, "mok.key"),
               mok_certificate=os.path.join(WORK, "mok.pub"))
    return subprocess.run(["dkms"] + list(args) + [
        "--sourcetree", src, "--dkmstree", os.path.join(WORK, "dkms"),
        "--installtree", os.path.join(ROOT, "lib", "modules"), "--no-depmod"],
        env=env, capture_output=True, text=True)


MODULE_SUFFIXES = ("", ".xz", ".zst", ".gz")   # DKMS compresses like the kernel's own modules


def module_path(kver, root=ROOT):
    """Where DKMS installs sroce.ko for kver (sroce.ko.xz on kernels that
    compress their modules, such as Debian's 6.12); the plain name if none is
    there yet."""
    base = os.path.join(root, "lib", "modules", kver, "updates", "dkms", "sroce.ko")
    for suffix in MODULE_SUFFIXES:
        if os.path.exists(base + suffix):
            return base + suffix
    return base


def make_root(debs, kvers):
    """Unpack both packages into ROOT and have DKMS build and install sroce.ko
    for each kernel in kvers. Returns {kver: path of the installed sroce.ko}.
    A root made earlier in this process from the same .deb files, for these
    kernels or more, is used again while its modules are still there."""
    key = _stamp(debs.values())
    made, have = _ROOT.get("made", (None, {}))
    if made == key and set(kvers) <= set(have) and all(map(os.path.exists, have.values())):
        return {k: have[k] for k in kvers}
    _ROOT.clear()
    for d in (ROOT, WORK):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "tmp"))
    os.makedirs(os.path.join(WORK, "dkms"))
    for p in PACKAGES:
        subprocess.run(["dpkg", "-x", debs[p], ROOT], check=True)
    r = dkms("add", "-m", "sroce", "-v", version())
    assert r.returncode == 0, r.stdout + r.stderr
    mods = {}
    for k in kvers:
        # DKMS installs only into kernels that exist in the install tree.
        os.makedirs(os.path.join(ROOT, "lib", "modules", k))
        # What /etc/kernel/postinst.d/dkms runs for a newly installed kernel:
        # every AUTOINSTALL=yes module is built and installed for it.
        r = dkms("autoinstall", "-k", k)
        assert r.returncode == 0 and os.path.exists(module_path(k)), \
            "dkms autoinstall -k %s:\n%s%s" % (k, r.stdout, r.stderr)
        mods[k] = module_path(k)
    _ROOT["made"] = (key, dict(mods))
    return mods


def build_id(path):
    """The GNU build ID of an ELF file (hex), compressed (.xz, .zst, .gz) or not."""
    tools = {".xz": "xz", ".zst": "zstd", ".gz": "gzip"}
    ext = os.path.splitext(path)[1]
    if ext in tools:
        with tempfile.NamedTemporaryFile(suffix=".ko") as tmp:
            subprocess.run([tools[ext], "-dc", path], stdout=tmp, check=True)
            return build_id(tmp.name)
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True,
                         check=True).stdout
    for ln in out.splitlines():
        if "Build ID:" in ln:
            return ln.split("Build ID:")[1].strip()
    raise AssertionError("no build ID in " + path)
