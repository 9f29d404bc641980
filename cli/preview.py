"""``--preview PNG`` of ``transfer`` and ``markers``: what goes into the picture."""
from __future__ import annotations


def _frame(mesh, report: dict, side: str, config):
    """The body frame the markers were found in, else landmarks found now, else the up axis guess."""
    import numpy as np

    from asetransfer.humanoid.body import guess_up_axis
    from asetransfer.io.preview import mesh_frame_fallback
    from asetransfer.stages.markers import MarkerError, landmarks_of

    frame = report.get("frames", {}).get(side)
    if frame is not None:
        up, forward = np.array(frame["up"]), np.array(frame["forward"])
        return {"up": up, "forward": forward, "left": np.cross(up, forward)}
    try:
        f = landmarks_of(mesh, side, config).frame
        return {"up": f.up, "forward": f.forward, "left": f.left}
    except MarkerError:
        return mesh_frame_fallback(mesh, guess_up_axis(mesh)[0])


def characters(source, target, markers, origin: dict, config, target_rig=None) -> list:
    """The two panels' content: markers (coloured by confidence) on both, the skeleton in the target."""
    confidence = [origin.get("confidence", {}).get(n, 1.0) for n in markers.names]
    out = []
    for side, mesh, points in (("source", source.mesh, markers.source), ("target", target, markers.target)):
        out.append({"label": side, "mesh": mesh, "frame": _frame(mesh, origin, side, config),
                    "markers": points.positions(mesh.vertices, mesh.faces), "names": list(markers.names),
                    "confidence": confidence})
    out[0].update(joints=source.skeleton.bind_world[:, :3, 3], parents=source.skeleton.parents)
    if target_rig is not None:
        out[1].update(joints=target_rig.skeleton.bind_world[:, :3, 3], parents=target_rig.skeleton.parents)
    return out
