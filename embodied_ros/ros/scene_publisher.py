"""The node's scene outputs, built from numpy arrays and published as CDR bytes (cdr.py): a few milliseconds.

Objects go out as soon as the memory has the keyframe (markers, objects, detections); the occupancy
cloud follows once the map has fused it, so the markers' occupancy layer is the map as it was
before this keyframe (one keyframe behind the cloud) and never delays the objects.

Same content as the offline bag's messages (outputs/scene_messages.py builds those as rosbags
dataclasses, one Python object per point); here marker points, voxel colours and the cloud go
in as arrays. ``~/markers``: DELETEALL, then one LINE_LIST box and one label per object and per part of the
room's structure, then the occupancy CUBE_LIST (namespaces ``boxes``, ``labels``, ``unknown_objects``,
``structure``, ``people``, ``occupancy``; ids are the objects' ids; people's markers have a short lifetime);
``~/objects``: our SceneObjectArray; ``~/detections``: vision_msgs/Detection3DArray (when
installed); ``~/occupancy``: PointCloud2 (x y z rgb intensity).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..classes import is_mover
from ..geometry.boxes import as_boxes, box_rotations
from ..geometry.transforms import quat_xyzw_from_matrix
from ..memory.discovery import UNKNOWN_CLASS
from ..occupancy.results import OccupiedVoxels
from ..outputs.class_palette import class_colour_float
from ..outputs.scene_messages import (
    CLOUD_DTYPE,
    LEADERS_ID,
    LINE_WIDTH,
    SPACE_WIDTH,
    TEXT_HEIGHT,
    ObjectLike,
    box_line_points,
    cloud_points,
    is_named,
    is_settled,
    label_leaders,
    label_positions,
    label_text,
    marker_ids,
    marker_lifetime_s,
    voxel_rgba,
)
from .cdr import header, serialize, stamp

_ADD, _DELETEALL = 0, 3
_LINE_LIST, _CUBE_LIST, _TEXT_VIEW_FACING = 5, 6, 9
_FLOAT32 = 7  # sensor_msgs/PointField datatype


def _vector(v: Any) -> dict[str, float]:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def _poses(objects: Sequence[ObjectLike]) -> list[dict[str, Any]]:
    """geometry_msgs/Pose fields of each object's box (centre + orientation)."""
    if not objects:
        return []
    boxes = as_boxes(np.stack([o.box for o in objects]))
    quats = quat_xyzw_from_matrix(box_rotations(boxes))
    return [{"position": _vector(b[:3]), "orientation": dict(zip("xyzw", map(float, q), strict=True))}
            for b, q in zip(boxes, quats, strict=True)]


def marker_array(objects: Sequence[ObjectLike], voxels: OccupiedVoxels | None, frame_id: str,
                 stamp_ns: int, structure: Sequence[ObjectLike] = ()) -> dict[str, Any]:
    """visualization_msgs/MarkerArray fields: DELETEALL first, so RViz never keeps stale boxes; the room's
    ``structure`` in its own namespace."""
    head = header(frame_id, stamp_ns)
    identity = {"orientation": {"w": 1.0}}
    white = {"r": 1.0, "g": 1.0, "b": 1.0, "a": 1.0}
    markers: list[dict[str, Any]] = [{"header": head, "action": _DELETEALL, "type": _LINE_LIST, "pose": identity,
                                      "scale": {"x": 1.0, "y": 1.0, "z": 1.0}, "color": white}]
    n_objects = len(objects)
    objects = [*objects, *structure]
    edges = box_line_points(objects)
    labels = label_positions(objects)
    for i, (obj, points, label) in enumerate(zip(objects, edges, labels, strict=True)):
        colour = dict(zip("rgb", class_colour_float(obj.class_name), strict=True), a=1.0)
        box_ns, box_id, label_ns, label_id = marker_ids(obj, i >= n_objects)
        life = int(round(marker_lifetime_s(obj) * 1e9))
        lifetime = {"sec": life // 10**9, "nanosec": life % 10**9}
        markers.append({"header": head, "ns": box_ns, "id": box_id, "type": _LINE_LIST, "pose": identity,
                        "scale": {"x": LINE_WIDTH}, "color": colour, "points": points, "lifetime": lifetime})
        markers.append({"header": head, "ns": label_ns, "id": label_id, "type": _TEXT_VIEW_FACING,
                        "pose": {"position": _vector(label), "orientation": {"w": 1.0}},
                        "scale": {"x": SPACE_WIDTH * TEXT_HEIGHT, "z": TEXT_HEIGHT}, "color": colour,
                        "text": label_text(obj), "lifetime": lifetime})
    leaders, owners = label_leaders(objects, labels)
    if len(leaders):
        colours = np.array([(*class_colour_float(objects[k].class_name), 1.0) for k in np.repeat(owners, 2)])
        markers.append({"header": head, "ns": "labels", "id": LEADERS_ID, "type": _LINE_LIST, "pose": identity,
                        "scale": {"x": LINE_WIDTH / 3}, "color": white, "points": leaders.reshape(-1, 3),
                        "colors": colours.astype(np.float32)})
    if voxels is not None and len(voxels):
        s = float(voxels.voxel_size)
        markers.append({"header": head, "ns": "occupancy", "id": 0, "type": _CUBE_LIST, "pose": identity,
                        "scale": {"x": s, "y": s, "z": s}, "color": white,
                        "points": voxels.centers, "colors": voxel_rgba(voxels).astype(np.float32)})
    return {"markers": markers}


def scene_object_array(objects: Sequence[ObjectLike], frame_id: str, stamp_ns: int,
                       structure: Sequence[ObjectLike] = ()) -> dict[str, Any]:
    """embodied_ros/SceneObjectArray fields: the full 9-DoF boxes, ids and observation history; named
    objects in ``objects``, unknown ones (class "object") in ``unknown_objects``, people and animals seen now
    in ``people``, the room's ``structure``."""
    n_objects = len(objects)
    objects = [*objects, *structure]
    items = [{"id": int(o.id), "class_name": o.class_name, "score": float(o.score),
              "box": np.asarray(o.box, dtype=np.float64).reshape(9), "pose": pose, "size": _vector(o.box[3:6]),
              "n_observations": int(o.n_observations), "n_looks": int(o.n_looks),
              "confidence": float(getattr(o, "confidence", 1.0)), "settled": is_settled(o),
              "first_seen": stamp(o.first_seen_ns), "last_seen": stamp(o.last_seen_ns)}
             for o, pose in zip(objects, _poses(objects), strict=True)]
    ours = list(zip(items[:n_objects], objects[:n_objects], strict=True))
    return {"header": header(frame_id, stamp_ns), "objects": [m for m, o in ours if is_named(o)],
            "unknown_objects": [m for m, o in ours if o.class_name == UNKNOWN_CLASS],
            "people": [m for m, o in ours if is_mover(o.class_name)], "structure": items[n_objects:]}


def detection3d_array(objects: Sequence[ObjectLike], frame_id: str, stamp_ns: int) -> dict[str, Any]:
    """vision_msgs/Detection3DArray fields (id = the object's stable id, class_id = its class name); unknown
    objects have no class to report (they are in SceneObjectArray's ``unknown_objects``)."""
    head = header(frame_id, stamp_ns)
    objects = [o for o in objects if is_named(o)]
    detections = [{"header": head, "id": str(o.id),
                   "results": [{"hypothesis": {"class_id": o.class_name, "score": float(o.score)},
                                "pose": {"pose": pose}}],
                   "bbox": {"center": pose, "size": _vector(o.box[3:6])}}
                  for o, pose in zip(objects, _poses(objects), strict=True)]
    return {"header": head, "detections": detections}


def occupancy_cloud(voxels: OccupiedVoxels | None, frame_id: str, stamp_ns: int) -> dict[str, Any]:
    """sensor_msgs/PointCloud2 fields of the occupied voxel centres (x y z rgb intensity, all FLOAT32 to RViz)."""
    cloud = cloud_points(voxels)
    fields = [{"name": name, "offset": CLOUD_DTYPE.fields[name][1], "datatype": _FLOAT32, "count": 1}
              for name in CLOUD_DTYPE.names]
    return {"header": header(frame_id, stamp_ns), "height": 1, "width": len(cloud), "fields": fields,
            "is_bigendian": False, "point_step": CLOUD_DTYPE.itemsize, "row_step": CLOUD_DTYPE.itemsize * len(cloud),
            "data": cloud.view(np.uint8), "is_dense": True}


class ScenePublisher:
    """The node's four scene publishers (``~/markers``, ``~/objects``, ``~/occupancy``, ``~/detections``).

    Args:
        node: the rclpy node.
        qos: QoS of the outputs.
        detections: also publish vision_msgs/Detection3DArray (vision_msgs must be importable).
    """

    def __init__(self, node: Any, qos: Any, detections: bool) -> None:
        from sensor_msgs.msg import PointCloud2
        from visualization_msgs.msg import MarkerArray

        from embodied_ros.msg import SceneObjectArray

        self._objects: list[tuple[Any, type, Any]] = [
            (node.create_publisher(MarkerArray, "~/markers", qos), MarkerArray, marker_array),
            (node.create_publisher(SceneObjectArray, "~/objects", qos), SceneObjectArray,
             lambda objects, _voxels, *head: scene_object_array(objects, *head[:2], structure=head[2])),
        ]
        if detections:
            from vision_msgs.msg import Detection3DArray

            self._objects.append((node.create_publisher(Detection3DArray, "~/detections", qos), Detection3DArray,
                                  lambda objects, _voxels, *head: detection3d_array(objects, *head[:2])))
        self._cloud, self._cloud_type = node.create_publisher(PointCloud2, "~/occupancy", qos), PointCloud2

    def publish_objects(self, objects: Sequence[ObjectLike], voxels: OccupiedVoxels | None, frame_id: str,
                        stamp_ns: int, structure: Sequence[ObjectLike] = ()) -> None:
        """Publish markers (with ``voxels`` as the occupancy layer), objects and detections; the room's
        ``structure`` in the markers' and the object array's own places."""
        for publisher, cls, build in self._objects:
            publisher.publish(serialize(cls, build(objects, voxels, frame_id, stamp_ns, structure)))

    def publish_cloud(self, voxels: OccupiedVoxels | None, frame_id: str, stamp_ns: int) -> None:
        """Publish the occupancy PointCloud2."""
        self._cloud.publish(serialize(self._cloud_type, occupancy_cloud(voxels, frame_id, stamp_ns)))
