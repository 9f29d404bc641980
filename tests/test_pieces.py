"""Layers and pieces that continue the body (asetransfer/geometry/pieces.py)."""
from __future__ import annotations

import numpy as np
import trimesh

from asetransfer.geometry.pieces import LayerRule, layer_faces
from asetransfer.geometry.topology import vertex_components

RULE = {"gap": 0.01, "distance": 0.03, "angle": 45.0, "fraction": 0.5, "hanging": 0.25}


def _ball():
    s = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
    return np.asarray(s.vertices), np.asarray(s.faces, dtype=np.int64)


def _card(rows: np.ndarray, width: float = 0.06):
    """A single-sided strip through ``rows`` (K, 3), ``width`` wide along z."""
    k = len(rows)
    v = np.concatenate([rows - [0, 0, width / 2], rows + [0, 0, width / 2]])
    i = np.arange(k - 1)
    return v, np.concatenate([np.stack([i, i + k, i + 1], 1), np.stack([i + 1, i + k, i + k + 1], 1)])


def _join(parts):
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    return np.concatenate([v for v, _ in parts]), np.concatenate([f + o for (_, f), o in zip(parts, offsets)])


def _layer_by_piece(v, f, **rule):
    layer = layer_faces(v, f, LayerRule(**{**RULE, **rule}))
    piece = vertex_components(len(v), f)[f[:, 0]]
    return [bool(layer[piece == p].all()) for p in range(piece.max() + 1)]


def test_a_card_hanging_off_the_body_rides_along_and_so_does_one_resting_on_it():
    # a card rooted on the ball (its first row 0.5 % of the radius out) falling away from it,
    # and an outer card 0.01 over its lower part touching only the first card
    drop = np.array([[1.005, 0.0, 0.0], [1.1, -0.3, 0.0], [1.2, -0.6, 0.0], [1.3, -0.9, 0.0], [1.4, -1.2, 0.0]])
    v, f = _join([_ball(), _card(drop), _card(drop[2:] + [0.01, 0.0, 0.0])])
    assert _layer_by_piece(v, f) == [False, True, True]
    # without the rule (hanging above 1) the first card is glued in as body surface and the
    # second rests on a glued piece
    assert _layer_by_piece(v, f, hanging=2.0) == [False, False, False]


def test_a_body_cut_in_two_continues_itself():
    # two hemispheres 1 % of the radius apart meet rim to rim: neither hangs off the other
    v, f = _ball()
    upper = (v[f][:, :, 1] > 0.005).all(axis=1)
    lower = (v[f][:, :, 1] < -0.005).all(axis=1)
    assert _layer_by_piece(v, np.concatenate([f[upper], f[lower]])) == [False, False]


def test_a_shell_over_a_body_cut_in_two_is_a_layer_even_where_its_hem_meets_the_cut():
    # a cap 2 % of the radius outside most of the upper hemisphere, its hem right over the cut rim
    # (a shirt made over armour cut at the waist): the hem's offset to the rim runs along the
    # normal, not along the surface, so the two do not continue each other and the cap,
    # smaller than the hemisphere, lies over it
    v, f = _ball()
    y = v[f][:, :, 1]

    def kept(faces):  # the faces on their own vertices (no lone vertex left as a piece)
        used = np.unique(faces)
        return v[used], np.searchsorted(used, faces)
    upper, lower = kept(f[(y > 0.005).all(axis=1)]), kept(f[(y < -0.005).all(axis=1)])
    front = kept(f[(y > 0.005).all(axis=1) & (v[f][:, :, 0] > -0.5).all(axis=1)])  # open at the back
    cap = (1.02 * front[0], front[1])
    assert _layer_by_piece(*_join([upper, lower, cap])) == [False, False, True]
