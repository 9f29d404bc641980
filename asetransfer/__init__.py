"""asetransfer: transfer a rigged character's skeleton and skin weights to a new mesh.

The library is layered; each layer imports only the ones below it
(``docs/architecture.md``)::

    batch        many targets from one source: parallel, resumable, Dask  (reads and writes files)
    handoff      calibration, motion conversion, retargeting   (Tonoli, Molla, ReConForM)
    stages       correspondence -> joints -> skeleton -> weights; transfer()  (spec Ch. 2-3)
    humanoid     left/right naming, skeleton map, body points, T-pose
    geometry     alignment, Laplacians, sparse solves, closest points, symmetry planes
    model        Mesh, Skeleton, SkinWeights, Rig, Animation, Markers, TransferReport, ... (types, no I/O)
    errors, config, _version

``io`` reads and writes every file format and imports only ``model`` and
``geometry``; only ``batch`` (it orchestrates files) imports it; the command line (``asetransfer_cli``) sits on top.

The names below are loaded on first use, so ``import asetransfer`` is cheap and a
program pays only for the parts it touches.
"""
from __future__ import annotations

import importlib

from ._version import __version__

#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    "InputError": "errors",
    "Config": "config", "CorrespondenceConfig": "config", "SkeletonConfig": "config", "WeightsConfig": "config",
    "Mesh": "model.mesh", "Rig": "model.rig", "Skeleton": "model.skeleton", "Animation": "model.animation",
    "SkinWeights": "model.skin", "linear_blend_skinning": "model.skin", "Markers": "model.markers",
    "load_markers": "io", "load_mesh": "io", "load_rig": "io", "save_rig": "io",
    "read_bvh": "io.bvh", "write_bvh": "io.bvh",
    "read_calibration": "io.calibration", "write_calibration": "io.calibration",
    "Result": "stages.transfer", "transfer": "stages.transfer", "TransferReport": "model.report",
    "propose_calibration": "handoff.calibration", "transfer_calibration": "handoff.calibration",
    "retarget": "handoff.retarget", "retarget_bvh": "handoff.retarget",
    "transfer_many": "batch",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    """Load a public name from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'asetransfer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return __all__
