"""Scene memory -> ROS messages: RViz markers, vision_msgs detections, our object array, occupancy cloud.

Messages are built as rosbags dataclasses (so the offline runner writes them into bags with no
ROS installed); the ROS node converts them to rclpy messages field by field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..geometry.boxes import BOX_EDGES, as_boxes, box_corners, box_rotations
from ..memory.occupancy import OccupiedVoxels
from ..messages.convert import box_pose_msg, header_msg, pose_msg, time_msg, vector3_msg
from ..messages.types import msg_class
from .colors import OCCUPANCY_GREY, class_color, class_color_float

MARKER_NAMESPACES = ("boxes", "labels", "occupancy")
"""One namespace per layer, so RViz can toggle each."""

_ADD, _DELETEALL = 0, 3
_LINE_LIST, _CUBE_LIST, _TEXT_VIEW_FACING = 5, 6, 9


class ObjectLike(Protocol):
    """What the message builders read from a scene object (memory.SceneObject has it)."""

    id: int
    class_name: str
    score: float
    box: np.ndarray
    n_observations: int
    n_looks: int
    first_seen_ns: int
    last_seen_ns: int


def _point(p: np.ndarray) -> Any:
    return msg_class("geometry_msgs/msg/Point")(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def _rgba(rgb: tuple[float, float, float], a: float = 1.0) -> Any:
    return msg_class("std_msgs/msg/ColorRGBA")(r=float(rgb[0]), g=float(rgb[1]), b=float(rgb[2]), a=float(a))


def _points(xyz: np.ndarray) -> list[Any]:
    """(N, 3) array -> N geometry_msgs/Point (one class lookup, plain floats: the hot loop of big markers)."""
    Point = msg_class("geometry_msgs/msg/Point")
    return [Point(x=x, y=y, z=z) for x, y, z in np.asarray(xyz, dtype=np.float64).tolist()]


def voxel_rgba(occupancy: OccupiedVoxels) -> np.ndarray:
    """(M, 4) float RGBA per voxel: its class colour (grey when no class voted), more opaque when more certain."""
    palette = [class_color_float(name) for name in occupancy.vocabulary] + [
        tuple(c / 255 for c in OCCUPANCY_GREY)]
    rgb = np.asarray(palette, dtype=np.float64).reshape(-1, 3)[occupancy.labels.astype(np.int64)]  # -1: grey
    alpha = 0.35 + 0.5 * np.asarray(occupancy.probability, dtype=np.float64)
    return np.column_stack([rgb, alpha])


def _voxel_colors(occupancy: OccupiedVoxels) -> list[Any]:
    ColorRGBA = msg_class("std_msgs/msg/ColorRGBA")
    return [ColorRGBA(r=r, g=g, b=b, a=a) for r, g, b, a in voxel_rgba(occupancy).tolist()]


def box_edge_points(objects: Sequence[ObjectLike]) -> np.ndarray:
    """(N, 24, 3) world points: the 12 edges of each object's box as LINE_LIST end-point pairs."""
    if not objects:
        return np.zeros((0, 24, 3))
    corners = box_corners(as_boxes(np.stack([o.box for o in objects])))  # (N, 8, 3)
    return corners[:, BOX_EDGES.reshape(-1)]


def label_text(obj: ObjectLike) -> str:
    """The RViz label of an object: "class #id score"."""
    return f"{obj.class_name} #{obj.id} {obj.score:.2f}"


def _marker(ns: str, marker_id: int, marker_type: int, frame_id: str, stamp_ns: int, **fields: Any) -> Any:
    Marker = msg_class("visualization_msgs/msg/Marker")
    defaults: dict[str, Any] = dict(
        header=header_msg(frame_id, stamp_ns),
        ns=ns,
        id=int(marker_id),
        type=marker_type,
        action=_ADD,
        pose=pose_msg(np.eye(3), np.zeros(3)),
        scale=vector3_msg(np.ones(3)),
        color=_rgba((1.0, 1.0, 1.0)),
        lifetime=msg_class("builtin_interfaces/msg/Duration")(sec=0, nanosec=0),
        frame_locked=False,
        points=[],
        colors=[],
        texture_resource="",
        texture=msg_class("sensor_msgs/msg/CompressedImage")(
            header=header_msg("", 0), format="", data=np.zeros(0, np.uint8)
        ),
        uv_coordinates=[],
        text="",
        mesh_resource="",
        mesh_file=msg_class("visualization_msgs/msg/MeshFile")(filename="", data=np.zeros(0, np.uint8)),
        mesh_use_embedded_materials=False,
    )
    defaults.update(fields)
    return Marker(**defaults)


def marker_array(
    objects: Sequence[ObjectLike],
    occupancy: OccupiedVoxels | None,
    frame_id: str,
    stamp_ns: int,
    line_width: float = 0.02,
    text_height: float = 0.12,
) -> Any:
    """One MarkerArray for the whole scene: DELETEALL first, then every layer's ADDs.

    RViz applies a MarkerArray atomically, so deleting and re-adding in one message never
    flickers and never leaves stale markers of merged objects behind. Marker ids are the
    scene objects' stable ids.
    """
    markers = [_marker("", 0, _LINE_LIST, frame_id, stamp_ns, action=_DELETEALL)]
    edges = box_edge_points(objects)
    for i, obj in enumerate(objects):
        rgb = class_color_float(obj.class_name)
        markers.append(
            _marker("boxes", obj.id, _LINE_LIST, frame_id, stamp_ns,
                    scale=vector3_msg((line_width, 0.0, 0.0)), color=_rgba(rgb),
                    points=[_point(p) for p in edges[i]])
        )
        label_pos = np.array([obj.box[0], obj.box[1], edges[i][:, 2].max() + text_height])
        markers.append(
            _marker("labels", obj.id, _TEXT_VIEW_FACING, frame_id, stamp_ns,
                    pose=pose_msg(np.eye(3), label_pos), scale=vector3_msg((0.0, 0.0, text_height)),
                    color=_rgba(rgb), text=label_text(obj))
        )
    if occupancy is not None and len(occupancy.centers):
        s = occupancy.voxel_size
        markers.append(
            _marker("occupancy", 0, _CUBE_LIST, frame_id, stamp_ns, scale=vector3_msg((s, s, s)),
                    color=_rgba((1.0, 1.0, 1.0), 1.0), points=_points(occupancy.centers),
                    colors=_voxel_colors(occupancy))
        )
    return msg_class("visualization_msgs/msg/MarkerArray")(markers=markers)


def detection3d_array(objects: Sequence[ObjectLike], frame_id: str, stamp_ns: int) -> Any:
    """vision_msgs/Detection3DArray of the scene objects (id = the object's stable id)."""
    ObjectHypothesis = msg_class("vision_msgs/msg/ObjectHypothesis")
    WithPose = msg_class("vision_msgs/msg/ObjectHypothesisWithPose")
    PoseWithCovariance = msg_class("geometry_msgs/msg/PoseWithCovariance")
    BoundingBox3D = msg_class("vision_msgs/msg/BoundingBox3D")
    Detection3D = msg_class("vision_msgs/msg/Detection3D")
    detections = []
    for obj in objects:
        pose = box_pose_msg(obj.box)
        result = WithPose(
            hypothesis=ObjectHypothesis(class_id=obj.class_name, score=float(obj.score)),
            pose=PoseWithCovariance(pose=pose, covariance=np.zeros(36)),
        )
        detections.append(
            Detection3D(
                header=header_msg(frame_id, stamp_ns),
                results=[result],
                bbox=BoundingBox3D(center=pose, size=vector3_msg(np.asarray(obj.box)[3:6])),
                id=str(obj.id),
            )
        )
    return msg_class("vision_msgs/msg/Detection3DArray")(header=header_msg(frame_id, stamp_ns), detections=detections)


def scene_object_array(objects: Sequence[ObjectLike], frame_id: str, stamp_ns: int) -> Any:
    """embodied_ros/SceneObjectArray: the full 9-DoF boxes, ids and observation history."""
    SceneObject = msg_class("embodied_ros/msg/SceneObject")
    items = [
        SceneObject(
            id=int(o.id), class_name=o.class_name, score=float(o.score),
            box=np.asarray(o.box, dtype=np.float64).reshape(9),
            pose=pose_msg(box_rotations(o.box)[0], np.asarray(o.box)[0:3]),
            size=vector3_msg(np.asarray(o.box)[3:6]), n_observations=int(o.n_observations),
            n_looks=int(o.n_looks),
            first_seen=time_msg(o.first_seen_ns), last_seen=time_msg(o.last_seen_ns),
        )
        for o in objects
    ]
    return msg_class("embodied_ros/msg/SceneObjectArray")(header=header_msg(frame_id, stamp_ns), objects=items)


CLOUD_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("rgb", "<u4"), ("intensity", "<f4")])
"""One point of the occupancy PointCloud2 (all fields FLOAT32 to RViz; rgb holds the packed colour's bits)."""


def cloud_points(occupancy: OccupiedVoxels | None) -> np.ndarray:
    """(M,) CLOUD_DTYPE records of the occupied voxel centres, colours and probabilities."""
    n = 0 if occupancy is None else len(occupancy.centers)
    cloud = np.zeros(n, dtype=CLOUD_DTYPE)
    if occupancy is not None and n:
        cloud["x"], cloud["y"], cloud["z"] = occupancy.centers.T.astype(np.float32)
        palette = np.array([class_color(c) for c in occupancy.vocabulary] + [OCCUPANCY_GREY], np.uint32).reshape(-1, 3)
        rgb = palette[occupancy.labels.astype(np.int64)]  # label -1 -> the grey row, last
        cloud["rgb"] = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]  # RViz reads it as a float's bits
        cloud["intensity"] = occupancy.probability.astype(np.float32)
    return cloud


def occupancy_cloud(occupancy: OccupiedVoxels | None, frame_id: str, stamp_ns: int) -> Any:
    """sensor_msgs/PointCloud2 of occupied voxel centres: x, y, z, rgb (packed float), intensity (= probability)."""
    PointField = msg_class("sensor_msgs/msg/PointField")
    cloud = cloud_points(occupancy)
    n, dtype = len(cloud), cloud.dtype
    fields = [
        PointField(name="x", offset=0, datatype=7, count=1),
        PointField(name="y", offset=4, datatype=7, count=1),
        PointField(name="z", offset=8, datatype=7, count=1),
        PointField(name="rgb", offset=12, datatype=7, count=1),
        PointField(name="intensity", offset=16, datatype=7, count=1),
    ]
    return msg_class("sensor_msgs/msg/PointCloud2")(
        header=header_msg(frame_id, stamp_ns), height=1, width=n, fields=fields, is_bigendian=False,
        point_step=dtype.itemsize, row_step=dtype.itemsize * n,
        data=np.frombuffer(cloud.tobytes(), dtype=np.uint8), is_dense=True,
    )
