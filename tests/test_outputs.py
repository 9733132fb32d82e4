"""The bag writer, scene messages, objects.json and pictures, read back with independent readers."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from mcap_ros2.reader import read_ros2_messages
from rosbags.highlevel import AnyReader

from embodied_ros.detections import Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import box_corners
from embodied_ros.geometry.transforms import make_transform
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.messages.types import typestore
from embodied_ros.occupancy.voxel_map import OccupancyMap
from embodied_ros.outputs.bag_writer import BAG_VERSION, OutputTopics, SceneBagWriter
from embodied_ros.outputs.class_palette import OCCUPANCY_GREY, class_colour_float
from embodied_ros.outputs.objects_json import objects_document, write_objects_json
from embodied_ros.outputs.pictures import draw_boxes_on_frame, save_top_down_map, visible_in_frame
from embodied_ros.outputs.scene_messages import marker_array

VOCAB = ("chair", "cup")
K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])
# Camera 2 m behind the origin looking along world +y, level (optical z -> world y, optical y -> world -z).
T_WORLD_CAMERA = make_transform(np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]), [0.0, -2.0, 0.5])


def _frame(index: int = 0) -> Frame:
    """A wall 2 m in front of the camera, a grey image with a gradient."""
    depth = np.full((480, 640), 2.0, np.float32)
    color = np.zeros((480, 640, 3), np.uint8)
    color[..., 0] = np.linspace(0, 255, 640, dtype=np.uint8)[None]
    return Frame(color, depth, K, T_WORLD_CAMERA, stamp_ns=1_000_000_000 + index * 33_000_000, index=index,
                 camera_frame="rgb_camera_link")


def _scene() -> tuple[SceneMemory, OccupancyMap, Frame]:
    memory, occupancy = SceneMemory(min_observations=1, publish_confidence=0.0), OccupancyMap()
    boxes = np.array([[0.0, -0.5, 0.4, 0.5, 0.5, 0.8, 0.3, 0, 0], [0.8, -0.6, 0.5, 0.1, 0.1, 0.12, 0, 0, 0]])
    frame = _frame()
    for i in range(3):
        det = Detections3D(boxes + 0.01 * i, [0, 1], [0.8, 0.4], VOCAB, "world")
        memory.update(FramePerception(i, frame.stamp_ns, det))
        occupancy.integrate_depth(frame)
        occupancy.add_detection_evidence(det)
    return memory, occupancy, frame


def test_bag_round_trip_with_rosbags_and_mcap_reader(tmp_path: Path) -> None:
    memory, occupancy, frame = _scene()
    objects = memory.published_objects()
    with SceneBagWriter(tmp_path) as writer:
        for i in range(3):
            writer.write_inputs_of(_frame(i))
            writer.write_scene(_frame(i).stamp_ns, "world", objects, occupancy.occupied_voxels())
    assert (tmp_path / "scene.mcap").is_file() and (tmp_path / "metadata.yaml").is_file()
    assert not (tmp_path / "scene").exists()
    assert f"version: {BAG_VERSION}" in (tmp_path / "metadata.yaml").read_text()

    topics = OutputTopics()
    with AnyReader([tmp_path], default_typestore=typestore()) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        # only in bags that have something on them: a room that changed, a detector's image detections
        when_used = (topics.changes, topics.change_markers, topics.detections_2d)
        assert counts == {t: 3 for t in vars(topics).values() if t not in when_used}
        by_topic = {}
        for conn, _, raw in reader.messages():
            by_topic.setdefault(conn.topic, reader.deserialize(raw, conn.msgtype))
    markers = by_topic[topics.markers].markers
    assert markers[0].action == 3  # DELETEALL first, then the ADDs, in one message
    namespaces = [m.ns for m in markers[1:] if m.id >= 0]  # id -1: the lifted labels' leader lines
    assert namespaces.count("boxes") == 2 and namespaces.count("labels") == 2 and "occupancy" in namespaces
    box_marker = next(m for m in markers if m.ns == "boxes" and m.id == objects[0].id)
    edges = np.array([[p.x, p.y, p.z] for p in box_marker.points])
    assert len(edges) == 24  # 12 edges as point pairs
    assert np.allclose(np.sort(np.unique(edges.round(6), axis=0), axis=0),
                       np.sort(np.unique(box_corners(objects[0].box)[0].round(6), axis=0), axis=0))
    detections = by_topic[topics.detections].detections
    assert [d.results[0].hypothesis.class_id for d in detections] == [o.class_name for o in objects]
    assert detections[0].bbox.size.x == pytest.approx(objects[0].box[3])
    scene_objects = by_topic[topics.objects].objects
    np.testing.assert_allclose(scene_objects[0].box, objects[0].box)
    cloud = by_topic[topics.occupancy]
    assert cloud.width == len(occupancy.occupied_voxels()) > 0 and cloud.point_step == 20
    depth = by_topic[topics.depth]
    assert depth.format == "16UC1; compressedDepth png"  # image_transport's compressedDepth: 12-byte header, PNG
    png = cv2.imdecode(np.asarray(depth.data[12:]), cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint16 and png.shape == (480, 640) and png[0, 0] == 2000
    tf = by_topic[topics.tf].transforms[0]
    assert (tf.header.frame_id, tf.child_frame_id) == ("world", "rgb_camera_link")
    assert tf.transform.translation.y == pytest.approx(-2.0)

    # An independent reader (mcap-ros2-support) decodes every message from the embedded definitions.
    decoded = list(read_ros2_messages(str(tmp_path / "scene.mcap")))
    assert len(decoded) == 3 * (len(vars(topics)) - len(when_used))
    mcap_markers = next(m.ros_msg for m in decoded if m.channel.topic == topics.markers)
    assert mcap_markers.markers[0].action == 3 and len(mcap_markers.markers) == len(markers)
    mcap_det = next(m.ros_msg for m in decoded if m.channel.topic == topics.detections)
    assert mcap_det.detections[0].id == str(objects[0].id)


def test_marker_ids_are_object_ids_and_colours_stable() -> None:
    memory, occupancy, _ = _scene()
    objects = memory.published_objects()
    first = marker_array(objects, occupancy.occupied_voxels(), "world", 5)
    second = marker_array(objects, None, "world", 6)
    ids = {(m.ns, m.id) for m in first.markers[1:]}
    assert ids >= {("boxes", o.id) for o in objects} | {("labels", o.id) for o in objects}
    colour = {m.id: (m.color.r, m.color.g, m.color.b) for m in first.markers if m.ns == "boxes"}
    assert colour == {m.id: (m.color.r, m.color.g, m.color.b) for m in second.markers if m.ns == "boxes"}
    assert not any(m.ns == "occupancy" for m in second.markers)
    wall_patch = Detections3D(np.array([[0.0, 0.0, 0.5, 0.6, 0.5, 0.6, 0, 0, 0]]), [0], [0.9], VOCAB, "world")
    occupancy.add_detection_evidence(wall_patch)  # some wall voxels now carry the class "chair"
    first = marker_array(objects, occupancy.occupied_voxels(), "world", 5)
    voxels = occupancy.occupied_voxels()
    cubes = next(m for m in first.markers if m.ns == "occupancy")
    assert len(cubes.points) == len(cubes.colors) == len(voxels)
    for name, c in zip(voxels.class_names, cubes.colors, strict=True):  # class colour, grey where none voted
        expected = class_colour_float(name) if name else tuple(v / 255 for v in OCCUPANCY_GREY)
        assert (c.r, c.g, c.b) == pytest.approx(expected)
    assert any(voxels.class_names) and not all(voxels.class_names)
    label = next(m for m in first.markers if m.ns == "labels")
    assert label.text.startswith(objects[0].class_name) and f"#{objects[0].id}" in label.text


def test_objects_json_round_trip(tmp_path: Path) -> None:
    memory, _, _ = _scene()
    write_objects_json(tmp_path / "objects.json", memory.objects(), "world", extra={"source": "test"})
    doc = json.loads((tmp_path / "objects.json").read_text())
    assert doc["frame_id"] == "world" and doc["source"] == "test" and "Rz(alpha) Rx(beta) Ry(gamma)" in doc[
        "box_convention"]
    assert [o["id"] for o in doc["objects"]] == [o.id for o in memory.objects()]
    first = doc["objects"][0]
    assert first["n_observations"] == 3 and len(first["box"]) == 9 and first["class"] == "chair"
    assert objects_document([], "map")["objects"] == []


def test_pictures_draw_visible_boxes_only(tmp_path: Path) -> None:
    memory, occupancy, frame = _scene()
    objects = memory.published_objects()
    assert all(visible_in_frame(frame, o.box) for o in objects)  # in front of the wall, in view
    behind_wall = objects[0].box.copy()
    behind_wall[1] = 3.0  # 5 m from the camera, behind the wall at 2 m
    assert not visible_in_frame(frame, behind_wall)
    drawn = draw_boxes_on_frame(frame, objects)
    changed = np.any(drawn != frame.color, axis=2)
    assert changed.sum() > 500  # lines and labels were drawn
    assert np.array_equal(draw_boxes_on_frame(frame, []), frame.color)
    save_top_down_map(tmp_path / "map.png", objects, occupancy.occupied_voxels(), np.zeros((2, 3)))
    image = cv2.imread(str(tmp_path / "map.png"))
    assert image is not None and image.shape[0] > 400 and image.std() > 5


def test_the_background_writer_writes_every_frame_in_order(tmp_path: Path) -> None:
    """`run`'s bag is written on its own thread: the same messages, in the frames' order."""
    from embodied_ros.outputs.background_writer import BackgroundBagWriter

    memory, occupancy, _ = _scene()
    writer = BackgroundBagWriter(SceneBagWriter(tmp_path), depth=2)  # a short queue: the loop waits on it
    for i in range(12):
        writer.write(_frame(i), memory.published_objects(), occupancy.occupied_voxels())
    assert writer.close() == tmp_path / "scene.mcap"
    assert writer.frames_written == 12 and writer.busy_s > 0
    with AnyReader([tmp_path], default_typestore=typestore()) as reader:
        stamps = [t for c, t, _ in reader.messages() if c.topic == OutputTopics().markers]
    assert stamps == [_frame(i).stamp_ns for i in range(12)]


def test_a_failure_on_the_writers_thread_reaches_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk met while writing in the background is raised on the next frame handed over."""
    from filesystems import disk_full_after

    from embodied_ros.outputs.background_writer import BackgroundBagWriter

    memory, occupancy, _ = _scene()
    noise = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)  # about 0.5 MB as JPEG
    with disk_full_after(monkeypatch, tmp_path, 2_000_000):
        writer = BackgroundBagWriter(SceneBagWriter(tmp_path), depth=1)
        with pytest.raises(OSError):
            for i in range(40):  # the budget runs out within a few frames
                frame = _frame(i)
                writer.write(Frame(noise, frame.depth, K, frame.T_world_camera, frame.stamp_ns, i),
                             memory.published_objects(), occupancy.occupied_voxels())
            writer.close()
        writer.abort()  # what the run does then: no second error
