"""Hierarchy queries on a parents array (the model is UsdSkel's ``Topology``).

A joint hierarchy is stored as one array: ``parents[j]`` is the index of joint
``j``'s parent, ``-1`` for a root.  :class:`Hierarchy` answers every question the
library asks of it -- children, roots, depth, parents-first order, descendants,
ancestors, the path between two joints, the common ancestor, depth-first order --
from tables built once, each in time linear in the number of joints (a 60 000-joint
chain included: nothing here recurses or relaxes level by level).
"""
from __future__ import annotations

import numpy as np


def _checked(parents) -> np.ndarray:
    """``parents`` as an int64 array; ``ValueError`` if an index is out of range."""
    parents = np.asarray(parents, dtype=np.int64)
    n = len(parents)
    if n and (parents.min() < -1 or parents.max() >= n):
        raise ValueError("parent index out of range")
    return parents


def hierarchy_depth(parents) -> np.ndarray:
    """(J,) depth of every joint: roots 0, ``depth[j] = depth[parents[j]] + 1``.

    Each joint's unknown ancestors are walked once, then numbered on the way back
    down, so the whole pass is linear in J.

    Raises
    ------
    ValueError if a parent index is out of range or the hierarchy has a cycle.
    """
    up = _checked(parents).tolist()
    unknown, on_path = -1, -2
    depth = [unknown] * len(up)
    for j in range(len(up)):
        path, k = [], j
        while k >= 0 and depth[k] == unknown:
            depth[k] = on_path
            path.append(k)
            k = up[k]
        if k >= 0 and depth[k] == on_path:  # the walk came back onto itself
            raise ValueError("the joint hierarchy has a cycle")
        d = depth[k] if k >= 0 else -1
        for m in reversed(path):
            d += 1
            depth[m] = d
    return np.array(depth, dtype=np.int64)


def topological_order(parents) -> np.ndarray:
    """(J,) joint indices with every parent before its children: by depth, then by index
    (a stable sort of the depths, so already sorted input keeps its order).

    Raises
    ------
    ValueError if a parent index is out of range or the hierarchy has a cycle.
    """
    return np.argsort(hierarchy_depth(parents), kind="stable")


class Hierarchy:
    """The topology of a joint hierarchy, built once from ``parents`` (J,) (``-1``: root).

    Joint lists come back as int64 arrays in increasing index order unless a method
    says otherwise.  The object is immutable: build a new one for a new hierarchy.
    """

    def __init__(self, parents):
        self.parents = _checked(parents).copy()
        self.parents.setflags(write=False)
        n = len(self.parents)
        self._depth = hierarchy_depth(self.parents)
        self._order = np.argsort(self._depth, kind="stable")
        # children grouped by parent (roots under -1), each group in index order
        self._by_parent = np.argsort(self.parents, kind="stable")
        self._start = np.concatenate([[0], np.cumsum(np.bincount(self.parents + 1, minlength=n + 1))])
        for a in (self._depth, self._order, self._by_parent):
            a.setflags(write=False)

    def __len__(self) -> int:
        return len(self.parents)

    def children(self, j: int) -> np.ndarray:
        """Joints whose parent is ``j`` (``j = -1``: the roots)."""
        return self._by_parent[self._start[j + 1]:self._start[j + 2]].copy()

    def roots(self) -> np.ndarray:
        """Joints without a parent."""
        return self.children(-1)

    def depth(self) -> np.ndarray:
        """(J,) depth of every joint, roots 0."""
        return self._depth.copy()

    def order(self) -> np.ndarray:
        """(J,) every joint after its parent: by depth, then by index."""
        return self._order.copy()

    def depth_first(self) -> np.ndarray:
        """(J,) pre-order depth-first walk: each root (in index order), then each child's
        whole subtree in index order, as a BVH file lists its joints."""
        out, todo = [], self.roots().tolist()[::-1]
        while todo:
            j = todo.pop()
            out.append(j)
            todo += self.children(j).tolist()[::-1]
        return np.array(out, dtype=np.int64)

    def descendants(self, j: int) -> np.ndarray:
        """Every joint below ``j`` (``j`` excluded), in index order."""
        out, todo = [], [j]
        while todo:
            kids = self.children(todo.pop()).tolist()
            out += kids
            todo += kids
        return np.array(sorted(out), dtype=np.int64)

    def ancestors(self, j: int) -> np.ndarray:
        """``j``'s parent, grandparent, ... up to its root (``j`` excluded)."""
        out, k = [], int(self.parents[j])
        while k >= 0:
            out.append(k)
            k = int(self.parents[k])
        return np.array(out, dtype=np.int64)

    def path(self, top: int, bottom: int) -> np.ndarray:
        """Joints from ``top`` (excluded) down to ``bottom`` (included); empty when
        ``bottom`` is not below ``top``."""
        up = self.ancestors(bottom)
        hit = np.flatnonzero(up == top)
        if not len(hit):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([up[:hit[0]][::-1], [bottom]]).astype(np.int64)

    def common_ancestor(self, a: int, b: int) -> int:
        """The deepest joint that is ``a`` or above it and ``b`` or above it; -1 if none
        (``a`` and ``b`` in different trees)."""
        above_a = {a, *self.ancestors(a).tolist()}
        for k in [b, *self.ancestors(b).tolist()]:
            if k in above_a:
                return int(k)
        return -1

    def nearest_where(self, ok) -> np.ndarray:
        """(J,) for each joint, itself if ``ok[j]``, else its nearest ancestor with ``ok``
        (-1 if none)."""
        out = np.full(len(self.parents), -1, dtype=np.int64)
        for j in self._order:
            p = self.parents[j]
            out[j] = j if ok[j] else (out[p] if p >= 0 else -1)
        return out
