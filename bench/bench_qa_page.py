"""The QA page of a large character: its size and how soon it is ready in a browser.

    python bench/bench_qa_page.py [--runs N]

The MakeHuman dev source (``../shared/data/makehuman-dev/d01_female``) with every triangle
cut in four (53.5k vertices, each new vertex weighted as the mean of its edge's ends), its
test poses, written as a QA page (``asetransfer.io.qa_page.render_qa_page``) and opened in
headless Chromium with software WebGL (``tests/headless_browser.py``; Debian's
``chromium``).  Prints the page's size and write time, and for each of ``--runs`` loads its
``window.asetransferQA.loadSeconds`` (from the start of loading to ready): the first load
is cold (the browser just started), the next ones warm.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from devdata import SHARED

ROOT = Path(__file__).resolve().parent.parent
QA = "window.asetransferQA"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="loads of the page (the first cold)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import subdivided_rig
    from headless_browser import Browser, chromium

    from asetransfer.handoff.poses import stress_poses
    from asetransfer.handoff.review import Review
    from asetransfer.io import load_rig
    from asetransfer.io.qa_page import render_qa_page

    if chromium() is None:
        print("no Chromium (Debian: apt-get install chromium)")
        return 1
    source = load_rig(SHARED / "data" / "makehuman-dev" / "d01_female" / "source.glb")
    big = subdivided_rig(source)
    n = big.mesh.n_vertices
    review = Review(stress_poses(source, big), np.zeros(n), np.ones(n, dtype=bool), 1.7)
    frame = {"up": np.array([0, 1.0, 0]), "forward": np.array([0, 0, 1.0]), "left": np.array([1.0, 0, 0])}
    with tempfile.TemporaryDirectory(prefix="asetransfer-qa-") as folder:
        page = Path(folder) / "big.qa.html"
        started = time.perf_counter()
        page.write_bytes(render_qa_page(big, review, frame, None, None, title="50k"))
        written = time.perf_counter() - started
        print(f"{n} vertices: page {page.stat().st_size / 1e6:.1f} MB, written in {written:.2f} s")
        with Browser() as browser:
            for run in range(args.runs):
                browser.open(page)
                browser.wait_for(f"{QA} && ({QA}.ready || {QA}.errors.length > 0)", timeout=120)
                errors = browser.evaluate(f"{QA}.errors")
                seconds = browser.evaluate(f"{QA}.loadSeconds")
                print(f"load {run + 1} ({'cold' if run == 0 else 'warm'}): ready in {seconds:.2f} s"
                      + (f", errors {errors}" if errors else ""))
                browser.evaluate(f"{QA}.ready = false")
    return 0


if __name__ == "__main__":
    sys.exit(main())
