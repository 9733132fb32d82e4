"""A detector with a vocabulary the project never shipped, built from the kitchen's hand-made ground truth.

For tests of other detectors' Detection2DArrays (issue 40): it names what no COCO detector names ("pc tower",
"food box") by projecting the annotated 3D boxes into each frame: the box of the corners in front of the
camera, clipped to the image, kept when enough of the frame's depth inside it lies on the object (so a
thing behind the table or the wall is not "seen"). Real frames, real depth; only the names come from
the annotation, as they would from an open-vocabulary detector.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import box_corners

NAMES = {24: "pc tower", 11: "food box"}  # ground-truth id -> the name this detector gives


def annotated_boxes(kitchen: Path, names: dict[int, str] = NAMES) -> list[tuple[str, np.ndarray]]:
    """(name, 9-DoF box) of the annotated objects ``names`` picks, in the kitchen's z-up world."""
    objects = json.loads((kitchen / "ground_truth.json").read_text())["objects"]
    return [(names[o["id"]], np.array([*o["box"], 0.0, 0.0])) for o in objects if o["id"] in names]


def detect(frame: Frame, boxes: list[tuple[str, np.ndarray]], min_on_object: float = 0.15,
           score: float = 0.8) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(names, scores, (N, 4) xyxy pixel boxes) of the annotated boxes this frame sees."""
    T_cam_world = np.linalg.inv(frame.T_world_camera)
    found: list[tuple[str, np.ndarray]] = []
    for name, box in boxes:
        corners = box_corners(box[None])[0]  # (8, 3) world
        cam = corners @ T_cam_world[:3, :3].T + T_cam_world[:3, 3]
        if (cam[:, 2] <= 0.1).any():
            continue
        uv = cam[:, :2] / cam[:, 2:3] * [frame.K[0, 0], frame.K[1, 1]] + frame.K[:2, 2]
        x0, y0 = np.clip(uv.min(axis=0), 0, [frame.width, frame.height])
        x1, y1 = np.clip(uv.max(axis=0), 0, [frame.width, frame.height])
        if x1 - x0 < 8 or y1 - y0 < 8:
            continue
        v, u = np.mgrid[int(y0):int(np.ceil(y1)), int(x0):int(np.ceil(x1))]
        z = frame.depth[v, u].astype(np.float64)
        ok = np.isfinite(z) & (z > 0)
        if ok.sum() < 20:
            continue
        cam_pts = np.stack([(u[ok] - frame.K[0, 2]) * z[ok] / frame.K[0, 0],
                            (v[ok] - frame.K[1, 2]) * z[ok] / frame.K[1, 1], z[ok]], axis=1)
        pts = cam_pts @ frame.T_world_camera[:3, :3].T + frame.T_world_camera[:3, 3]
        local = (pts - box[:3]) @ _rotation_z(box[6])  # into the box's axes
        inside = np.all(np.abs(local) <= box[3:6] / 2 + 0.03, axis=1)
        if inside.mean() >= min_on_object:
            found.append((name, np.array([x0, y0, x1, y1])))
    names = [n for n, _ in found]
    return names, np.full(len(found), score), np.array([b for _, b in found]).reshape(-1, 4)


def _rotation_z(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def write_recording(kitchen: Path, out: Path, topic: str = "/third_party/detections", stride: int = 1) -> Path:
    """A rosbag2 of the kitchen as a robot would record it beside such a detector: compressed colour and
    depth, camera_info, /tf, and this detector's Detection2DArray on ``topic`` for every frame. Returns ``out``."""
    from embodied_ros.frame_detections import named_detections, with_detections
    from embodied_ros.outputs.bag_writer import OutputTopics, SceneBagWriter
    from embodied_ros.recordings import open_source

    boxes = annotated_boxes(kitchen)
    writer = SceneBagWriter(out, OutputTopics(detections_2d=topic))
    with open_source(kitchen) as source:
        for frame in source.frames(stride=stride):
            writer.write_inputs_of(with_detections(frame, named_detections(*detect(frame, boxes))))
    writer.close()
    return out
