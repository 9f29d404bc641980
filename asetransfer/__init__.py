"""asetransfer: transfer a rigged character's skeleton and skin weights to a new mesh.

The pipeline reads top to bottom: ``io`` -> ``correspondence`` -> ``skeleton`` ->
``weights`` -> ``export``.  Data types are small dataclasses over numpy arrays:
:class:`Mesh`, :class:`Skeleton`, :class:`SkinWeights`, :class:`Rig`.
"""
__version__ = "0.1.0"

from .errors import InputError  # noqa: E402
from .model.mesh import Mesh  # noqa: E402
from .model.rig import Rig  # noqa: E402
from .model.skeleton import Skeleton  # noqa: E402
from .model.skin import SkinWeights, linear_blend_skinning  # noqa: E402
from .io import load_markers, load_mesh, load_rig, save_rig  # noqa: E402
from .config import Config, CorrespondenceConfig, SkeletonConfig, WeightsConfig  # noqa: E402
from .stages.transfer import Result, transfer  # noqa: E402
from .model.animation import Animation  # noqa: E402
from .io.bvh import read_bvh, write_bvh  # noqa: E402
from .handoff.calibration import propose_calibration, transfer_calibration  # noqa: E402
from .io.calibration import read_calibration, write_calibration  # noqa: E402
from .handoff.retarget import retarget, retarget_bvh  # noqa: E402

__all__ = ["Animation", "Config", "CorrespondenceConfig", "InputError", "Mesh", "Result", "Rig", "Skeleton",
           "SkeletonConfig", "SkinWeights", "WeightsConfig", "linear_blend_skinning", "load_markers",
           "load_mesh", "load_rig", "propose_calibration", "read_bvh", "read_calibration", "retarget",
           "retarget_bvh", "save_rig", "transfer", "transfer_calibration", "write_bvh", "write_calibration",
           "__version__"]
