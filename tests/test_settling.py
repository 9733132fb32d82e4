"""Right at every moment: an object appears once two looks agree on its box (memory/settling.py), its box grows
only where two looks covered it (memory/extent_fusion.py), and neighbours of one class stay two
(memory/neighbours.py). Constructed streams, checked after every frame, as a robot would read the map."""

from __future__ import annotations

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, Detections3D, FramePerception
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.extent_fusion import LookSupport
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.memory.settling import BoxSettling, BoxState, boxes_agree
from embodied_ros.network.lifting import LiftingParams, lift_detections

NAMES = ("cup", "book", "microwave", "tvmonitor", "laptop", "diningtable")
S = 1_000_000_000
HZ = 30


def _box(x: float, y: float = 0.0, z: float = 0.5, dx: float = 0.3, dy: float = 0.3, dz: float = 0.3) -> np.ndarray:
    return np.array([x, y, z, dx, dy, dz, 0.0, 0.0, 0.0])


def test_boxes_agree_within_a_share_of_their_extent_and_never_below_a_voxel() -> None:
    box = _box(0.0, dx=1.0, dy=0.5, dz=0.4)
    assert boxes_agree(box, box, 0.15, 0.045)
    assert boxes_agree(box, box + np.r_[0.1, 0, 0, 0, 0, 0, 0, 0, 0], 0.15, 0.045)  # 10 cm along a 1 m side
    assert not boxes_agree(box, box + np.r_[0, 0.1, 0, 0, 0, 0, 0, 0, 0], 0.15, 0.045)  # 10 cm across 0.5 m
    turned = box.copy()
    turned[3], turned[4], turned[6] = 0.5, 1.0, np.pi / 2  # the same box written the other way round
    assert boxes_agree(box, turned, 0.15, 0.045)
    doubled = box.copy()
    doubled[0], doubled[3] = 0.5, 2.0
    assert not boxes_agree(box, doubled, 0.15, 0.045) and not boxes_agree(doubled, box, 0.15, 0.045)
    cup = _box(0.0, dx=0.1, dy=0.1, dz=0.1)
    assert boxes_agree(cup, cup + np.r_[0.03, 0, 0, 0, 0, 0, 0, 0, 0], 0.15, 0.045)  # a voxel of lift noise


def test_a_box_is_shown_once_another_look_agrees_and_held_until_one_confirms_a_change() -> None:
    state, box = BoxSettling(), _box(0.0)
    for _ in range(30):  # thirty frames of one look: nothing confirms it
        state.observe(box, (0, 0, 0, 0), 0.15, 0.045)
    assert state.state is BoxState.UNSETTLED and state.shown is None
    state.observe(box + np.r_[0.01, 0, 0, 0, 0, 0, 0, 0, 0], (1, 0, 0, 5), 0.15, 0.045)  # a second look agrees
    assert state.state is BoxState.SETTLED
    shown = state.shown.copy()
    doubled = _box(0.15, dx=0.6)
    state.observe(doubled, (2, 0, 0, 9), 0.15, 0.045)  # a look that doubles it: held
    assert state.state is BoxState.GROWING and np.array_equal(state.shown, shown)
    state.observe(doubled, (3, 0, 0, 12), 0.15, 0.045)  # another look that agrees with the change: shown
    assert state.state is BoxState.SETTLED and np.array_equal(state.shown, doubled)
    state.observe(box, None, 0.15, 0.045)  # no looks known (no viewpoint): shown as it is
    assert state.state is BoxState.SETTLED and np.array_equal(state.shown, box)
    assert BoxSettling.from_dict(state.to_dict()).to_dict() == state.to_dict()


def test_an_object_appears_when_sure_and_is_retracted_only_below_the_bar() -> None:
    state = BoxSettling(shown=_box(0.0))
    for confidence, appeared in ((0.75, False), (0.79, False), (0.81, True), (0.72, True), (0.69, False),
                                 (0.78, False), (0.8, True)):
        state.follow(confidence, 0.8, 0.7)
        assert state.appeared is appeared, confidence
    unsettled = BoxSettling()
    unsettled.follow(0.99, 0.8, 0.7)
    assert not unsettled.appeared  # sure, but no two looks agreed on its box yet


def test_look_support_counts_each_look_once() -> None:
    support = LookSupport()
    pts = np.array([[0.01, 0.01, 0.01], [0.05, 0.01, 0.01]])
    for _ in range(30):
        support.add(pts, 0.03, look=7)  # thirty frames of one look
    support.add(pts[:1], 0.03, look=8)
    keys = support.keys
    assert sorted(support.of(keys).tolist()) == [1, 2]
    other = LookSupport()
    other.add(pts, 0.03, look=7)
    support.merge(other)  # fragments seen in the same looks: counts are not added up
    assert sorted(support.of(keys).tolist()) == [1, 2]
    assert LookSupport.from_dict(support.to_dict()).to_dict() == support.to_dict()


def _crate_look(memory: SceneMemory, eye: np.ndarray, t0: float, crate: np.ndarray, name: str, score: float,
                seconds: float = 1.0) -> list[bool]:
    """The camera at ``eye`` looks at ``crate`` for ``seconds`` at 30 Hz, the detector calls it ``name`` in every
    frame; whether it was published after each frame."""
    T = look_at(eye, crate[:3])
    box = project_box(T, crate)
    shown = []
    for k in range(int(seconds * HZ)):
        frame = render_frame(T, [crate], index=int((t0 + k / HZ) * 10))
        dets = Detections2D(box[None], np.array([NAMES.index(name)]), np.array([score]), NAMES)
        lifted = lift_detections(frame, dets, LiftingParams())
        memory.update(FramePerception(frame.index, int((t0 + k / HZ) * S), lifted, dets, viewpoint=eye, frame=frame))
        shown.append(bool(memory.published_objects()))
    return shown


def test_a_one_look_false_detection_is_never_published() -> None:
    """A detector's strong mistake from one place (a leaflet holder called "microwave" at 0.9 in all thirty
    frames of a second): sure enough by its evidence, but no second look ever agreed on it."""
    crate, eye = _box(0.0, 2.0, 0.2, 0.45, 0.35, 0.35), np.array([0.0, 0.0, 1.0])
    memory = SceneMemory(discover_unknown=False)
    shown = _crate_look(memory, eye, 0.0, crate, "microwave", 0.9)
    (obj,) = memory.objects()
    assert obj.confidence > 0.8 and obj.n_looks == 1 and obj.box_state is BoxState.UNSETTLED
    assert not any(shown)  # at no moment
    again = _crate_look(memory, eye + [0.6, 0.0, 0.0], 1.0, crate, "microwave", 0.9)  # a second place agrees
    assert again[0] and all(again)  # from its first frame on, and it stays


def _lifted(index: int, eye: np.ndarray, box: np.ndarray, points: np.ndarray, name: str = "book",
            score: float = 0.8) -> FramePerception:
    det = Detections3D(box[None], [NAMES.index(name)], [score], NAMES, "world", points=(points,))
    return FramePerception(index, int(index * S / HZ), det, viewpoint=eye)


def _points(box: np.ndarray, step: float = 0.02) -> np.ndarray:
    lo, hi = box[:3] - 0.5 * box[3:6], box[:3] + 0.5 * box[3:6]
    axes = [np.arange(lo[k], hi[k] + 1e-9, step) for k in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def test_a_box_that_one_looks_bad_lift_would_double_stays() -> None:
    """A book seen from three places; then, from a fourth, every frame's lift also takes in the magazine beside
    it (the box twice as long); then two more places see the book alone. The published box never moves."""
    book = _box(0.0, 2.0, 0.75, 0.2, 0.15, 0.04)
    both = _box(0.1, 2.0, 0.75, 0.4, 0.15, 0.04)  # the book and the magazine beside it: still a book's size
    memory = SceneMemory(discover_unknown=False)
    index, first = 0, None
    for look in range(6):
        eye = np.array([-1.5 + 0.6 * look, 0.5, 1.4])
        for _ in range(10):  # a third of a second at 30 Hz
            bad = look == 3
            memory.update(_lifted(index, eye, both if bad else book, _points(both if bad else book)))
            index += 1
            published = memory.published_objects()
            if first is None and published:
                first = published[0].box.copy()
            if first is not None:
                (obj,) = published
                assert box_iou_3d(obj.box[None], first[None])[0, 0] > 0.8, (look, obj.box)
                assert obj.settled or look == 3  # growing only while the bad look is pending
    assert first is not None and box_iou_3d(first[None], book[None])[0, 0] > 0.6


def test_the_table_around_a_cup_seen_from_above_never_grows_it() -> None:
    """A cup on a table, seen from six places; from three of them, close and from above, every frame's lift also
    takes in the table beside it (points at the height of the surface around the detection). Those points are
    the table: the published box stays the cup's. A magazine lying on that table keeps its points."""
    table_z = 0.70
    cup = _box(0.0, 2.0, table_z + 0.05, 0.1, 0.1, 0.1)
    beside = _points(_box(0.0, 2.12, table_z, 0.1, 0.14, 0.0))  # the table top beside the cup
    magazine = _box(0.5, 2.0, table_z + 0.005, 0.3, 0.2, 0.01)
    memory = SceneMemory(discover_unknown=False)
    index = 0
    for look in range(6):
        eye = np.array([-1.5 + 0.6 * look, 0.5, 1.4])
        for _ in range(10):
            seen = _points(cup)
            seen = seen[seen[:, 2] >= table_z + 0.02]  # its foot is hidden
            bad = look in (1, 2, 3)
            points = np.vstack([seen, beside]) if bad else seen
            lo, hi = points.min(axis=0), points.max(axis=0)
            lifted = np.array([*(lo + hi) / 2, *(hi - lo), 0.0, 0.0, 0.0])
            flat = _points(magazine, 0.02)
            det = Detections3D(np.stack([lifted, magazine]), [NAMES.index("cup"), NAMES.index("book")], [0.8, 0.8],
                               NAMES, "world", points=(points, flat), surround_z=np.array([table_z, table_z]))
            memory.update(FramePerception(index, int(index * S / HZ), det, viewpoint=eye))
            index += 1
            for obj in memory.published_objects():
                if obj.class_name == "cup":
                    assert box_iou_3d(obj.box[None], cup[None])[0, 0] > 0.5, (look, obj.box)
    shown = {o.class_name: o for o in memory.published_objects()}
    assert set(shown) == {"cup", "book"}
    assert box_iou_3d(shown["book"].box[None], magazine[None])[0, 0] > 0.25, shown["book"].box
    assert len(memory.geometry_points(shown["book"].id)) >= 50  # the magazine's own points: it lies in the band


def _in_parts(index: int, eye: np.ndarray, box: np.ndarray, name: str, score: float) -> FramePerception:
    """A frame from ``eye`` looking up at a wall (no floor in view) whose detection of ``box`` the image's edge
    cuts: the object is seen in parts."""
    frame = render_frame(look_at(eye, eye + [0.0, 5.0, 4.0]), [], wall_y=6.0, index=index)
    cut = np.array([[0.0, 100.0, frame.width - 1.0, frame.height - 1.0]])
    det = Detections3D(box[None], [NAMES.index(name)], [score], NAMES, "world", boxes_2d=cut,
                       points=(_points(box, 0.05),))
    return FramePerception(index, int(index * S / HZ), det, viewpoint=eye, frame=frame)


def test_a_table_seen_before_the_floor_is_shown_down_to_it_once_the_floor_is_seen() -> None:
    """A table seen from above from two places, before any floor was seen: its top is shown. A third place sees
    more of it (a change that awaits another look); then a look at the floor behind the camera gives the
    floor. The table the map shows reaches the floor at once, not after the next look of the table."""
    memory = SceneMemory(discover_unknown=False)
    top = _box(0.0, 2.0, 0.73, 1.2, 0.8, 0.04)
    index = 0
    for look, grown in ((0, top), (1, top), (2, _box(0.2, 2.0, 0.73, 1.6, 0.8, 0.04))):
        for _ in range(5):
            memory.update(_in_parts(index, np.array([-1.0 + look, 0.0, 1.5]), grown, "diningtable", 0.9))
            index += 1
    assert memory.floor_z is None
    (shown,) = memory.published_objects()
    assert shown.box[2] - 0.5 * shown.box[5] > 0.6 and not shown.settled  # its top; the third look awaits
    eye = np.array([2.0, 0.0, 1.5])
    floor_view = render_frame(look_at(eye, eye + [0.0, -1.5, -1.5]), [], wall_y=-6.0, index=index)
    nothing = Detections3D(np.zeros((0, 9)), np.zeros(0, int), np.zeros(0), NAMES, "world", points=())
    memory.update(FramePerception(index, int(index * S / HZ), nothing, viewpoint=eye, frame=floor_view))
    assert memory.floor_z == pytest.approx(0.0, abs=0.03)
    (shown,) = memory.published_objects()
    assert shown.box[2] - 0.5 * shown.box[5] == pytest.approx(0.0, abs=0.03), shown.box


def test_an_object_appears_only_with_a_box_that_has_settled_since_it_changed() -> None:
    """A monitor seen in parts: two faint looks agree on a part of it; a third look sees all of it, and becomes
    sure once its box has grown. The monitor is sure enough from then on, but its box awaits another look: it
    appears once a fourth look agrees, never with the part's box."""
    part, whole = _box(0.0, 3.0, 1.2, 0.3, 0.1, 0.45), _box(0.25, 3.0, 1.2, 0.8, 0.1, 0.45)
    memory = SceneMemory(discover_unknown=False)
    index, appeared = 0, []
    faint, sure = [0.3] * 6, [0.3] * 3 + [0.9] * 3  # the third look grows the box, then becomes sure
    for look, (box, scores) in enumerate(((part, faint), (part, faint), (whole, sure), (whole, sure))):
        eye = np.array([-1.0 + look, 0.0, 1.4])
        for score in scores:
            memory.update(_in_parts(index, eye, box, "tvmonitor", score))
            index += 1
            for obj in memory.published_objects():
                appeared.append(look)
                assert box_iou_3d(obj.box[None], whole[None])[0, 0] > 0.7, (look, obj.box)
    assert appeared and appeared[0] == 3


def _monitors_look(memory: SceneMemory, index: int, eye: np.ndarray, pair: bool, monitors: list[np.ndarray],
                   pair_name: str = "tvmonitor") -> int:
    """Three frames from ``eye``: the detector boxes each monitor (``pair`` False) or both in one box, of class
    ``pair_name``."""
    T = look_at(eye, np.array([0.0, 3.0, 1.2]))
    boxes = [project_box(T, m) for m in monitors]
    if pair:
        boxes = [np.r_[np.minimum(*[b[:2] for b in boxes]), np.maximum(*[b[2:] for b in boxes])]]
    for _ in range(3):
        frame = render_frame(T, monitors, index=index)
        name = pair_name if pair else "tvmonitor"
        dets = Detections2D(np.array(boxes), np.full(len(boxes), NAMES.index(name)), np.full(len(boxes), 0.8), NAMES)
        memory.update(FramePerception(index, int(index * S / 3), lift_detections(frame, dets, LiftingParams()), dets,
                                      viewpoint=eye, frame=frame))
        index += 1
    return index


def test_two_neighbouring_monitors_stay_two() -> None:
    """Two monitors side by side on a wall, each seen and published; then the detector boxes the pair as one,
    look after look (two screens as one are no wider than a screen can be: 1 m x 35 cm)."""
    monitors = [_box(-0.255, 3.0, 1.2, 0.5, 0.05, 0.35), _box(0.255, 3.0, 1.2, 0.5, 0.05, 0.35)]
    memory = SceneMemory(discover_unknown=False)
    index = 0
    for look in range(8):
        index = _monitors_look(memory, index, np.array([-1.0 + 0.3 * look, 0.5, 1.3]), look >= 3, monitors)
        published = memory.published_objects()
        if look >= 2:
            assert len(published) == 2, look
            centres = sorted(o.box[0] for o in published)  # one over each screen, as wide as one
            assert centres == pytest.approx([m[0] for m in monitors], abs=0.05), look
            assert all(max(o.box[3], o.box[4]) < 0.6 for o in published)


def test_two_monitors_on_the_map_are_not_merged_by_a_box_of_another_class_over_both() -> None:
    """The same two monitors, then a look in which the detector calls the pair one "laptop": that box joins one
    of them, and its points (not a monitor's) lie on both; the two on the map are not merged."""
    monitors = [_box(-0.255, 3.0, 1.2, 0.5, 0.05, 0.35), _box(0.255, 3.0, 1.2, 0.5, 0.05, 0.35)]
    memory = SceneMemory(discover_unknown=False)
    index = 0
    for look in range(4):
        index = _monitors_look(memory, index, np.array([-1.0 + 0.3 * look, 0.5, 1.3]), look >= 3, monitors, "laptop")
        screens = [o for o in memory.published_objects() if o.class_name == "tvmonitor"]
        if look >= 2:
            assert len(screens) == 2 and all(max(o.box[3], o.box[4]) < 0.6 for o in screens), look


def test_settling_and_look_support_survive_save_and_load(tmp_path) -> None:
    memory = SceneMemory(discover_unknown=False)
    book = _box(0.0, 2.0, 0.75, 0.3, 0.22, 0.04)
    for look in range(2):
        memory.update(_lifted(look, np.array([0.6 * look, 0.5, 1.4]), book, _points(book)))
    memory.save(tmp_path / "memory.json")
    loaded = SceneMemory.load(tmp_path / "memory.json")
    assert loaded.objects() == memory.objects() and loaded.objects()[0].settled
    nxt = _lifted(2, np.array([1.2, 0.5, 1.4]), book, _points(book))
    assert loaded.update(nxt) == memory.update(nxt) and loaded.objects() == memory.objects()
    old = memory.to_dict()
    for o in old["objects"]:  # a map saved before settling: it showed every box as it was
        del o["settling"], o["support"]
    assert SceneMemory.from_dict(old).objects()[0].box_state is BoxState.SETTLED


@pytest.mark.parametrize("state", list(BoxState))
def test_every_box_state_reads_back(state: BoxState) -> None:
    assert BoxState(state.value) is state
