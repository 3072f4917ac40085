# SPDX-License-Identifier: GPL-2.0
"""vm/ab.py refuses what it cannot measure before it boots anything."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AB = os.path.join(REPO, "vm", "ab.py")


def ab(*args):
    return subprocess.run([sys.executable, AB] + list(args), capture_output=True, text=True,
                          timeout=60)


def test_help_names_the_variant_kinds():
    r = ab("--help")
    assert r.returncode == 0, r
    assert "VARIANT" in r.stdout and "rxe" in r.stdout, r.stdout


def test_a_case_that_is_not_program_and_size_is_refused():
    r = ab("--cases", "write_bw", "main", "rxe")
    assert r.returncode == 2 and "program:size" in r.stderr, r
    r = ab("--cases", "ib_write_bw:4096", "main", "rxe")
    assert r.returncode == 2 and "program:size" in r.stderr, r


def test_a_variant_without_its_module_file_is_refused(tmp_path):
    r = ab("--out", str(tmp_path), "main", "new=%s" % (tmp_path / "none.ko"))
    assert r.returncode != 0 and "no module file" in (r.stderr + r.stdout), r
    assert not (tmp_path / "boot").exists()
