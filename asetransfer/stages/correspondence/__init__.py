"""Dense source <-> target correspondence (spec Ch. 2 and Appendix I, after ElastiFace).

Pipeline, top to bottom (:func:`correspond`, in :mod:`.pipeline`):

1. :mod:`.prepare`: :func:`asetransfer.geometry.alignment.umeyama` on the marker pairs
   brings the source into the target's frame (any units, any up axis); both meshes are
   then turned to the source's axes and scaled to a unit bounding-box diagonal, so
   parameters depend neither on units nor on how the target is turned, and prepared for
   the solvers (:class:`.side.PreparedSide`).
2. :mod:`.fairing` (Eq. A I-1) smooths both meshes jointly into similar featureless
   shapes on which corresponding markers coincide.
3. :mod:`.registration` (Eq. A I-2) deforms the faired source onto the faired target,
   then from there onto the original target.  The system matrix is the same for
   both stages: it is factorised once and every closest-point iteration is a
   back-substitution.
4. :mod:`.maps`: closest points between the registered source and the target give the
   maps in both directions (:class:`~asetransfer.model.correspondence.Correspondence`).

Large meshes are faired and registered on decimated proxies (:mod:`.proxies`).  Pieces of
a mesh that carry no marker (eyes, teeth, loose props) cannot be faired (nothing anchors
them); they ride along with the closest part of the body.
"""
from .pipeline import correspond

__all__ = ["correspond"]
