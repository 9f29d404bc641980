"""The whole transfer on the MakeHuman dev cases, scored with ``../shared/eval``.

    python bench/bench_transfer.py [--cases d01_female ...] [--markers sparse dense]
                                   [--variant NAME=FLAGS ...] [--out DIR] [--json FILE] [--baseline]

Every run is the real command line (``asetransfer transfer``) in a child process,
so wall time and peak memory (the child's VmHWM, Linux) are what a user sees.  The
outputs go to ``DIR/<variant>-<markers>/<case>.glb`` and are scored by
``mheval.score``; stage times come from the ``--report`` JSON.  A variant is a name
and the extra flags of the transfer command, e.g. ``pa="--joints pa"``.  ``--baseline``
also scores the scorer's copy baseline (``mheval.baseline_copy``) on every case.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from devdata import DEV, EVAL, ROOT, SHARED, cases as dev_cases, target_path  # noqa: E402

from asetransfer.model.report import TransferReport  # noqa: E402

DEFAULT_VARIANTS = ["em=", "pa=--joints pa"]


def run_transfer(case_dir: Path, markers: str, flags: list, out: Path):
    """Run the CLI once on a dev case; returns (wall seconds, peak RSS MB, :class:`TransferReport`)."""
    return run_cli(case_dir / "source.glb", target_path(case_dir.name), case_dir / f"markers_{markers}.json",
                   flags, out)


def run_cli(source: Path, target: Path, markers: Path | None, flags: list, out: Path):
    """Run ``asetransfer transfer`` once in a child process (``markers`` None: automatic
    markers); returns (wall seconds, peak RSS MB, :class:`TransferReport`)."""
    report = out.with_suffix(".report.json")
    given = [] if markers is None else ["--markers", str(markers)]
    cmd = [sys.executable, "-c", _RUN_AND_REPORT_PEAK, "transfer", str(source), str(target),
           *given, "-o", str(out), "--report", str(report), "-q", *flags]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, env=CHILD_ENV)
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    err = err.decode()
    if proc.returncode != 0:
        raise SystemExit(f"{target}: transfer failed ({proc.returncode}): {err.strip()}")
    peak = float(err.strip().splitlines()[-1].split()[-1]) / 1024.0
    return wall, peak, TransferReport.from_json(json.loads(report.read_text()))


# Children may cache their bytecode, as an installed package has it: a shell with
# PYTHONDONTWRITEBYTECODE set would recompile our ~60 modules on every run (~0.1 s).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# The command line, then the child's own peak resident memory (VmHWM, kB) on stderr.
# ru_maxrss of a child would include the memory of the bench process it was forked from.
_RUN_AND_REPORT_PEAK = """
import sys
from asetransfer_cli.main import main
code = main(sys.argv[1:])
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")]
print("peak", hwm[0].split()[1] if hwm else "nan", file=sys.stderr)
sys.exit(code)
"""


def summarise(res: dict) -> dict:
    """The scorer's numbers we tabulate (see ../shared/eval/README.md for their meaning)."""
    je, jp = res["joint_error_mm"], res["joint_error_pct_height"]
    w, p = res["weight_error"], res["posed_error_pct_height"]
    sym, spine = res["symmetry_error"], res["spine_deviation"]
    return {
        "joint_mean_mm": je["all"]["mean"], "joint_max_mm": je["all"]["max"],
        "joint_mean_pct": jp["all"]["mean"], "body_mean_pct": jp["body"]["mean"],
        "finger_mean_pct": jp["fingers"]["mean"] if jp["fingers"] else None,
        "orient_deg": res["joint_orientation_error_deg"]["all"]["mean"],
        "weight_err": w["area_weighted_mean"], "weight_p95": w["p95"],
        "local_mean": p["local"]["mean"], "local_p95": p["local"]["p95"],
        "world_mean": p["world_delta"]["mean"], "world_p95": p["world_delta"]["p95"],
        "sym_mm": sym["mm"]["mean"] if sym["applicable"] and sym["mm"] else None,
        "spine_mm": spine["mm"]["mean"] if spine["applicable"] and spine["mm"] else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--markers", nargs="*", default=["sparse", "dense"])
    ap.add_argument("--variant", nargs="*", default=DEFAULT_VARIANTS, help="NAME=FLAGS")
    ap.add_argument("--out", default="/tmp/asetransfer-bench")
    ap.add_argument("--json", help="write all rows here")
    ap.add_argument("--baseline", action="store_true",
                    help="also score mheval.baseline_copy (the source rig moved by the markers' similarity)")
    args = ap.parse_args()
    if not DEV.is_dir() or not EVAL.is_dir():
        sys.exit(f"{SHARED}: dev data or scorer not found")
    sys.path.insert(0, str(EVAL))
    from mheval.score import score

    cases = args.cases or dev_cases()
    rows = []
    head = (f"{'variant':10} {'markers':7} {'case':22} {'joint mm':>8} {'max':>6} {'%H':>5} {'body%H':>6} "
            f"{'fing%H':>6} {'orient':>6} {'w.err':>6} {'local':>11} {'world':>11} {'sym':>5} {'spine':>5} "
            f"{'wall s':>6} {'MB':>5}  stages s (corr/skel/weights)")
    print(head)
    for variant in args.variant:
        name, _, flags = variant.partition("=")
        for markers in args.markers:
            out_dir = Path(args.out) / f"{name}-{markers}"
            out_dir.mkdir(parents=True, exist_ok=True)
            for case in cases:
                out = out_dir / f"{case}.glb"
                wall, rss, report = run_transfer(DEV / case, markers, shlex.split(flags), out)
                s = summarise(score(str(DEV / case), str(out)))
                t = report.timings
                row = {"variant": name, "flags": flags, "markers": markers, "case": case, "wall_s": wall,
                       "peak_mb": rss, "timings": t.to_json(), "skeleton_timings": report.skeleton.timings.to_json(),
                       **s}
                rows.append(row)
                fmt = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
                print(f"{name:10} {markers:7} {case:22} {s['joint_mean_mm']:8.1f} {s['joint_max_mm']:6.1f} "
                      f"{s['joint_mean_pct']:5.2f} {s['body_mean_pct']:6.2f} {s['finger_mean_pct']:6.2f} "
                      f"{s['orient_deg']:6.2f} {s['weight_err']:6.3f} "
                      f"{s['local_mean']:5.2f}/{s['local_p95']:5.2f} {s['world_mean']:5.2f}/{s['world_p95']:5.2f} "
                      f"{fmt(s['sym_mm'], '5.2f')} {fmt(s['spine_mm'], '5.2f')} {wall:6.2f} {rss:5.0f}  "
                      f"{t.correspondence:.2f}/{t.skeleton:.3f}/{t.weights:.3f}", flush=True)
    if args.baseline:
        print_baseline(cases, Path(args.out) / "baseline", score)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


def print_baseline(cases: list, out_dir: Path, score) -> None:
    """Score the scorer's copy baseline (every marker of the case, Umeyama, nearest-vertex weights) per case."""
    from mheval.baseline_copy import baseline
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"{'baseline':10} {'markers':7} {'case':22} {'joint mm':>8} {'max':>6} {'%H':>5} {'body%H':>6} "
          f"{'fing%H':>6} {'orient':>6} {'w.err':>6} {'local':>11} {'world':>11}")
    for case in cases:
        out = out_dir / f"{case}.glb"
        baseline(str(DEV / case), str(out))
        s = summarise(score(str(DEV / case), str(out)))
        print(f"{'copy':10} {'all':7} {case:22} {s['joint_mean_mm']:8.1f} {s['joint_max_mm']:6.1f} "
              f"{s['joint_mean_pct']:5.2f} {s['body_mean_pct']:6.2f} {s['finger_mean_pct']:6.2f} "
              f"{s['orient_deg']:6.2f} {s['weight_err']:6.3f} "
              f"{s['local_mean']:5.2f}/{s['local_p95']:5.2f} {s['world_mean']:5.2f}/{s['world_p95']:5.2f}", flush=True)


if __name__ == "__main__":
    main()
