"""Build the Blender extension zips of the asetransfer add-on, one per platform.

    python blender/build_extension.py [-o OUT_DIR] [--platforms linux-x64,macos-arm64,windows-x64]

Each zip holds the add-on (``blender/asetransfer_blender``), its manifest with the
version of asetransfer and the wheels it needs, and those wheels: asetransfer itself
(built from this repository) and its dependencies for the platform and Blender's
Python (3.11), fetched with ``pip download --only-binary :all:``.  NumPy is not
bundled: Blender ships it (1.26.4 in Blender 4.2-4.5).  The zip is written by
Blender's own extension builder (``blender_ext.py build``, found in Blender or the
``bpy`` module; ``--blender-ext`` names it); the result installs with
``blender --command extension install-file -r user_default -e asetransfer-VERSION-PLATFORM.zip``.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
ADDON = HERE / "asetransfer_blender"
#: Blender platform name -> pip platform tags accepted for it (newest first)
PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux2014_x86_64"],
    "macos-arm64": ["macosx_14_0_arm64", "macosx_12_0_arm64", "macosx_11_0_arm64"],
    "windows-x64": ["win_amd64"],
}
PYTHON_VERSION = "3.11"  # Blender 4.2-4.5


def dependencies() -> list:
    """asetransfer's requirements from pyproject.toml, without NumPy (Blender has it)."""
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
    reqs = re.findall(r'"([^"]+)"', block)
    return [r for r in reqs if not r.lower().startswith("numpy")]


def version() -> str:
    return re.search(r'__version__ = "([^"]+)"', (ROOT / "asetransfer" / "_version.py").read_text()).group(1)


def pip(*args):
    subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"], check=True)


def fetch_wheels(wheels: pathlib.Path, platforms: list) -> None:
    """asetransfer's own wheel and each dependency's wheel for every platform, into ``wheels``."""
    pip("wheel", "--no-deps", "-w", str(wheels), str(ROOT))
    for name in platforms:
        tags = [a for tag in PLATFORMS[name] for a in ("--platform", tag)]
        pip("download", "--only-binary", ":all:", "--no-deps", "--python-version", PYTHON_VERSION, *tags,
            "-d", str(wheels), *dependencies())


def manifest(wheels: pathlib.Path, platforms: list) -> str:
    """The add-on's manifest with the version, the platforms and the bundled wheels filled in."""
    text = (ADDON / "blender_manifest.toml").read_text()
    text = re.sub(r'^version = ".*"$', f'version = "{version()}"', text, flags=re.M)
    listed = ",\n".join(f'  "./wheels/{w.name}"' for w in sorted(wheels.glob("*.whl")))
    extra = f'\nplatforms = {sorted(platforms)!r}\nwheels = [\n{listed},\n]\n'.replace("'", '"')
    return text.replace("\n[permissions]", extra + "\n[permissions]", 1)


def blender_ext() -> pathlib.Path:
    """Blender's extension command-line script, found in the bpy module of this interpreter."""
    import importlib.util

    spec = importlib.util.find_spec("bpy")
    found = sorted(pathlib.Path(spec.origin).parent.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py")) \
        if spec is not None and spec.origin else []
    if not found:
        sys.exit("build_extension: no bpy module here: pass --blender-ext BLENDER/4.x/scripts/addons_core/bl_pkg/"
                 "cli/blender_ext.py")
    return found[-1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output-dir", default=str(ROOT / "dist"), help="where the zips go (default dist/)")
    p.add_argument("--platforms", default=",".join(PLATFORMS), help="comma-separated Blender platform names")
    p.add_argument("--blender-ext", help="path of Blender's blender_ext.py (default: from the bpy module)")
    args = p.parse_args(argv)
    platforms = args.platforms.split(",")
    tool = pathlib.Path(args.blender_ext) if args.blender_ext else blender_ext()
    out = pathlib.Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = pathlib.Path(tmp) / "asetransfer"
        shutil.copytree(ADDON, stage, ignore=shutil.ignore_patterns("__pycache__"))
        fetch_wheels(stage / "wheels", platforms)
        (stage / "blender_manifest.toml").write_text(manifest(stage / "wheels", platforms))
        subprocess.run([sys.executable, str(tool), "build", "--source-dir", str(stage), "--output-dir", str(out),
                        "--split-platforms"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
