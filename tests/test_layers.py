"""The library's layering (docs/architecture.md): every import points downwards.

Ranks, bottom to top: ``errors``/``config``/``_version`` < ``model`` < ``geometry``
< ``humanoid`` < ``stages`` < ``handoff`` < ``describe`` < ``job`` < ``batch``.  ``io``
(file formats) imports only ``model``, ``geometry`` and the bottom modules, and nothing
but ``io`` itself, ``job`` (one transfer: files in, files out), ``batch`` (many targets
in, many rigs out) and the package's lazy ``__init__`` imports ``io``.  The library never
imports the command line.  Imports inside functions count too.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

PACKAGE = ROOT / "asetransfer"
RANK = {"errors": 0, "config": 0, "_version": 0, "model": 1, "geometry": 2, "humanoid": 3, "stages": 4,
        "handoff": 5, "describe": 6, "job": 7, "batch": 8}
IO_MAY_IMPORT = {"errors", "config", "_version", "model", "geometry", "io"}
IO_USERS = {"io", "job", "batch"}  # the layers that may import io (besides the package's lazy __init__)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield path, list(rel.parts)


def _imported(path: pathlib.Path, parts: list) -> list:
    """(line, imported module parts below asetransfer, names) of every import of ours in the file."""
    package = parts[:-1]  # the module's package, relative to asetransfer
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else list(package)
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == "asetransfer" or node.module.startswith("asetransfer.")):
                target = node.module.split(".")[1:]
            else:
                if node.module and node.module.split(".")[0] in ("cli", "asetransfer_cli"):
                    out.append((node.lineno, ["<cli>"], []))
                continue
            out.append((node.lineno, target, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                if top in ("cli", "asetransfer_cli"):
                    out.append((node.lineno, ["<cli>"], []))
                elif top == "asetransfer":
                    out.append((node.lineno, a.name.split(".")[1:], []))
    return out


def _layer(parts: list) -> str:
    return parts[0] if parts else ""


def test_every_import_points_downwards():
    problems = []
    for path, parts in _modules():
        here = _layer(parts)
        if parts == ["__init__"]:
            continue  # the package's lazy export table names every layer by design
        for line, target, _ in _imported(path, parts):
            where = f"asetransfer/{'/'.join(parts)}.py:{line}"
            there = _layer(target)
            if target == ["<cli>"]:
                problems.append(f"{where} imports the command line")
            elif here == "io":
                if there not in IO_MAY_IMPORT:
                    problems.append(f"{where}: io imports {'.'.join(target)}")
            elif (there == "io" and here not in IO_USERS) or not target:
                problems.append(f"{where}: {here} imports {'.'.join(target) or 'the package root'}")
            elif there == "io":
                continue  # an IO_USER: io sits beside the layers, not in the ranking
            elif RANK[there] > RANK[here]:
                problems.append(f"{where}: {here} imports {there}, a layer above it")
    assert not problems, "\n".join(problems)


def test_no_module_imports_another_modules_private_names():
    problems = []
    for path, parts in _modules():
        for line, target, names in _imported(path, parts):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                problems.append(f"asetransfer/{'/'.join(parts)}.py:{line} imports {private} "
                                f"from {'.'.join(target)}")
    assert not problems, "\n".join(problems)


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    # the check itself must be able to fail: a model module importing a stage is caught
    fake = tmp_path / "asetransfer"
    (fake / "model").mkdir(parents=True)
    (fake / "model" / "bad.py").write_text("def f():\n    from ..stages.transfer import transfer\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match="model imports stages"):
        test_every_import_points_downwards()


def test_the_layer_check_sees_a_stage_reading_files(tmp_path, monkeypatch):
    # only batch (and io itself) may use io: a stage opening files is caught
    fake = tmp_path / "asetransfer"
    (fake / "stages").mkdir(parents=True)
    (fake / "stages" / "bad.py").write_text("from ..io import load_mesh\n")
    (fake / "batch.py").write_text("from .io import load_mesh\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match="stages imports io") as failure:
        test_every_import_points_downwards()
    assert "batch.py" not in str(failure.value)


def test_pyproject_installs_every_package():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert folders - declared == set(), "package folders missing from pyproject.toml"
    assert "asetransfer_cli" in declared and "cli" not in declared


def _modules_loaded_by(code: str) -> set:
    r = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                       capture_output=True, text=True, cwd=ROOT, check=True)
    return set(r.stdout.split())


def test_import_and_help_load_no_heavy_library():
    # `import asetransfer` and `asetransfer --help` must start fast: numerics load on use
    assert not {"numpy", "scipy", "igl"} & _modules_loaded_by("import asetransfer")
    loaded = _modules_loaded_by("import contextlib, io\nfrom asetransfer_cli.main import main\n"
                                "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])")
    assert not {"scipy", "igl", "trimesh"} & loaded
