"""Determinism: the same inputs give byte-identical outputs.

One run in this process and one in a fresh interpreter with another hash seed (set
and dict orders of strings, thread pools and caches all start over), on the
smallest fixture target (~1 s each).
"""
from __future__ import annotations

import os
import subprocess
import sys

from asetransfer_cli.main import main
from conftest import FIXTURES, ROOT


def test_transfer_twice_gives_byte_identical_files(tmp_path):
    inputs = [str(FIXTURES / "source.glb"), str(FIXTURES / "target_cartoon.off"),
              "--markers", str(FIXTURES / "markers_cartoon.json")]
    first, second = tmp_path / "first.glb", tmp_path / "second.glb"
    assert main(["-q", "transfer", *inputs, "-o", str(first)]) == 0
    env = dict(os.environ, PYTHONHASHSEED="12345")
    r = subprocess.run([sys.executable, "-m", "asetransfer_cli.main", "-q", "transfer", *inputs, "-o", str(second)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    a, b = first.read_bytes(), second.read_bytes()
    assert len(a) > 100_000 and a == b
