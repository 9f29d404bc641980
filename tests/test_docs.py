"""The user guide's worked example runs as written and makes what it says it makes."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np

import asetransfer as at
from conftest import ROOT


def _worked_example() -> tuple[str, str]:
    """The shell and Python blocks of docs/user-guide.md's worked-example section."""
    text = (ROOT / "docs" / "user-guide.md").read_text()
    section = text.split("## Worked example", 1)[1].split("\n## ", 1)[0]
    shell = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return shell, python


def test_user_guide_worked_example_runs_as_written(tmp_path):
    shell, python = _worked_example()
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    # the console script of this interpreter's environment, as after `pip install .`
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", shell], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    for name in ("tall_rigged.glb", "tall_report.json", "cartoon_rigged.glb", "source.calibration.json",
                 "heavy_rigged.glb", "heavy_rigged.calibration.json", "heavy_rigged.tpose.glb",
                 "heavy_rigged.tpose.bvh"):
        assert (out / name).is_file(), name
    tall = at.load_rig(out / "tall_rigged.glb")
    given = at.load_mesh(ROOT / "fixtures" / "target_tall.obj")
    assert tall.skeleton.n_joints == 65 and len(tall.mesh.vertices) == 6001 == len(given.vertices)
    np.testing.assert_allclose(tall.mesh.vertices, given.vertices, atol=1e-4)  # float32 in glTF, centimetres
    assert at.load_rig(out / "cartoon_rigged.glb").skin.influence_counts().max() <= 4

    r = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("65 joints; marker residual max")
    # the API's defaults are the command line's: same inputs, same machine, same bytes
    assert (out / "tall_rigged_api.glb").read_bytes() == (out / "tall_rigged.glb").read_bytes()
