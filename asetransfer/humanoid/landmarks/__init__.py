"""Landmarks of a two-legged character found from its geometry alone.

The same rules run on the source and on the target, so a landmark links the two
characters even where its anatomical meaning is approximate: what matters is that
both meshes answer the rule the same way.  Everything is intrinsic or measured in
the body's own frame, so the result does not depend on units, up axis, facing
direction, position, or the pose of the arms (T- to A-pose) and legs.

0. **The body** (:mod:`.find`, :mod:`.layout`).  Layers (clothes, hair: open shells just
   outside another piece; eyes just inside) are left out
   (:func:`~asetransfer.geometry.pieces.layer_faces`, the correspondence's rule), and so is
   a held prop (a sword, a staff): a piece whose far end stands out as an extremity with
   no mirror image on the body, when the rest still has a body layout.
1. **Extremities** (:mod:`.layout`).  On the surface graph (:mod:`.surface`: pieces
   bridged) the points farthest from the middle of the body (of its large pieces) within
   a large geodesic ball are the tips: head, two hands, two feet; one per limb, and when
   the five farthest are not laid out like a body the next five are tried.
2. **Which is which, intrinsically** (:mod:`.layout`).  The head is the tip with the
   smallest summed geodesic distance to the others (the neck is short; hands reach the
   head over the shoulders, feet over the whole body); the feet have the largest sums.
   Bridges between pieces can shorten a limb, so the other readings are tried after it,
   needing hands and feet that mirror each other.
3. **Body frame** (:mod:`.frame`, :mod:`.feet`).  Up is the normal of the ground plane
   through both soles; forward is toe minus heel; left = up x forward (right-handed),
   refined by the body's mirror plane.  Left and right feet are named by their side of the
   head, hands by the foot they are nearer along the surface (hands crossed over the body
   keep their own side, :mod:`.hands`).
4. **Rules** in that frame: head top (the middle of the head's topmost strip: its geodesic
   extremity slides over a flat crown when the middle moves, :mod:`.frame`), nose (most
   forward point of the head on its mid-plane), back of the head (straight behind the nose,
   on the head's outside) and ears (at the nose's height) (:mod:`.head`), hand tips (the
   hand extremities), fingertips (the hand's own extremities: the thumb is the one farthest
   from the hand tip, along the surface if the fingers are curled next to it; index to
   pinky follow in the order of the shortest chain from the thumb; only the thumb is named
   on a hand without exactly four others; two extremities of one blunt fingertip are
   merged, :mod:`.hands`), toe tips, heels (:mod:`.feet`), and the crotch (where the
   vertical midway between the thighs, found below the top of the shortest path between the
   toes, leaves the body's underside, :mod:`.crotch`), the throat and the nape (front and
   back of the line, cast front to back on the mid-plane, where followed down from the nose
   the head ends and the neck begins, :mod:`.neck`); where a limb narrows again past the
   forearm or the calf, the elbow's and the knee's sections (:mod:`.limbs`, cut out of the
   whole mesh, its layers included, and always given between vertices).
5. **Coarse meshes.**  A landmark is a vertex; the crotch, heels, toe tips, fingertips,
   head top, back of the head and ears are also given between vertices (their rules run
   on the triangles: exact cross-sections and clipped strips, :mod:`~asetransfer.geometry.
   slicing`, and lines cast exactly, :mod:`~asetransfer.geometry.rays`), which characters
   linked by landmarks use when one of them is coarse (:func:`between_vertices`): a
   2k-vertex body holds 2-9 vertices a thigh in the crotch rule's ring, and the vertex
   rules put its crotch, heels, toe tips, head top and ears 0.3-4 %H off.

The rules' proportions are fractions of the body height H (head top to ground): they
describe where a rule looks, not where a landmark is, and were checked on the MakeHuman dev
bodies (female to heavy male, T- to A-pose) and the fixtures.

:func:`find_landmarks` refuses a shape without this layout (a quadruped, a cube, a
single limb) with :class:`NotHumanoidError`, and rates every landmark with a
confidence in [0, 1] from the left/right symmetry and frame agreement it shows
(:mod:`.confidence`).
"""
from .find import COARSE_SPACING, Landmarks, between_vertices, find_landmarks, hand_tips_carried_out
from .frame import BodyFrame
from .hands import FINGERS
from .surface import NotHumanoidError

__all__ = ["COARSE_SPACING", "FINGERS", "BodyFrame", "Landmarks", "NotHumanoidError", "between_vertices",
           "find_landmarks"]
