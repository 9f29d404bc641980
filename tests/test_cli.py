import json
import shutil
import subprocess
import sys

import pytest

import asetransfer as at
from asetransfer_cli.main import main
from conftest import tube_rig


@pytest.fixture
def rig_file(tmp_path):
    p = tmp_path / "rig.glb"
    at.save_rig(p, tube_rig())
    return p


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json_on_a_rig(capsys, rig_file):
    code, out, err = run(capsys, "info", rig_file, "--json")
    assert code == 0
    d = json.loads(out)
    assert d["vertices"] == 158 and d["faces"] == 312
    assert d["joints"] == ["root", "mid", "tip"]
    assert d["max_influences"] == 2
    assert d["hierarchy_depth"] == 3
    assert d["up_axis"] == "+Y"


def test_info_text_on_a_mesh(capsys, tmp_path):
    p = tmp_path / "t.obj"
    p.write_text("v 0 0 0\nv 0 0 1\nv 0 1 0\nf 1 2 3\n")
    code, out, _ = run(capsys, "info", p)
    assert code == 0 and "faces           1" in out and "mesh" in out


@pytest.mark.parametrize("content, message", [
    (b"glTF\x02\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 12, "truncated GLB"),
    (b'{"hello": "world"}', "not a glTF document"),
    (b"\x00\x01\x02 not json", "not a glTF file|invalid glTF JSON"),
])
def test_bad_gltf_files_exit_2_with_one_line(capsys, tmp_path, content, message):
    p = tmp_path / "bad.glb"
    p.write_bytes(content)
    code, out, err = run(capsys, "info", p)
    assert code == 2
    assert err.count("\n") == 1 and str(p) in err
    import re
    assert re.search(message, err)


def test_truncated_real_file(capsys, tmp_path, rig_file):
    data = rig_file.read_bytes()
    p = tmp_path / "cut.glb"
    p.write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, "info", p)
    assert code == 2 and "truncated" in err


def test_mesh_with_no_faces_exit_2(capsys, tmp_path):
    p = tmp_path / "pts.ply"
    p.write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                 "property float z\nend_header\n0 0 0\n1 0 0\n0 1 0\n")
    code, _, err = run(capsys, "info", p)
    assert code == 2 and "no faces" in err


def test_usage_errors_exit_2(capsys):
    assert run(capsys, "info")[0] == 2
    assert run(capsys, "frobnicate")[0] == 2
    base = ("transfer", "s.glb", "t.ply", "--markers", "m.json", "-o", "o.glb")
    for flag, value, words in (("--em-rays", "-3", "whole number from 0 to 4096"), ("--em-ray-share", "2", "from 0 to 1"),
                               ("--em-ray-share", "x", "from 0 to 1")):
        code, _, err = run(capsys, *base, flag, value)
        assert code == 2 and words in err and flag in err


def test_console_script_help_and_exit_codes(tmp_path, rig_file):
    exe = shutil.which("asetransfer")
    cmd = [exe] if exe else [sys.executable, "-m", "asetransfer_cli.main"]
    r = subprocess.run(cmd + ["--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "info" in r.stdout
    r = subprocess.run(cmd + ["info", str(tmp_path / "missing.glb")], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "file not found" in r.stderr


def test_markers_from_a_pipe_are_read_once_to_their_end(tmp_path, capsys):
    """``--markers <(...)`` (a FIFO) was refused as 'not a regular file'; read once, it rigs
    as the file itself does (the output checks only look at its name)."""
    import os
    import threading

    from conftest import FIXTURES

    markers = (FIXTURES / "markers_heavy.json").read_bytes()
    fifo = tmp_path / "markers.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:  # opens when the reader does; one writer, one read
            f.write(markers)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    args = [str(FIXTURES / "source.glb"), str(FIXTURES / "target_heavy.ply")]
    assert main(["transfer", *args, "--markers", str(fifo), "-o", str(tmp_path / "piped.glb"), "-q"]) == 0
    writer.join(5)
    assert not writer.is_alive()
    assert main(["transfer", *args, "--markers", str(FIXTURES / "markers_heavy.json"),
                 "-o", str(tmp_path / "file.glb"), "-q"]) == 0
    assert (tmp_path / "piped.glb").read_bytes() == (tmp_path / "file.glb").read_bytes()
    # a pipe that gives nothing is one line
    threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True).start()
    assert main(["transfer", *args, "--markers", str(fifo), "-o", str(tmp_path / "empty.glb")]) == 2
    assert "the pipe gave no data" in capsys.readouterr().err
