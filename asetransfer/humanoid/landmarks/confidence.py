"""How far each landmark is to be trusted: a confidence in [0, 1] from the symmetry it shows.

A left/right pair is rated by how nearly the two are mirror images across the body's
mid-plane (through the midline landmarks, normal to the frame's left), a midline landmark by
its distance from that plane: ``agreement * exp(-(d / scale)^2)``, ``d`` in units of the
body height, the scale ``SYMMETRY_SCALE`` or ``MIDLINE_SCALE``.  ``agreement`` is how nearly
the feet point the same way (:func:`~.frame.frame_from_feet`), so every landmark is capped by the
frame's own confidence; a landmark without its partner gets half of it.
"""
from __future__ import annotations

import numpy as np

from ...geometry.symmetry import reflect
from .frame import BodyFrame

# confidence exp(-(d / scale)^2): d is how far a left/right pair is from mirror images,
# or a midline landmark from the mid-plane (fractions of H)
SYMMETRY_SCALE = 0.03
MIDLINE_SCALE = 0.02


def confidence(v: np.ndarray, frame: BodyFrame, named: dict, agreement: float, mid: float | None = None) -> dict:
    """Per landmark: left/right pairs by how nearly they mirror each other, midline
    landmarks by their distance from the mid-plane (through the head top and the crotch
    of ``named``, or at ``mid`` along the frame's left), all capped by the frame's agreement."""
    if mid is None:
        mid = float(np.mean(v[[named[n] for n in ("head_top", "crotch") if n in named]] @ frame.left))
    out = {}
    for name, x in named.items():
        base, _, s = name.partition(".")
        if s:
            other = named.get(f"{base}.{'R' if s == 'L' else 'L'}")
            if other is None:
                out[name] = 0.5 * agreement
                continue
            mirrored = reflect(v[[other]], np.append(frame.left, mid))[0]
            d = np.linalg.norm(v[x] - mirrored) / frame.height / SYMMETRY_SCALE
        else:
            d = abs(v[x] @ frame.left - mid) / frame.height / MIDLINE_SCALE
        out[name] = round(float(agreement * np.exp(-d * d)), 4)
    return out
