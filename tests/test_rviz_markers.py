"""What RViz is given to draw: one label per object kept apart from its neighbours, the point the view
follows, the detections drawn on the camera image, and a shipped config that names what the node sends.

tests/test_rviz.py looks at the picture RViz makes of them; these run without ROS.
"""

from __future__ import annotations

import ast
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from embodied_ros.detections import Detections2D
from embodied_ros.occupancy.results import OccupiedVoxels
from embodied_ros.outputs.change_messages import CHANGE_NAMESPACES
from embodied_ros.outputs.class_palette import class_colour
from embodied_ros.outputs.pictures import draw_detections
from embodied_ros.outputs.scene_messages import (
    LABEL_GAP,
    LEADERS_ID,
    MARKER_NAMESPACES,
    SPACE_WIDTH,
    TEXT_HEIGHT,
    label_leaders,
    label_positions,
    label_text,
    marker_array,
    view_centre,
)
from embodied_ros.ros.config import NodeConfig
from embodied_ros.ros.scene_publisher import marker_array as node_marker_array

REPO = Path(__file__).resolve().parents[1]
NODE = "/embodied_perception"


@dataclass(frozen=True)
class _Object:
    id: int
    class_name: str
    box: np.ndarray
    score: float = 0.8
    n_observations: int = 3
    n_looks: int = 1
    first_seen_ns: int = 0
    last_seen_ns: int = 0


def _kitchen() -> list[_Object]:
    """A table with things on it, two of them in one place, a chair beside it and a monitor far away."""
    def obj(i: int, name: str, x: float, y: float, top: float, dx: float, dy: float, dz: float) -> _Object:
        return _Object(i, name, np.array([x, y, top - dz / 2, dx, dy, dz, 0.3, 0.0, 0.0]))

    return [obj(0, "diningtable", 0.0, 0.0, 0.75, 1.8, 0.9, 0.75), obj(1, "cup", 0.2, 0.1, 0.85, 0.08, 0.08, 0.1),
            obj(2, "cup", 0.2, 0.1, 0.85, 0.08, 0.08, 0.1), obj(3, "book", -0.4, 0.0, 0.78, 0.3, 0.2, 0.03),
            obj(4, "chair", 0.9, 0.8, 0.95, 0.5, 0.5, 0.95), obj(5, "tvmonitor", 6.0, 3.0, 1.4, 0.5, 0.1, 0.4)]


def test_one_label_per_object_over_its_box_apart_from_the_others() -> None:
    objects = _kitchen()
    labels = label_positions(objects)
    tops = np.array([o.box[2] + o.box[5] / 2 for o in objects])
    np.testing.assert_allclose(labels[:, :2], [o.box[:2] for o in objects])  # over its own box
    assert (labels[:, 2] >= tops + 0.5 * TEXT_HEIGHT).all()  # clear of its box
    half = np.array([0.45 * TEXT_HEIGHT * len(label_text(o)) / 2 for o in objects])
    for i in range(len(objects)):
        for j in range(i):
            if np.hypot(*(labels[i, :2] - labels[j, :2])) < half[i] + half[j]:  # could meet seen from some side
                assert abs(labels[i, 2] - labels[j, 2]) >= LABEL_GAP * TEXT_HEIGHT - 1e-6, (i, j)
    np.testing.assert_allclose(labels[5], label_positions(objects[5:])[0])  # alone: not lifted
    assert labels[1, 2] != labels[2, 2]  # two objects in one place: two lines, one above the other

    leaders, owners = label_leaders(objects, labels)
    assert 5 not in owners and {1, 2} & set(owners.tolist())  # lifted: a cup of the two
    for (low, high), k in zip(leaders, owners, strict=True):
        assert low[2] == pytest.approx(tops[k]) and high[2] < labels[k, 2] and (low[:2] == labels[k, :2]).all()


@pytest.mark.parametrize("n", [1, 2, 7])
def test_labels_of_objects_in_one_place_stack_up(n: int) -> None:
    objects = [_Object(i, "cup", np.array([1.0, 2.0, 0.8, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0])) for i in range(n)]
    z = np.sort(label_positions(objects)[:, 2])
    assert (np.diff(z) >= LABEL_GAP * TEXT_HEIGHT - 1e-6).all()


def test_both_marker_builders_place_the_labels_alike_with_a_space_width() -> None:
    """The bag's markers (rosbags) and the node's (CDR dicts) carry the same labels; scale.x is the space
    width RViz 2 reads (0 tears "chair #3 0.74" into three words a metre apart)."""
    objects = _kitchen()
    bag = [m for m in marker_array(objects, None, "map", 7).markers if m.ns == "labels"]
    node = [m for m in node_marker_array(objects, None, "map", 7)["markers"] if m.get("ns") == "labels"]
    texts = {m.id: (m.text, [m.pose.position.x, m.pose.position.y, m.pose.position.z]) for m in bag if m.text}
    assert {k: v[0] for k, v in texts.items()} == {o.id: label_text(o) for o in objects}
    for m in node:
        if m["id"] == LEADERS_ID:
            assert len(m["points"]) == len(m["colors"]) == 2 * len(label_leaders(objects, label_positions(objects))[1])
            continue
        assert m["text"] == texts[m["id"]][0] and m["scale"]["x"] == pytest.approx(SPACE_WIDTH * TEXT_HEIGHT)
        np.testing.assert_allclose(list(m["pose"]["position"].values()), texts[m["id"]][1])
    assert all(m.scale.x == pytest.approx(SPACE_WIDTH * TEXT_HEIGHT) for m in bag if m.text)
    assert {m.ns for m in marker_array(objects, None, "map", 7).markers[1:]} <= set(MARKER_NAMESPACES)


def test_both_marker_builders_keep_unknown_objects_in_their_own_namespace() -> None:
    """The node's messages and the bag's say the same of an unknown object (class "object"): its box and
    label in ``unknown_objects``, in SceneObjectArray's ``unknown_objects``, and not in Detection3DArray."""
    from embodied_ros.ros.scene_publisher import detection3d_array, scene_object_array

    objects = [*_kitchen(), _Object(9, "object", np.array([0.5, -0.2, 0.8, 0.2, 0.15, 0.1, 0.0, 0.0, 0.0]))]
    bag = {(m.ns, m.id) for m in marker_array(objects, None, "map", 7).markers[1:]}
    node = {(m["ns"], m["id"]) for m in node_marker_array(objects, None, "map", 7)["markers"][1:]}
    assert node == bag and {k for k in node if k[0] == "unknown_objects"} == {("unknown_objects", 9),
                                                                               ("unknown_objects", -10)}
    assert {("boxes", 9), ("labels", 9)}.isdisjoint(node)
    array = scene_object_array(objects, "map", 7)
    assert [o["id"] for o in array["unknown_objects"]] == [9] and 9 not in [o["id"] for o in array["objects"]]
    assert "9" not in [d["id"] for d in detection3d_array(objects, "map", 7)["detections"]]


def test_both_marker_builders_keep_the_room_structure_in_its_own_namespace() -> None:
    """The room's structure (memory/structure.py) is drawn and sent apart from the objects, in both builders:
    its boxes and labels in ``structure``, SceneObjectArray's ``structure``, never in Detection3DArray (a
    counter is not a detection) and never in the objects' fields."""
    from embodied_ros.outputs.scene_messages import scene_object_array as bag_array
    from embodied_ros.ros.scene_publisher import detection3d_array, scene_object_array

    objects = _kitchen()
    structure = [_Object(40, "counter", np.array([0.0, 1.2, 0.88, 2.0, 0.6, 0.04, 0.0, 0.0, 0.0])),
                 _Object(41, "cabinet", np.array([0.0, 1.2, 0.43, 2.0, 0.6, 0.86, 0.0, 0.0, 0.0]))]
    bag = {(m.ns, m.id) for m in marker_array(objects, None, "map", 7, structure=structure).markers[1:]}
    node = {(m["ns"], m["id"]) for m in node_marker_array(objects, None, "map", 7, structure)["markers"][1:]}
    assert node == bag and {k for k in node if k[0] == "structure"} == {("structure", 40), ("structure", -41),
                                                                         ("structure", 41), ("structure", -42)}
    assert "structure" in MARKER_NAMESPACES and {("boxes", 40), ("labels", 40)}.isdisjoint(node)
    array = scene_object_array(objects, "map", 7, structure)
    assert [o["id"] for o in array["structure"]] == [40, 41]
    assert {40, 41}.isdisjoint(o["id"] for o in array["objects"] + array["unknown_objects"])
    assert [o.class_name for o in bag_array(objects, "map", 7, structure).structure] == ["counter", "cabinet"]
    assert {"40", "41"}.isdisjoint(d["id"] for d in detection3d_array(objects, "map", 7)["detections"])


def test_the_view_follows_the_middle_of_the_map() -> None:
    objects = _kitchen()[:5]
    corners = np.array([[-0.9, -0.45, 0.0], [1.15, 1.05, 0.95]])  # the table's and chair's extremes, about
    centre = view_centre(objects, None)
    assert centre == pytest.approx(corners.mean(axis=0), abs=0.25)
    centres = np.r_[np.random.default_rng(0).uniform(-1, 1, (200, 3)), [[40.0, 40.0, 40.0]]]
    voxels = OccupiedVoxels(centres, np.full(201, -1, np.int16), (), np.full(201, 2.0, np.float32), 0.1)
    assert view_centre([], voxels) == pytest.approx(np.zeros(3), abs=0.15)  # a stray voxel far off does not count
    np.testing.assert_allclose(view_centre(objects, voxels), centre)  # objects first
    assert view_centre([], None) is None


def test_detections_drawn_from_the_minimum_score_up() -> None:
    rgb = np.full((120, 160, 3), 90, np.uint8)
    dets = Detections2D(np.array([[20.0, 30.0, 80.0, 100.0], [100.0, 20.0, 150.0, 60.0]]), np.array([0, 1]),
                        np.array([0.9, 0.2]), ("cup", "book"))
    drawn = draw_detections(rgb, dets, min_score=0.3)
    assert (rgb == 90).all()  # a copy
    colour = np.array(class_colour("cup"))
    assert (np.abs(drawn[60, 18:23].astype(int) - colour).max(axis=1) < 30).any()  # the cup's left edge
    assert (drawn[30:60, 100:150] == 90).all() and (drawn[61:, 101:] == 90).all()  # the book (0.2) is left out


def test_the_shipped_rviz_config_shows_what_the_node_sends() -> None:
    config = yaml.safe_load((REPO / "config" / "embodied.rviz").read_text())
    displays = {d["Class"].split("/")[-1]: d for d in config["Visualization Manager"]["Displays"]}
    arrays = {d["Topic"]["Value"]: d for d in config["Visualization Manager"]["Displays"]
              if d["Class"].endswith("/MarkerArray")}
    markers = arrays[f"{NODE}/markers"]
    assert markers["Enabled"]
    assert markers["Namespaces"] == MARKER_NAMESPACES  # every layer, on or off as the one list says
    changes = arrays[f"{NODE}/change_markers"]  # what changed: ghosts, arrows, new boxes, labels
    assert changes["Enabled"] and changes["Namespaces"] == dict.fromkeys(CHANGE_NAMESPACES, True)
    cloud = displays["PointCloud2"]
    assert cloud["Topic"]["Value"] == f"{NODE}/occupancy" and cloud["Size (m)"] <= 0.06  # points, not 0.16 m cubes
    assert displays["Image"]["Topic"]["Value"] == f"{NODE}/detections_image" and "TF" in displays
    view = config["Visualization Manager"]["Views"]["Current"]
    params = yaml.safe_load((REPO / "config" / "params.yaml").read_text())["/**"]["ros__parameters"]
    assert view["Target Frame"] == NodeConfig().view_frame == params["view_frame"]
    window = config["Window Geometry"]
    assert window["Width"] <= 1280 and window["Height"] <= 800  # fits a laptop screen (and the tests' Xvfb)


def test_the_launch_hands_rviz_the_nodes_world_frame(tmp_path: Path) -> None:
    """perception.launch.py's ``_world_frame`` (run here without ROS) picks what ``rviz2 -f`` gets."""
    source = (REPO / "launch" / "perception.launch.py").read_text()
    function = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "_world_frame")
    namespace: dict = {"yaml": yaml, "Path": Path, "typing": typing}
    exec(compile(ast.Module([function], type_ignores=[]), "perception.launch.py", "exec"), namespace)  # noqa: S102
    world_frame = namespace["_world_frame"]
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"world_frame": "odom", "model": "x"}}}))
    assert world_frame(str(params), {"world_frame": "kitchen"}) == "kitchen"  # the launch line's
    assert world_frame(str(params), {}) == "odom"  # else the params file's
    assert world_frame(str(tmp_path / "absent.yaml"), {}) == NodeConfig().world_frame == "map"
    assert '"-f", world]' in source  # and rviz2 is started with it
