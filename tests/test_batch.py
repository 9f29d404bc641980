"""``asetransfer batch`` and ``asetransfer.transfer_many`` on the bundled fixtures.

About a dozen fixture transfers in all: the reference run (three targets, one
process) is shared by the tests that compare bytes with it.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import asetransfer as at
from asetransfer import batch
from asetransfer_cli.main import main
from conftest import FIXTURES

SOURCE = str(FIXTURES / "source.glb")
CAST = {"heavy": ("target_heavy.ply", "markers_heavy.json"), "tall": ("target_tall.obj", "markers_tall.json"),
        "cartoon": ("target_cartoon.off", "markers_cartoon.json")}


def make_cast(folder, names=("heavy", "tall", "cartoon"), markers=True) -> list:
    """Fixture targets copied to ``folder/<name>.<ext>`` with ``<name>.markers.json`` beside them."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        mesh, marker_file = CAST[name]
        path = folder / (name + os.path.splitext(mesh)[1])
        shutil.copyfile(FIXTURES / mesh, path)
        if markers:
            shutil.copyfile(FIXTURES / marker_file, folder / f"{name}.markers.json")
        paths.append(str(path))
    return paths


def run_batch(*args) -> tuple:
    """``asetransfer batch ...`` in this process: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["batch", *map(str, args)])
    return code, err.getvalue()


def summary_of(outdir) -> dict:
    return json.loads((outdir / "summary.json").read_text())


def outputs(outdir) -> dict:
    """name -> bytes of every rig in ``outdir``."""
    return {p.name: p.read_bytes() for p in sorted(outdir.glob("*.glb"))}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The three fixture targets rigged by one batch in this process: (targets, outdir, exit code, stderr)."""
    root = tmp_path_factory.mktemp("reference")
    targets = make_cast(root / "cast")
    (root / "out").mkdir()
    code, err = run_batch(SOURCE, *targets, "-o", root / "out", "-q")
    return targets, root / "out", code, err


def test_batch_rigs_every_target_and_summarises(reference, tmp_path):
    targets, out, code, err = reference
    assert code == 0, err
    assert set(outputs(out)) == {"heavy.glb", "tall.glb", "cartoon.glb"}
    summary = summary_of(out)
    assert summary["counts"] == {"ok": 3, "skipped": 0, "failed": 0} and not summary["interrupted"]
    assert [row["stem"] for row in summary["targets"]] == ["heavy", "tall", "cartoon"]  # the order given
    for row in summary["targets"]:
        assert row["status"] == "ok" and row["error"] == ""
        assert 0 <= row["marker_residual_mean"] <= row["marker_residual_max"] and row["fit_distance_p95"] > 0
        report = json.loads((out / f"{row['stem']}.report.json").read_text())
        assert report["schema"] == "asetransfer.report/1"
        assert report["inputs"]["target"] == batch.file_digest(row["target"])
        assert report["output_sha256"] == batch.file_digest(out / f"{row['stem']}.glb")
    with open(out / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["ok"] * 3 and rows[0]["marker_residual_max"]
    # the batch's rig is the one `asetransfer transfer` makes: same inputs, same bytes
    heavy = tmp_path / "heavy.glb"
    code = main(["transfer", SOURCE, targets[0], "--markers", str(FIXTURES / "markers_heavy.json"),
                 "-o", str(heavy), "-q"])
    assert code == 0 and heavy.read_bytes() == (out / "heavy.glb").read_bytes()


def test_a_rerun_skips_what_is_done_and_redoes_what_changed(reference, tmp_path):
    targets, out, _, _ = reference
    again = tmp_path / "out"
    shutil.copytree(out, again)
    code, err = run_batch(SOURCE, *targets, "-o", again, "-q")
    assert code == 0, err
    assert summary_of(again)["counts"] == {"ok": 0, "skipped": 3, "failed": 0}
    assert outputs(again) == outputs(out)
    # a changed marker file (same markers, other bytes) is a changed input: that target is redone
    cast = os.path.dirname(targets[0])
    moved = tmp_path / "cast"
    shutil.copytree(cast, moved)
    markers = moved / "tall.markers.json"
    markers.write_text(json.dumps(json.loads(markers.read_text()), indent=3))
    # a report of another schema (an older version's) vouches for nothing: that target is redone
    older = again / "heavy.report.json"
    older.write_text(json.dumps({k: v for k, v in json.loads(older.read_text()).items() if k != "schema"}))
    results = list(at.transfer_many(SOURCE, [moved / os.path.basename(t) for t in targets], again))
    assert sorted((r.stem, r.status) for r in results) == [("cartoon", "skipped"), ("heavy", "ok"),
                                                          ("tall", "ok")]
    assert json.loads(older.read_text())["schema"] == "asetransfer.report/1"
    assert outputs(again) == outputs(out)  # fresh or resumed: the same bytes


def test_jobs_2_makes_the_same_bytes_as_one_process(reference, tmp_path):
    targets, out, _, _ = reference
    code, err = run_batch(SOURCE, *targets, "-o", tmp_path, "--jobs", "2", "-q")
    assert code == 0, err
    assert outputs(tmp_path) == outputs(out)
    assert all(row["peak_rss_mb"] > 0 for row in summary_of(tmp_path)["targets"])


def test_a_local_dask_cluster_makes_the_same_bytes(reference, tmp_path):
    pytest.importorskip("distributed")
    targets, out, _, _ = reference
    code, err = run_batch(SOURCE, *targets[:2], "-o", tmp_path, "--dask", "local:2", "-q")
    assert code == 0, err
    assert outputs(tmp_path) == {k: v for k, v in outputs(out).items() if k in ("heavy.glb", "tall.glb")}


def test_dask_without_the_extra_is_one_clear_line(tmp_path, monkeypatch):
    targets = make_cast(tmp_path / "cast", ["heavy"])
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    code, err = run_batch(SOURCE, *targets, "-o", tmp_path / "out", "--dask", "local:2")
    assert code == 2 and err.count("\n") == 1 and "pip install 'asetransfer[dask]'" in err
    assert not (tmp_path / "out").exists()  # the folder it made for the outputs is gone again


def test_bad_targets_fail_alone(tmp_path):
    targets = make_cast(tmp_path / "cast", ["heavy"])
    broken = tmp_path / "cast" / "broken.ply"
    broken.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 3\nend_header\n1 2\n")
    shutil.copyfile(FIXTURES / "markers_heavy.json", tmp_path / "cast" / "broken.markers.json")
    lonely = make_cast(tmp_path / "cast", ["cartoon"], markers=False)  # no marker file: automatic markers
    cube = tmp_path / "cast" / "cube.obj"  # no marker file and no humanoid layout: fails alone
    cube.write_text("".join(f"v {x} {y} {z}\n" for x in (0, 1) for y in (0, 1) for z in (0, 1))
                    + "f 1 2 4\nf 1 4 3\nf 5 7 8\nf 5 8 6\nf 1 5 6\nf 1 6 2\nf 3 4 8\nf 3 8 7\n"
                      "f 1 3 7\nf 1 7 5\nf 2 6 8\nf 2 8 4\n")
    out = tmp_path / "out"
    out.mkdir()
    code, err = run_batch(SOURCE, str(broken), *targets, *lonely, str(cube), "-o", out)
    assert code == 3
    assert set(outputs(out)) == {"heavy.glb", "cartoon.glb"}
    rows = {row["stem"]: row for row in summary_of(out)["targets"]}
    assert rows["heavy"]["status"] == "ok" and rows["cartoon"]["status"] == "ok"
    assert rows["broken"]["status"] == "failed" and str(broken) in rows["broken"]["error"]
    assert rows["cube"]["status"] == "failed" and "humanoid" in rows["cube"]["error"]
    assert str(cube) in rows["cube"]["error"] and "\n" not in rows["broken"]["error"]


def test_what_stops_a_batch_before_it_starts(tmp_path):
    a, b = make_cast(tmp_path / "a", ["heavy"]), make_cast(tmp_path / "b", ["heavy"])
    out = tmp_path / "out"
    out.mkdir()
    code, err = run_batch(SOURCE, *a, *b, "-o", out)
    assert code == 2 and "both would write heavy.glb" in err
    with pytest.raises(at.InputError, match="both would write X.glb"):  # one file where case is ignored
        batch.plan_jobs([tmp_path / "a" / "x.ply", tmp_path / "b" / "X.obj"], out)
    code, err = run_batch(tmp_path / "a" / "heavy.ply", *a, "-o", out)  # a mesh is no rigged source
    assert code == 2 and "heavy.ply" in err
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code, err = run_batch(SOURCE, *a, "-o", blocked / "out")  # a directory cannot be made inside a file
    assert code == 2 and "cannot create the output directory" in err
    code, err = run_batch(SOURCE, *a, "-o", out, "--markers-dir", tmp_path / "markrs")  # a typo: no such folder
    assert code == 2 and "markrs: the markers folder does not exist" in err
    assert list(out.iterdir()) == []


def test_markers_dir_is_looked_up_before_the_targets_folder(tmp_path):
    target = make_cast(tmp_path / "cast", ["heavy"])[0]
    assert batch.markers_for(target) == str(tmp_path / "cast" / "heavy.markers.json")
    (tmp_path / "m").mkdir()
    assert batch.markers_for(target, tmp_path / "m") == str(tmp_path / "cast" / "heavy.markers.json")
    shutil.copyfile(FIXTURES / "markers_heavy.json", tmp_path / "m" / "heavy.markers.json")
    assert batch.markers_for(target, tmp_path / "m") == str(tmp_path / "m" / "heavy.markers.json")
    assert batch.markers_for(tmp_path / "cast" / "nothing.obj") is None


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_an_interrupted_batch_keeps_finished_outputs_and_no_partial_file(tmp_path, how):
    targets = make_cast(tmp_path / "cast", ["heavy", "tall"])
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "asetransfer_cli.main", "batch", SOURCE, *targets, "-o", str(out)]
    if how == "ctrl-c":
        cmd += ["--jobs", "2"]  # the workers get SIGINT too, and the batch stops them
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("*.report.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # until the first target is done; the other is still running
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (130, 0), err  # 0: the batch had just finished
    assert not [p.name for p in out.iterdir() if p.name.endswith(".part")]
    summary = summary_of(out)
    done = [row for row in summary["targets"] if row["status"] == "ok"]
    assert done and summary["interrupted"] == (proc.returncode == 130)
    for row in done:  # what finished is whole: its report vouches for its rig
        report = json.loads((out / f"{row['stem']}.report.json").read_text())
        assert report["output_sha256"] == batch.file_digest(out / f"{row['stem']}.glb")
    for path in out.glob("*.glb"):
        assert (out / (path.stem + ".report.json")).is_file() or proc.returncode == 130


def test_interrupted_while_the_pool_starts_its_workers_nothing_runs_on(tmp_path, monkeypatch):
    """Ctrl-C while the submits spawn the pool's workers: the workers are stopped and nothing is
    written (a pool left running would write the rigs after the summary says "not run")."""
    import concurrent.futures as cf
    import multiprocessing as mp

    submits = []
    submit = cf.ProcessPoolExecutor.submit

    def interrupted(self, *args, **kwargs):
        submits.append(1)
        if len(submits) == 2:  # the first worker is starting: a Ctrl-C lands here
            raise KeyboardInterrupt
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(cf.ProcessPoolExecutor, "submit", interrupted)
    before = set(mp.active_children())
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        list(batch.transfer_many(SOURCE, make_cast(tmp_path / "cast", ["heavy", "tall"]), out, workers=2))
    assert set(mp.active_children()) - before == set()  # stopped and joined: no worker writes on
    assert sorted(p.name for p in out.iterdir()) == []


def test_a_workers_warnings_read_as_the_batch_processs(tmp_path):
    """With --jobs 2 a target's warning is logged in its worker, which logs as the batch
    process does (``asetransfer: warning: ...``), not as a bare message."""
    cast = tmp_path / "cast"
    cast.mkdir()
    shutil.copyfile(FIXTURES / "target_heavy.ply", cast / "odd.ply")
    doc = json.loads((FIXTURES / "markers_heavy.json").read_text())
    for m in doc["markers"]:  # every target point 2.5 % of the height (1.8 m) off the surface
        m["target"]["point"][2] += 0.025 * 1.8
    (cast / "odd.markers.json").write_text(json.dumps(doc))
    shutil.copyfile(FIXTURES / "target_tall.obj", cast / "tall.obj")
    shutil.copyfile(FIXTURES / "markers_tall.json", cast / "tall.markers.json")
    run = subprocess.run([sys.executable, "-m", "asetransfer_cli.main", "batch", SOURCE, cast / "odd.ply",
                          cast / "tall.obj", "-o", tmp_path / "out", "--jobs", "2"], capture_output=True, text=True,
                         timeout=300)
    lines = run.stderr.splitlines()
    assert any("odd.markers.json" in line and "off its surface" in line for line in lines), run.stderr
    assert all(line.startswith("asetransfer: ") for line in lines), run.stderr


def test_progress_bar_on_a_terminal_and_lines_elsewhere(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    from asetransfer_cli.batch import Progress

    result = batch.TargetResult("a.ply", "a", "ok", seconds=1.0)
    for stream, expect in ((Terminal(), "2/2"), (io.StringIO(), "[1/2] a ok 1.0 s, about")):
        monkeypatch.setattr(sys, "stderr", stream)
        progress = Progress(2, quiet=False)
        progress.update(result)
        progress.update(result)
        progress.close()
        assert expect in stream.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    quiet = Progress(2, quiet=True)
    quiet.update(result)
    assert sys.stderr.getvalue() == ""


def _pool_workers(pid: int) -> dict:
    """The spawned pool workers of process ``pid``: worker pid -> CPU seconds so far (Linux /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError):
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            found[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the pool's workers through /proc")
def test_a_worker_killed_mid_target_does_not_sink_the_batch(reference, tmp_path):
    # what the kernel's out-of-memory killer does to a worker: its targets go to a new pool
    targets, out, _, _ = reference
    cmd = [sys.executable, "-m", "asetransfer_cli.main", "batch", SOURCE, *targets[:2], "-o", str(tmp_path),
           "--jobs", "2", "-q"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    busy = {}
    while not busy and proc.poll() is None and time.monotonic() < deadline:
        # past most of its start-up (imports, reading the source: 0.5-1 s of CPU), likely into its
        # first target (a whole job took 1.1-1.3 s of CPU here: a later threshold missed it);
        # a worker killed still starting breaks the pool all the same, and its jobs are retried
        busy = {pid for pid, cpu in _pool_workers(proc.pid).items() if cpu > 0.7}
        time.sleep(0.02)
    assert busy and proc.poll() is None
    os.kill(min(busy), signal.SIGKILL)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert outputs(tmp_path) == {k: v for k, v in outputs(out).items() if k in ("heavy.glb", "tall.glb")}


# ----------------------------------------------------------------------------- the prepared source
def test_the_prepared_source_is_cached_by_content_and_rigs_the_same(tmp_path, monkeypatch):
    from asetransfer.batch import prepared as prep
    from asetransfer.job import JobOptions

    monkeypatch.setenv("ASETRANSFER_CACHE", str(tmp_path / "cache"))
    targets = make_cast(tmp_path / "cast", ["cartoon"], markers=False)  # automatic markers
    first = prep.prepare_source(SOURCE, JobOptions(), automatic=True)
    assert first.landmarks and len(list((tmp_path / "cache").glob("source-*.pickle"))) == 1
    moved = tmp_path / "moved.glb"
    shutil.copyfile(SOURCE, moved)

    def unread(*_):
        raise AssertionError("the source was read again")

    monkeypatch.setattr("asetransfer.io.load_rig", unread)
    again = prep.prepare_source(moved, JobOptions(), automatic=True)  # same bytes elsewhere: from the cache
    assert again.source.path == str(moved) and again.source.digest == first.source.digest
    assert again.landmarks.keys() == first.landmarks.keys()
    monkeypatch.undo()
    monkeypatch.setenv("ASETRANSFER_CACHE", str(tmp_path / "cache"))
    cached = list(at.transfer_many(SOURCE, targets, tmp_path / "cached"))
    monkeypatch.setenv("ASETRANSFER_CACHE", "off")
    fresh = list(at.transfer_many(SOURCE, targets, tmp_path / "fresh"))
    assert [r.status for r in cached + fresh] == ["ok", "ok"]
    assert outputs(tmp_path / "cached") == outputs(tmp_path / "fresh")


def test_a_broken_cache_file_is_ignored_and_replaced(tmp_path, monkeypatch):
    from asetransfer.batch import prepared as prep
    from asetransfer.job import JobOptions

    monkeypatch.setenv("ASETRANSFER_CACHE", str(tmp_path))
    prep.prepare_source(SOURCE, JobOptions(), automatic=False)
    (cached,) = tmp_path.glob("source-*.pickle")
    cached.write_bytes(b"not a pickle")
    assert prep.prepare_source(SOURCE, JobOptions(), automatic=False).source.rig.skeleton.n_joints > 0
    assert cached.read_bytes() != b"not a pickle"
    monkeypatch.setenv("ASETRANSFER_CACHE", "off")
    assert prep.cache_folder() is None


def test_transfer_many_removes_what_killed_runs_left_of_targets_it_skips(tmp_path):
    targets = make_cast(tmp_path / "cast", ["cartoon"])
    out = tmp_path / "out"
    assert [r.status for r in at.transfer_many(SOURCE, targets, out)] == ["ok"]
    dead = 2 ** 22 + 12345  # above Linux's default pid_max: no such process
    stale = [out / f".cartoon.glb.asetransfer-{dead}-abcd.part", out / f".summary.json.asetransfer-{dead}-ef01.part"]
    for path in stale:
        path.write_bytes(b"half a file")
    assert [r.status for r in at.transfer_many(SOURCE, targets, out)] == ["skipped"]
    assert not any(path.exists() for path in stale)
