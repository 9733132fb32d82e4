"""Scene memory -> ROS messages: RViz markers, vision_msgs detections, our object array, occupancy cloud.

Messages are built as rosbags dataclasses (so the offline runner writes them into bags with no
ROS installed); the ROS node converts them to rclpy messages field by field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..classes import is_mover
from ..geometry.boxes import BOX_EDGES, as_boxes, box_corners, box_rotations
from ..memory.discovery import UNKNOWN_CLASS
from ..messages.convert import box_pose_msg, header_msg, pose_msg, time_msg, vector3_msg
from ..messages.types import msg_class
from ..occupancy.results import OccupiedVoxels
from .class_palette import OCCUPANCY_GREY, class_colour, class_colour_float

MARKER_NAMESPACES = {"boxes": True, "labels": True, "occupancy": False, "unknown_objects": True, "structure": True,
                     "people": True}
"""Every marker namespace (one per layer, so RViz can toggle each) -> whether config/embodied.rviz shows it.

The one list of them: the shipped RViz config's MarkerArray display names exactly these (a test checks), so
a new layer is added here and there together. ``unknown_objects`` holds the class-agnostic objects (what no
detector names but the geometry shows: memory/discovery.py), boxes and labels, so they get their own switch
and never mix with the named classes' boxes; ``structure`` holds the room's floor, walls, counters, shelves and
cabinets (memory/structure.py), boxes and labels; ``people`` holds the people and animals seen now
(memory/movers.py: never part of the static map; their markers live ``MOVER_LIFETIME_S``); ``occupancy`` is off
because the ``~/occupancy`` cloud shows the same voxels as small points that do not hide the boxes.
"""
MOVER_LIFETIME_S = 1.0
"""Lifetime (s) of a person's or an animal's markers: they are where the camera saw them now, so RViz drops them
when no newer scene arrives (a stalled node shows no ghost)."""
LINE_WIDTH = 0.02
"""Box edge width in metres: about 3 px at the shipped view's 5 m; wider lines cover the labels behind them."""
TEXT_HEIGHT = 0.10
"""Label text height in metres: RViz draws it smaller with distance like the boxes, about 17 px at the shipped
view's 5 m; larger text needs its labels stacked higher to stay apart."""
_CHAR_WIDTH = 0.45
"""Mean width of one label character in text heights (RViz's Liberation Sans), to keep labels apart."""
LABEL_GAP = 1.8
"""Text heights between the middles of stacked labels, plus 0.3 m per metre between their boxes: seen from
above (the shipped view looks down 26 degrees), height shrinks on screen and the nearer label sinks."""
LEADERS_ID = -1
"""Marker id of the LINE_LIST (namespace ``labels``) joining lifted labels to their boxes (objects' ids are >= 0)."""
SPACE_WIDTH = 0.3
"""Width of a space in label text heights, sent as the text marker's scale.x: RViz 2 (Jazzy) takes scale.x as
the space width and otherwise uses one fixed from a 1 m font, which tore "chair #3 0.74" into three words."""

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
    palette = [class_colour_float(name) for name in occupancy.vocabulary] + [
        tuple(c / 255 for c in OCCUPANCY_GREY)]
    rgb = np.asarray(palette, dtype=np.float64).reshape(-1, 3)[occupancy.labels.astype(np.int64)]  # -1: grey
    alpha = 0.35 + 0.5 * np.asarray(occupancy.probability, dtype=np.float64)
    return np.column_stack([rgb, alpha])


def _voxel_colors(occupancy: OccupiedVoxels) -> list[Any]:
    ColorRGBA = msg_class("std_msgs/msg/ColorRGBA")
    return [ColorRGBA(r=r, g=g, b=b, a=a) for r, g, b, a in voxel_rgba(occupancy).tolist()]


def is_settled(obj: ObjectLike) -> bool:
    """Whether an object's box is settled (memory/settling.py); objects that do not say are."""
    return bool(getattr(obj, "settled", True))


def _dashes(segments: np.ndarray, n: int = 4, share: float = 0.6) -> np.ndarray:
    """(S, 2, 3) segments -> (S * n, 2, 3): each cut into ``n`` dashes covering ``share`` of its length."""
    t0 = (np.arange(n) + 0.5 * (1 - share)) / n
    t = np.stack([t0, t0 + share / n], axis=1)  # (n, 2) fractions along a segment
    a, b = segments[:, None, None, 0], segments[:, None, None, 1]  # (S, 1, 1, 3)
    return (a + t[None, :, :, None] * (b - a)).reshape(-1, 2, 3)


def box_line_points(objects: Sequence[ObjectLike]) -> list[np.ndarray]:
    """Per object, the LINE_LIST end points of its box: the 12 edges (24, 3), dashed (96, 3) while its box is
    growing (``is_settled`` false): RViz shows that the box may still change."""
    edges = box_edge_points(objects)
    return [e if is_settled(o) else _dashes(e.reshape(-1, 2, 3)).reshape(-1, 3)
            for o, e in zip(objects, edges, strict=True)]


def box_edge_points(objects: Sequence[ObjectLike]) -> np.ndarray:
    """(N, 24, 3) world points: the 12 edges of each object's box as LINE_LIST end-point pairs."""
    if not objects:
        return np.zeros((0, 24, 3))
    corners = box_corners(as_boxes(np.stack([o.box for o in objects])))  # (N, 8, 3)
    return corners[:, BOX_EDGES.reshape(-1)]


def label_text(obj: ObjectLike) -> str:
    """The RViz label of an object, one text: "class #id score"."""
    return f"{obj.class_name} #{obj.id} {obj.score:.2f}"


def _label_base(objects: Sequence[ObjectLike], text_height: float) -> np.ndarray:
    """(N,) height of each label's middle before any is lifted: clear of its box's top face as the shipped
    view sees it (looking down 26 degrees, the top face reaches tan 26 ~ 0.5 x its radius higher on screen)."""
    tops = box_edge_points(objects)[:, :, 2].max(axis=1)
    return tops + 0.75 * text_height + 0.5 * np.array([np.hypot(o.box[3], o.box[4]) / 2 for o in objects])


def label_positions(objects: Sequence[ObjectLike], text_height: float = TEXT_HEIGHT) -> np.ndarray:
    """(N, 3) world positions of the objects' labels: centred over each box, above its top.

    RViz turns text to face the camera, so two labels closer horizontally than their half widths summed
    (plus a text height for the views in between) overlap when seen from the side they line up on, and
    a nearer label hides a farther one. Going up from the lowest box, a label that would share its
    height band with such a neighbour is lifted above it (``label_leaders`` draws the line down to its
    box). Seen from above, height shrinks on screen and the nearer of two labels sinks, so the band grows
    with the boxes' distance (``LABEL_GAP``): labels stay apart from the shipped view and most others,
    not from every one.
    """
    if not objects:
        return np.zeros((0, 3))
    tops = box_edge_points(objects)[:, :, 2].max(axis=1)
    centres = np.array([[o.box[0], o.box[1]] for o in objects], dtype=np.float64)
    half_widths = np.array([0.5 * _CHAR_WIDTH * text_height * len(label_text(o)) for o in objects])
    z = _label_base(objects, text_height)
    placed: list[int] = []
    for i in sorted(range(len(objects)), key=lambda k: (tops[k], objects[k].id)):
        apart = {j: float(np.hypot(*(centres[i] - centres[j]))) for j in placed}
        gaps = {j: LABEL_GAP * text_height + 0.3 * d for j, d in apart.items()
                if d < half_widths[i] + half_widths[j] + text_height}
        for _ in range(len(gaps) + 1):  # each pass clears the bands it met; only higher ones can meet it next
            clash = [j for j, gap in gaps.items() if abs(z[i] - z[j]) < gap - 1e-6]  # 1e-6: rounding
            if not clash:
                break
            z[i] = max(z[j] + gaps[j] for j in clash)
        placed.append(i)
    return np.column_stack([centres, z])


def label_leaders(objects: Sequence[ObjectLike], positions: np.ndarray,
                  text_height: float = TEXT_HEIGHT) -> tuple[np.ndarray, np.ndarray]:
    """Leader lines of the labels ``label_positions`` lifted: (M, 2, 3) segments from the top of the box
    to just under its label, and (M,) indices of their objects."""
    if not objects:
        return np.zeros((0, 2, 3)), np.zeros(0, dtype=np.int64)
    tops = box_edge_points(objects)[:, :, 2].max(axis=1)
    bottoms = positions[:, 2] - 0.6 * text_height
    lifted = np.flatnonzero(positions[:, 2] - _label_base(objects, text_height) > 0.5 * text_height)
    segments = np.stack([np.column_stack([positions[lifted, :2], tops[lifted]]),
                         np.column_stack([positions[lifted, :2], bottoms[lifted]])], axis=1)
    return segments.reshape(-1, 2, 3), lifted


def view_centre(objects: Sequence[ObjectLike], occupancy: OccupiedVoxels | None) -> np.ndarray | None:
    """(3,) world point for RViz's orbit view to follow: the middle of the map (None while it is empty).

    The middle of the published objects' boxes, what users look for; before there are any, of the
    occupied voxels' 5th-95th percentiles along each axis (a few stray depth hits far away do not pull
    the view off the room).
    """
    if objects:
        points = box_edge_points(objects).reshape(-1, 3)
    elif occupancy is not None and len(occupancy.centers):
        points = np.percentile(occupancy.centers, [5, 95], axis=0)
    else:
        return None
    return (points.min(axis=0) + points.max(axis=0)) / 2


def _duration(seconds: float) -> Any:
    nanoseconds = int(round(seconds * 1e9))
    return msg_class("builtin_interfaces/msg/Duration")(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)


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
        lifetime=_duration(0.0),
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


def marker_ids(obj: ObjectLike, structure: bool = False) -> tuple[str, int, str, int]:
    """(box namespace, box id, label namespace, label id) of an object's markers: unknown objects (class
    "object"), the room's structure (``structure``) and movers (people, animals) have a namespace of their own
    each, their label's id ``-1 - id`` beside the box's ``id``."""
    if structure:
        return "structure", int(obj.id), "structure", -1 - int(obj.id)
    if obj.class_name == UNKNOWN_CLASS:
        return "unknown_objects", int(obj.id), "unknown_objects", -1 - int(obj.id)
    if is_mover(obj.class_name):
        return "people", int(obj.id), "people", -1 - int(obj.id)
    return "boxes", int(obj.id), "labels", int(obj.id)


def marker_lifetime_s(obj: ObjectLike) -> float:
    """Seconds RViz keeps an object's markers without a newer scene: 0 (for ever) for the map's objects,
    ``MOVER_LIFETIME_S`` for people and animals seen now."""
    return MOVER_LIFETIME_S if is_mover(obj.class_name) else 0.0


def is_named(obj: ObjectLike) -> bool:
    """Whether an object is a named object of the map (SceneObjectArray.objects, Detection3DArray); unknown
    objects go in SceneObjectArray.unknown_objects, people and animals seen now in its ``people``."""
    return obj.class_name != UNKNOWN_CLASS and not is_mover(obj.class_name)


def marker_array(
    objects: Sequence[ObjectLike],
    occupancy: OccupiedVoxels | None,
    frame_id: str,
    stamp_ns: int,
    line_width: float = LINE_WIDTH,
    text_height: float = TEXT_HEIGHT,
    structure: Sequence[ObjectLike] = (),
) -> Any:
    """One MarkerArray for the whole scene: DELETEALL first, then every layer's ADDs.

    RViz applies a MarkerArray atomically, so deleting and re-adding in one message never
    flickers and never leaves stale markers of merged objects behind. Marker ids are the
    scene objects' stable ids; the room's ``structure`` goes in its own namespace.
    """
    markers = [_marker("", 0, _LINE_LIST, frame_id, stamp_ns, action=_DELETEALL)]
    n_objects = len(objects)
    objects = [*objects, *structure]
    edges = box_line_points(objects)
    labels = label_positions(objects, text_height)
    for i, (obj, label_pos) in enumerate(zip(objects, labels, strict=True)):
        rgb = class_colour_float(obj.class_name)
        box_ns, box_id, label_ns, label_id = marker_ids(obj, i >= n_objects)
        life = _duration(marker_lifetime_s(obj))
        markers.append(
            _marker(box_ns, box_id, _LINE_LIST, frame_id, stamp_ns,
                    scale=vector3_msg((line_width, 0.0, 0.0)), color=_rgba(rgb),
                    points=[_point(p) for p in edges[i]], lifetime=life)
        )
        markers.append(
            _marker(label_ns, label_id, _TEXT_VIEW_FACING, frame_id, stamp_ns, pose=pose_msg(np.eye(3), label_pos),
                    scale=vector3_msg((SPACE_WIDTH * text_height, 0.0, text_height)),
                    color=_rgba(rgb), text=label_text(obj), lifetime=life)
        )
    leaders, owners = label_leaders(objects, labels, text_height)
    if len(leaders):  # the labels' leader lines, structure's among them
        markers.append(
            _marker("labels", LEADERS_ID, _LINE_LIST, frame_id, stamp_ns, scale=vector3_msg((line_width / 3, 0.0, 0.0)),
                    points=_points(leaders.reshape(-1, 3)),
                    colors=[_rgba(class_colour_float(objects[k].class_name)) for k in np.repeat(owners, 2)])
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
    """vision_msgs/Detection3DArray of the named scene objects (id = the object's stable id); unknown objects
    have no class to report (they are in SceneObjectArray's ``unknown_objects``)."""
    objects = [o for o in objects if is_named(o)]
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


def scene_object_array(objects: Sequence[ObjectLike], frame_id: str, stamp_ns: int,
                       structure: Sequence[ObjectLike] = ()) -> Any:
    """embodied_ros/SceneObjectArray: the full 9-DoF boxes, ids and observation history; named objects in
    ``objects``, unknown ones (class "object") in ``unknown_objects``, people and animals seen now in ``people``,
    the room's structure in ``structure``."""
    SceneObject = msg_class("embodied_ros/msg/SceneObject")
    n_objects = len(objects)
    objects = [*objects, *structure]
    items = [
        SceneObject(
            id=int(o.id), class_name=o.class_name, score=float(o.score),
            box=np.asarray(o.box, dtype=np.float64).reshape(9),
            pose=pose_msg(box_rotations(o.box)[0], np.asarray(o.box)[0:3]),
            size=vector3_msg(np.asarray(o.box)[3:6]), n_observations=int(o.n_observations),
            n_looks=int(o.n_looks), confidence=float(getattr(o, "confidence", 1.0)), settled=is_settled(o),
            first_seen=time_msg(o.first_seen_ns), last_seen=time_msg(o.last_seen_ns),
        )
        for o in objects
    ]
    ours = list(zip(items[:n_objects], objects[:n_objects], strict=True))
    return msg_class("embodied_ros/msg/SceneObjectArray")(
        header=header_msg(frame_id, stamp_ns), objects=[m for m, o in ours if is_named(o)],
        unknown_objects=[m for m, o in ours if o.class_name == UNKNOWN_CLASS],
        people=[m for m, o in ours if is_mover(o.class_name)], structure=items[n_objects:])


CLOUD_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("rgb", "<u4"), ("intensity", "<f4")])
"""One point of the occupancy PointCloud2 (all fields FLOAT32 to RViz; rgb holds the packed colour's bits)."""


def cloud_points(occupancy: OccupiedVoxels | None) -> np.ndarray:
    """(M,) CLOUD_DTYPE records of the occupied voxel centres, colours and probabilities."""
    n = 0 if occupancy is None else len(occupancy.centers)
    cloud = np.zeros(n, dtype=CLOUD_DTYPE)
    if occupancy is not None and n:
        cloud["x"], cloud["y"], cloud["z"] = occupancy.centers.T.astype(np.float32)
        palette = np.array([class_colour(c) for c in occupancy.vocabulary] + [OCCUPANCY_GREY], np.uint32).reshape(-1, 3)
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
