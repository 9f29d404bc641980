"""One file-level job: ``asetransfer transfer``, ``asetransfer batch`` and the Python job
(:func:`asetransfer.job.transfer_files`) honour every transfer option the same way."""
from __future__ import annotations

import argparse
import json
import os
import shutil

import numpy as np
import pytest

import asetransfer as at
from asetransfer.config import Config, MarkersConfig, ShapesConfig, SkeletonConfig, WeightsConfig
from asetransfer.errors import InputError
from asetransfer.job import JobOptions, transfer_files
from asetransfer_cli.main import build_parser, main

from conftest import FIXTURES

SOURCE, TARGET, MARKERS = FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", FIXTURES / "markers_heavy.json"
#: options that name the one transfer's own files (the batch derives them per target)
FILE_OPTIONS = {"output", "report", "preview", "qa", "markers", "help", "quiet", "debug", "source", "target"}

#: two runs that together give every transfer option a value other than its default,
#: as command-line words and as the JobOptions the Python job takes ("CAL": the calibration)
RUNS = [
    (["--auto-markers", "off", "--joints", "pa", "--spine", "pa", "--mirror", "on", "--max-influences", "4",
      "--weights", "robust", "--no-pose-normalize", "--tpose"],
     lambda cal: JobOptions(Config(skeleton=SkeletonConfig(joints="pa", spine="pa", mirror="on", pose_normalize=False),
                                   weights=WeightsConfig(method="robust", max_influences=4),
                                   markers=MarkersConfig(automatic="off")), tpose=True)),
    (["--auto-markers", "on", "--em-rays", "16", "--em-ray-share", "0.25", "--symmetry-plane", "x",
      "--pose-normalize", "--max-influences", "6", "--weights", "interp", "--calibration", "CAL",
      "--blendshapes", "off", "--clips", "off"],
     lambda cal: JobOptions(Config(skeleton=SkeletonConfig(em_rays=16, em_ray_share=0.25, symmetry_plane=(1, 0, 0, 0),
                                                           pose_normalize=True),
                                   weights=WeightsConfig(method="interp", max_influences=6),
                                   markers=MarkersConfig(automatic="on"), shapes=ShapesConfig(mode="off")),
                            calibration=cal, clips="off")),
]


def _transfer_options() -> dict:
    """``dest -> (option strings, default)`` of every option of ``asetransfer transfer``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: (a.option_strings, a.default) for a in sub.choices["transfer"]._actions
            if a.dest not in FILE_OPTIONS}


def test_the_runs_cover_every_transfer_option():
    """A new option of ``transfer`` must be added to RUNS (and so be checked on every road)."""
    given = {word for words, _ in RUNS for word in words if word.startswith("--")}
    for dest, (strings, default) in _transfer_options().items():
        assert given & set(strings), f"no run gives {strings} a value: add it to RUNS"


def _comparable(path) -> bytes | dict:
    """A file's bytes, or for JSON its content without what names the file or times the run."""
    if not str(path).endswith(".json"):
        return path.read_bytes()
    data = json.loads(path.read_text())
    for key in ("file", "source_file", "timings", "time", "inputs", "output_sha256"):
        data.pop(key, None)
    return data


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "source.calibration.json"
    assert main(["-q", "calibrate-source", str(SOURCE), "-o", str(path)]) == 0
    return path


@pytest.mark.parametrize("run", range(len(RUNS)))
def test_cli_batch_and_python_job_write_the_same_files(run, calibration, tmp_path):
    words, options = RUNS[run]
    words = [str(calibration) if w == "CAL" else w for w in words]
    cli, batch, python = (tmp_path / name for name in ("cli", "batch", "python"))
    for folder in (cli, batch, python):
        folder.mkdir()
    assert main(["-q", "transfer", str(SOURCE), str(TARGET), "--markers", str(MARKERS), "-o",
                 str(cli / "target_heavy.glb"), *words]) == 0
    shutil.copy(MARKERS, batch / "target_heavy.markers.json")
    assert main(["-q", "batch", str(SOURCE), str(TARGET), "-o", str(batch), "--markers-dir", str(batch), *words]) == 0
    transfer_files(SOURCE, TARGET, python / "target_heavy.glb", MARKERS, options=options(str(calibration)))
    written = sorted(p.name for p in cli.iterdir())
    assert written == sorted(p.name for p in python.iterdir())
    assert set(written) <= {p.name for p in batch.iterdir()}
    assert ("target_heavy.tpose.bvh" in written) == ("--tpose" in words)
    assert ("target_heavy.calibration.json" in written) == ("--tpose" in words or "--calibration" in words)
    for name in written:
        assert _comparable(cli / name) == _comparable(batch / name) == _comparable(python / name), name


def test_batch_makes_its_output_directory_and_writes_any_rig_format(tmp_path):
    outdir = tmp_path / "new" / "cast"
    shutil.copy(MARKERS, tmp_path / "target_heavy.markers.json")
    assert main(["-q", "batch", str(SOURCE), str(TARGET), "-o", str(outdir), "--markers-dir", str(tmp_path),
                 "--format", "gltf"]) == 0
    assert (outdir / "target_heavy.gltf").is_file() and (outdir / "target_heavy.report.json").is_file()
    assert main(["-q", "batch", str(SOURCE), str(TARGET), "-o", str(tmp_path / "x"), "--format", "obj"]) == 2
    assert not (tmp_path / "x").exists()


def test_a_failure_after_the_rig_is_written_leaves_no_output(tmp_path, monkeypatch):
    """All outputs of one transfer are one transaction: the report failing to write takes
    the finished rig with it."""
    import asetransfer.job as job

    def fail(path, data, inputs):
        raise InputError(path, "cannot write file (No space left on device)")

    monkeypatch.setattr(job, "_write_json", fail)
    with pytest.raises(InputError, match="No space left"):
        transfer_files(SOURCE, TARGET, tmp_path / "rig.glb", MARKERS, options=JobOptions(tpose=True),
                       report=tmp_path / "rig.report.json")
    assert os.listdir(tmp_path) == []


def test_the_same_rules_for_markers_and_planes_on_every_road(tmp_path):
    """Too few hand markers with automatic markers off, and a symmetry plane off the body, are
    refused before any work by the job itself (so by the command line and the batch alike)."""
    few = tmp_path / "few.json"
    doc = json.loads(MARKERS.read_text())
    few.write_text(json.dumps({"markers": doc["markers"][:2]}))
    off = JobOptions(Config(markers=MarkersConfig(automatic="off")))
    with pytest.raises(InputError, match="few.json"):
        transfer_files(SOURCE, TARGET, tmp_path / "a.glb", few, options=off)
    far = JobOptions(Config(skeleton=SkeletonConfig(symmetry_plane=(1, 0, 0, 50))))
    with pytest.raises(InputError, match="symmetry-plane"):
        transfer_files(SOURCE, TARGET, tmp_path / "b.glb", MARKERS, options=far)
    shutil.copy(few, tmp_path / "target_heavy.markers.json")
    assert main(["-q", "batch", str(SOURCE), str(TARGET), "-o", str(tmp_path / "out"), "--markers-dir",
                 str(tmp_path), "--auto-markers", "off"]) == 3
    error = json.loads((tmp_path / "out" / "summary.json").read_text())["targets"][0]["error"]
    assert "target_heavy.markers.json: has 2 marker(s); at least 3 are needed" in error
    assert not (tmp_path / "a.glb").exists() and not (tmp_path / "b.glb").exists()


def _two_characters(rig, gap: float):
    """``rig`` and a copy of it ``gap`` to its side, as one file holds them: two skeletons
    (the copy's joints renamed ``.001``), two sets of parts."""
    from asetransfer.model.mesh import Mesh
    from asetransfer.model.rig import Rig
    from asetransfer.model.skeleton import Skeleton
    from asetransfer.model.skin import SkinWeights
    sk, n, j = rig.skeleton, rig.mesh.n_vertices, rig.skeleton.n_joints
    shift = np.eye(4)
    shift[0, 3] = gap
    names = sk.names + tuple(f"{name}.001" for name in sk.names)
    parents = np.concatenate([sk.parents, np.where(sk.parents >= 0, sk.parents + j, -1)])
    skeleton = Skeleton.from_world(names, parents, np.concatenate([sk.rest_world(), shift @ sk.rest_world()]),
                                   np.concatenate([sk.bind_world, shift @ sk.bind_world]))
    mesh = Mesh(np.concatenate([rig.mesh.vertices, rig.mesh.vertices + [gap, 0, 0]]),
                np.concatenate([rig.mesh.faces, rig.mesh.faces + n]),
                parts=rig.mesh.parts + tuple(f"{p}.001" for p in rig.mesh.parts),
                vertex_part=np.concatenate([rig.mesh.vertex_part, rig.mesh.vertex_part + len(rig.mesh.parts)]))
    skin = SkinWeights(np.concatenate([rig.skin.indices, rig.skin.indices + j]),
                       np.concatenate([rig.skin.weights, rig.skin.weights]), 2 * j)
    return Rig(mesh, skeleton, skin)


def test_a_source_holding_two_characters_is_said_to(tmp_path, caplog, fixture_source):
    """A scene exported whole (two characters side by side) was merged into one rig of 130
    joints without a word (the verdict 'poor' only after the work)."""
    from asetransfer.job import load_source
    at.save_rig(tmp_path / "pair.glb", _two_characters(fixture_source, 1.0))
    load_source(tmp_path / "pair.glb")
    said = [r.getMessage() for r in caplog.records if "skeletons that each move their own part" in r.getMessage()]
    assert len(said) == 1 and "'hips', 'hips.001'" in said[0] and "2 characters" in said[0]
    caplog.clear()
    load_source(FIXTURES / "source.glb")  # one character: nothing said
    assert not [r for r in caplog.records if "skeletons" in r.getMessage()]
