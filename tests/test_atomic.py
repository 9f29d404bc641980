import os

import pytest

import asetransfer as at
from asetransfer import InputError
from asetransfer.io.atomic import atomic_write
from conftest import tube_rig


def test_interrupted_write_leaves_no_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "out.glb"
    target.write_bytes(b"old")

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new data")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.glb"]


def test_refuses_to_overwrite_an_input_or_write_into_a_missing_dir(tmp_path):
    src = tmp_path / "src.glb"
    at.save_rig(src, tube_rig())
    before = src.read_bytes()
    with pytest.raises(InputError, match="one of the input files"):
        at.save_rig(tmp_path / "." / "src.glb", tube_rig(), inputs=[src])
    assert src.read_bytes() == before
    with pytest.raises(InputError, match="does not exist"):
        at.save_rig(tmp_path / "nope" / "out.glb", tube_rig())
    assert not (tmp_path / "nope").exists()
