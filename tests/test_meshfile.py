import numpy as np
import pytest
import trimesh

import asetransfer as at
from asetransfer import InputError
from conftest import FIXTURES


def test_obj_keeps_vertex_order_triangulates_polygons_and_reads_objects(tmp_path):
    p = tmp_path / "m.obj"
    p.write_text("# test\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\nv 3 0 0\nvt 0 0\nvn 0 0 1\n"
                 "o body\nf 1/1/1 2/1/1 3/1/1 4/1/1\no eye\nf -2 -1 5\n")
    m = at.load_mesh(p)
    np.testing.assert_allclose(m.vertices[:, 0], [0, 1, 1, 0, 2, 3])
    assert m.faces.tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 4]]
    assert m.parts == ("body", "eye")
    np.testing.assert_array_equal(m.vertex_part, [0, 0, 0, 0, 1, 1])


@pytest.mark.parametrize("ext", ["ply", "off", "stl"])
def test_trimesh_formats_round_trip(tmp_path, ext):
    box = trimesh.creation.box(extents=[1, 2, 3])
    p = tmp_path / f"b.{ext}"
    box.export(p)
    m = at.load_mesh(p)
    assert m.n_faces == 12
    assert m.n_vertices == 8  # STL corners are welded
    np.testing.assert_allclose(m.bounds(), [[-0.5, -1, -1.5], [0.5, 1, 1.5]])
    if ext != "stl":
        np.testing.assert_allclose(m.vertices, box.vertices)


@pytest.mark.parametrize("name, content, message", [
    ("empty.ply", b"", "empty"),
    ("pts.obj", b"v 0 0 0\nv 1 0 0\n", "no faces"),
    ("bad.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "vertex 9"),
    ("zero.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "malformed OBJ line 4"),
    ("text.obj", b"v a b c\n", "malformed OBJ line 1"),
    ("nan.obj", b"v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "NaN"),
    ("junk.ply", b"ply\nformat ascii 1.0\nelement vertex 3\nend_header\n1 2\n", "PLY"),
    ("x.3ds", b"whatever", "unknown mesh format"),
])
def test_bad_mesh_files(tmp_path, name, content, message):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(InputError, match=message) as e:
        at.load_mesh(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_missing_file():
    with pytest.raises(InputError, match="not found"):
        at.load_mesh("/nonexistent/dir/target.ply")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig"])
def test_an_obj_saved_as_utf16_or_with_a_byte_order_mark_reads_the_same(tmp_path, encoding):
    """Windows tools write UTF-16 text: read as Latin-1 it was 'mesh has no vertices'."""
    plain = FIXTURES / "target_tall.obj"
    copy = tmp_path / "tall.obj"
    copy.write_bytes(plain.read_text(encoding="utf-8").encode(encoding))
    got, want = at.load_mesh(copy), at.load_mesh(plain)
    assert np.array_equal(got.vertices, want.vertices) and np.array_equal(got.faces, want.faces)
