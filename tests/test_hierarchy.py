"""Hierarchy queries on a hand-built tree (expected answers worked out by hand) and a long chain."""

import numpy as np
import pytest

from asetransfer.model.hierarchy import Hierarchy, hierarchy_depth, topological_order

#        0           5
#      / | \         |
#     3  1  6        7
#    /   |
#   8    2
#        |
#        4
PARENTS = np.array([-1, 0, 1, 0, 2, -1, 0, 5, 3])


def test_children_roots_depth():
    h = Hierarchy(PARENTS)
    assert h.children(0).tolist() == [1, 3, 6]
    assert h.children(4).tolist() == []
    assert h.roots().tolist() == [0, 5]
    assert h.depth().tolist() == [0, 1, 2, 1, 3, 0, 1, 1, 2]


def test_order_is_by_depth_then_index():
    assert Hierarchy(PARENTS).order().tolist() == [0, 5, 1, 3, 6, 7, 2, 8, 4]
    assert topological_order(PARENTS).tolist() == [0, 5, 1, 3, 6, 7, 2, 8, 4]


def test_depth_first_is_preorder_with_children_in_index_order():
    assert Hierarchy(PARENTS).depth_first().tolist() == [0, 1, 2, 4, 3, 8, 6, 5, 7]


def test_descendants_ancestors_path():
    h = Hierarchy(PARENTS)
    assert h.descendants(0).tolist() == [1, 2, 3, 4, 6, 8]
    assert h.descendants(1).tolist() == [2, 4]
    assert h.descendants(7).tolist() == []
    assert h.ancestors(4).tolist() == [2, 1, 0]
    assert h.ancestors(5).tolist() == []
    assert h.path(0, 4).tolist() == [1, 2, 4]
    assert h.path(2, 4).tolist() == [4]
    assert h.path(4, 4).tolist() == []
    assert h.path(3, 4).tolist() == []  # 4 is not below 3


def test_common_ancestor():
    h = Hierarchy(PARENTS)
    assert h.common_ancestor(4, 8) == 0
    assert h.common_ancestor(4, 2) == 2
    assert h.common_ancestor(2, 2) == 2
    assert h.common_ancestor(4, 7) == -1  # different trees


def test_nearest_where():
    ok = np.zeros(9, bool)
    ok[[1, 3]] = True
    assert Hierarchy(PARENTS).nearest_where(ok).tolist() == [-1, 1, 1, 3, 1, -1, -1, -1, 3]


def test_rejects_cycles_and_bad_indices():
    for bad in ([-1, 2, 1], [0], [-1, 5], [-2, 0]):
        with pytest.raises(ValueError):
            Hierarchy(bad)


def test_a_sixty_thousand_joint_chain_is_answered_without_recursion():
    n = 60_000
    parents = np.arange(-1, n - 1)
    h = Hierarchy(parents)
    assert h.depth()[-1] == n - 1
    assert h.order().tolist() == list(range(n))
    assert hierarchy_depth(parents)[-1] == n - 1
    assert h.depth_first().tolist() == list(range(n))
    assert len(h.descendants(0)) == n - 1
    assert h.path(0, n - 1)[0] == 1
    assert h.common_ancestor(n - 1, n // 2) == n // 2


def test_long_chain_reversed_indices():
    """A chain whose joints are numbered leaf first: the order must still put parents first."""
    n = 60_000
    parents = np.append(np.arange(1, n), -1)  # joint j's parent is j + 1
    assert topological_order(parents).tolist() == list(range(n - 1, -1, -1))


def test_skeleton_hierarchy_matches_its_queries():
    from asetransfer.model.skeleton import Skeleton

    n = len(PARENTS)
    world = np.tile(np.eye(4), (n, 1, 1))
    world[:, :3, 3] = np.arange(3 * n).reshape(n, 3)
    sk = Skeleton.from_world([f"j{k}" for k in range(n)], PARENTS, world)
    assert sk.hierarchy is sk.hierarchy  # built once
    assert sk.children(0).tolist() == [1, 3, 6]
    assert sk.order().tolist() == [0, 5, 1, 3, 6, 7, 2, 8, 4]
