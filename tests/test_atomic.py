import json
import os
import subprocess
import time

import pytest

import asetransfer as at
from asetransfer import InputError
from asetransfer.io.atomic import atomic_write, remove_stale_parts
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


def _part(folder, name: str, pid: int, age: float = 0.0, tag: str = "k2j4"):
    """A temporary file as asetransfer names them (``.NAME.asetransfer-PID-TAG.part``),
    last written ``age`` seconds ago."""
    path = folder / f".{name}.asetransfer-{pid}-{tag}.part"
    path.write_bytes(b"x")
    if age:
        t = time.time() - age
        os.utime(path, (t, t))
    return path


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process start times come from /proc")
def test_a_part_whose_process_number_is_used_again_is_stale(tmp_path):
    """In a container every run may be process 1: a killed run's part carries the number of
    the run that comes next.  A part written before its process number's process started is
    no one's; one written since may be a live run's."""
    mine_old = _part(tmp_path, "out.glb", os.getpid(), age=3600)   # this process was not running then
    mine_new = _part(tmp_path, "out.glb", os.getpid(), tag="x7q1")  # may be this process's own
    old = _part(tmp_path, "out.report.json", 0, age=3600)
    sleeper = subprocess.Popen(["sleep", "30"])                     # started after `old` was written
    try:
        os.rename(old, tmp_path / f".out.report.json.asetransfer-{sleeper.pid}-k2j4.part")
        running = _part(tmp_path, "out.tpose.bvh", sleeper.pid)     # written since it started: kept
        removed = remove_stale_parts(tmp_path / "out.glb", tmp_path / "out.report.json", tmp_path / "out.tpose.bvh")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sorted(map(os.path.basename, removed)) == sorted(
        [mine_old.name, f".out.report.json.asetransfer-{sleeper.pid}-k2j4.part"])
    assert mine_new.exists() and running.exists()


def test_a_rerun_batch_removes_the_parts_of_targets_it_skips(tmp_path, capsys):
    """A batch killed while renaming a target's outputs leaves that target done (its report and
    rig) with the T-pose BVH's part: the rerun skips the target, so no write of its own cleans up."""
    import shutil

    from asetransfer_cli.main import main
    from conftest import FIXTURES

    shutil.copyfile(FIXTURES / "target_heavy.ply", tmp_path / "heavy.ply")
    shutil.copyfile(FIXTURES / "markers_heavy.json", tmp_path / "heavy.markers.json")
    out = tmp_path / "out"
    args = ["batch", str(FIXTURES / "source.glb"), str(tmp_path / "heavy.ply"), "-o", str(out), "-q", "--tpose"]
    assert main(args) == 0
    dead = 999999999
    parts = [_part(out, name, dead) for name in ("heavy.report.json", "heavy.tpose.bvh", "summary.csv")]
    foreign = _part(out, "notes.txt", dead)  # not an output of this batch: left alone
    assert main(args) == 0
    assert json.loads((out / "summary.json").read_text())["counts"]["skipped"] == 1
    assert not any(p.exists() for p in parts) and foreign.exists()


def test_correspond_writes_its_map_and_debug_meshes_as_one_transaction(tmp_path, monkeypatch, capsys):
    """A full disk on the last debug mesh left the map and the first meshes behind."""
    import asetransfer.io.ply as ply
    from asetransfer_cli.main import main
    from conftest import FIXTURES

    written = []
    real = ply.write_ply

    def disk_full_on_the_third(path, *a, **k):
        written.append(path)
        if len(written) == 3:
            raise InputError(path, "cannot write file (No space left on device)")
        return real(path, *a, **k)

    monkeypatch.setattr(ply, "write_ply", disk_full_on_the_third)
    out = tmp_path / "out"
    out.mkdir()
    code = main(["correspond", str(FIXTURES / "source.glb"), str(FIXTURES / "target_heavy.ply"), "--markers",
                 str(FIXTURES / "markers_heavy.json"), "-o", str(out / "map.npz"), "--debug-dir", str(out)])
    assert code == 2 and "No space left" in capsys.readouterr().err
    assert len(written) == 3 and os.listdir(out) == []
