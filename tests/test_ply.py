"""Our PLY reader against hand-built files of every layout, and against trimesh."""
import struct

import numpy as np
import pytest
import trimesh

import asetransfer as at
from asetransfer.errors import InputError

RNG = np.random.default_rng(7)
VERTS = RNG.normal(size=(9, 3))
POLYS = [[0, 1, 2], [2, 3, 4, 5], [5, 6, 7], [1, 4, 7, 8, 0], [3, 8, 6]]
# fan triangulation in face order: (v0, vk, vk+1)
FANS = [[0, 1, 2], [2, 3, 4], [2, 4, 5], [5, 6, 7], [1, 4, 7], [1, 7, 8], [1, 8, 0], [3, 8, 6]]


def write_ply(path, fmt, index_type="int", extra=True, edges_first=False, polys=POLYS):
    """A PLY with extra vertex properties, a per-face flag before the index list and
    an unrelated ``edge`` element, in ``fmt`` (ascii / binary_little_endian / _big_)."""
    e = {"binary_little_endian": "<", "binary_big_endian": ">"}.get(fmt)
    code = {"int": "i", "uint": "I", "short": "h", "ushort": "H"}[index_type]
    head = ["ply", f"format {fmt} 1.0", "comment made by test_ply", "obj_info x"]
    edges = ["element edge 2", "property int vertex1", "property int vertex2"]
    if edges_first:
        head += edges
    head += [f"element vertex {len(VERTS)}", "property double x", "property float y", "property float z"]
    if extra:
        head += ["property uchar red", "property float nx"]
    head += [f"element face {len(polys)}"]
    if extra:
        head += ["property uchar flag"]
    head += [f"property list uchar {index_type} vertex_indices"]
    if not edges_first:
        head += edges
    head += ["end_header"]
    out = ("\n".join(head) + "\n").encode()
    vrows = [(*v, 200, 0.5) if extra else tuple(v) for v in VERTS.astype(np.float32).astype(np.float64)]
    frows = [((1,) if extra else ()) + (len(p), *p) for p in polys]
    erows = [(0, 1), (2, 3)]
    vfmt = "dff" + ("Bf" if extra else "")
    if e is None:
        line = lambda r: (" ".join(repr(float(x)) if isinstance(x, float) else str(x) for x in r) + "\n").encode()
        v = b"".join(line(r) for r in vrows)
        f = b"".join(line(r) for r in frows)
        ed = b"".join(line(r) for r in erows)
    else:
        v = b"".join(struct.pack(e + vfmt, *r) for r in vrows)
        f = b"".join(struct.pack(e + ("B" if extra else "") + "B" + code * len(p), *r) for r, p in zip(frows, polys))
        ed = b"".join(struct.pack(e + "ii", *r) for r in erows)
    out += (ed + v + f) if edges_first else (v + f + ed)
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
@pytest.mark.parametrize("extra, edges_first, index_type", [
    (True, False, "int"), (False, True, "uint"), (True, True, "ushort"), (False, False, "short")])
def test_every_layout_reads_the_same_mesh(tmp_path, fmt, extra, edges_first, index_type):
    m = at.load_mesh(write_ply(tmp_path / "m.ply", fmt, index_type, extra, edges_first))
    np.testing.assert_array_equal(m.faces, FANS)
    np.testing.assert_allclose(m.vertices, VERTS, rtol=1e-6)  # y, z stored as float32


def test_longest_polygon_first(tmp_path):
    """Rows read as long as the first one would overrun the file: walk them instead."""
    polys = [POLYS[3]] + POLYS[:3] + POLYS[4:]
    fans = FANS[4:7] + FANS[:4] + FANS[7:]
    for fmt in ("binary_little_endian", "ascii"):
        m = at.load_mesh(write_ply(tmp_path / "m.ply", fmt, extra=False, polys=polys))
        np.testing.assert_array_equal(m.faces, fans)


def test_polygon_with_many_corners(tmp_path):
    """A 100-gon (a cap) between two triangles: 98 fan triangles, in order."""
    ring = list(range(100))
    p = tmp_path / "cap.ply"
    rows = [[0, 1, 2], ring, [3, 4, 5]]
    p.write_text("ply\nformat ascii 1.0\nelement vertex 100\nproperty float x\nproperty float y\nproperty float z\n"
                 "element face 3\nproperty list uchar int vertex_indices\nend_header\n"
                 + "".join(f"{np.cos(t)} {np.sin(t)} 0\n" for t in np.linspace(0, 6, 100))
                 + "".join(f"{len(r)} {' '.join(map(str, r))}\n" for r in rows))
    m = at.load_mesh(p)
    np.testing.assert_array_equal(m.faces, [[0, 1, 2]] + [[0, k, k + 1] for k in range(1, 99)] + [[3, 4, 5]])


def test_triangles_only_binary_matches_trimesh(tmp_path):
    """The fixed-width fast path (every face a triangle) against trimesh's reader."""
    sphere = trimesh.creation.icosphere(subdivisions=3)
    for encoding in ("binary", "ascii"):
        p = tmp_path / f"s_{encoding}.ply"
        p.write_bytes(trimesh.exchange.ply.export_ply(sphere, encoding=encoding))
        ours, theirs = at.load_mesh(p), trimesh.load(p, process=False)
        np.testing.assert_array_equal(ours.faces, theirs.faces)
        np.testing.assert_array_equal(ours.vertices, theirs.vertices)


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian"])
def test_truncated_files_are_reported(tmp_path, fmt):
    data = write_ply(tmp_path / "m.ply", fmt).read_bytes()
    body = data.index(b"end_header") + len("end_header\n")
    for cut in (body - 3, body + 5, len(data) - 40, len(data) - 2):
        p = tmp_path / f"cut{cut}.ply"
        p.write_bytes(data[:cut])
        with pytest.raises(InputError, match="cannot parse PLY file") as e:
            at.load_mesh(p)
        assert str(p) in str(e.value)


@pytest.mark.parametrize("header, message", [
    ("ply\nformat ascii 1.0\nelement face 0\nproperty list uchar int vertex_indices\nend_header\n", "no vertex element"),
    ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n0 0\n", "no z"),
    ("ply\nformat utf8 1.0\nelement vertex 0\nend_header\n", "unknown format"),
    ("ply\nelement vertex 0\nproperty float x\nend_header\n", "no format line"),
    ("ply\nformat ascii 1.0\nelement vertex 1\nproperty quaternion x\nend_header\n", "bad property"),
    ("solid x\n", "no 'ply' magic"),
])
def test_malformed_headers(tmp_path, header, message):
    p = tmp_path / "bad.ply"
    p.write_text(header)
    with pytest.raises(InputError, match=message):
        at.load_mesh(p)


def test_point_cloud_has_no_faces(tmp_path):
    p = tmp_path / "pts.ply"
    p.write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                 "end_header\n0 0 0\n1 0 0\n0 1 0\n")
    with pytest.raises(InputError, match="no faces"):
        at.load_mesh(p)


def test_a_fractional_index_is_refused_but_fractional_face_data_is_read(tmp_path):
    header = ("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
              "element face 2\nproperty list uchar int vertex_indices\n{}end_header\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n")
    bad = tmp_path / "bad.ply"
    bad.write_text(header.format("") + "3 0 1 2\n3 1.5 3 2\n")  # truncated, 1.5 would read as vertex 1
    with pytest.raises(InputError, match="1.5 is not a whole number"):
        at.load_mesh(bad)
    uv = tmp_path / "uv.ply"  # MeshLab's per-corner texture coordinates: a list of floats
    uv.write_text(header.format("property list uchar float texcoord\n")
                  + "3 0 1 2 6 0.5 0.25 1 0 0 1\n3 1 3 2 6 0.5 0.5 0.1 0.2 0.3 0.4\n")
    assert at.load_mesh(uv).faces.tolist() == [[0, 1, 2], [1, 3, 2]]
