"""asetransfer: transfer a rigged character's skeleton and skin weights to a new mesh.

The pipeline reads top to bottom: ``io`` -> ``correspondence`` -> ``skeleton`` ->
``weights`` -> ``export``.  Data types are small dataclasses over numpy arrays:
:class:`Mesh`, :class:`Skeleton`, :class:`SkinWeights`, :class:`Rig`.
"""
__version__ = "0.1.0"

from .errors import InputError  # noqa: E402
from .mesh import Mesh  # noqa: E402
from .rig import Rig  # noqa: E402
from .skeleton import Skeleton  # noqa: E402
from .skin import SkinWeights, linear_blend_skinning  # noqa: E402
from .io import load_markers, load_mesh, load_rig, save_rig  # noqa: E402
from .config import Config, CorrespondenceConfig, SkeletonConfig, WeightsConfig  # noqa: E402
from .transfer import Result, transfer  # noqa: E402
from .animation import Animation  # noqa: E402
from .bvh import read_bvh, write_bvh  # noqa: E402
from .calibration import propose_calibration, read_calibration, transfer_calibration, write_calibration  # noqa: E402
from .retarget import retarget, retarget_bvh  # noqa: E402

__all__ = ["Animation", "Config", "CorrespondenceConfig", "InputError", "Mesh", "Result", "Rig", "Skeleton",
           "SkeletonConfig", "SkinWeights", "WeightsConfig", "linear_blend_skinning", "load_markers",
           "load_mesh", "load_rig", "propose_calibration", "read_bvh", "read_calibration", "retarget",
           "retarget_bvh", "save_rig", "transfer", "transfer_calibration", "write_bvh", "write_calibration",
           "__version__"]
