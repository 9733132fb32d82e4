"""Scene memory: association, fusion, duplicates, publishing, snapshots, persistence, spatial index."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from embodied_ros.detections import Detections3D, FramePerception
from embodied_ros.errors import ConfigError, FrameError, InputError
from embodied_ros.geometry.boxes import FRONT_AXIS, box_corners, box_rotations, make_boxes
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.box_fusion import align_box, canonical_box, face_box, fuse_boxes
from embodied_ros.memory.config import MemoryConfig, ScoreMode
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.memory.spatial_index import SpatialHashGrid

VOCAB = ("chair", "sofa", "table", "cup", "bed")


def _box(x=0.0, y=0.0, z=0.5, dx=1.0, dy=1.0, dz=1.0, yaw=0.0, beta=0.0, gamma=0.0) -> np.ndarray:
    return np.array([x, y, z, dx, dy, dz, yaw, beta, gamma], dtype=np.float64)


def _frame(index, boxes, scores, names, frame_id="world", viewpoint=None) -> FramePerception:
    boxes = np.array(boxes, dtype=np.float64).reshape(-1, 9)
    labels = np.array([VOCAB.index(n) for n in names], dtype=np.int64)
    det = Detections3D(boxes, labels, np.asarray(scores, dtype=np.float64), VOCAB, frame_id)
    return FramePerception(frame_index=index, stamp_ns=1_000_000 * index, detections=det,
                           viewpoint=None if viewpoint is None else np.asarray(viewpoint, dtype=np.float64))


def _random_boxes(rng: np.random.Generator, n: int, extent: float = 6.0, general: bool = True) -> np.ndarray:
    centres = rng.uniform(-extent, extent, (n, 3))
    sizes = rng.uniform(0.2, 1.5, (n, 3))
    angles = rng.uniform(-np.pi, np.pi, (n, 3)) * ([1, 1, 1] if general else [1, 0, 0])
    return np.concatenate([centres, sizes, angles], axis=1)


def test_same_box_ten_times_is_one_object():
    memory = SceneMemory()
    for i in range(10):
        memory.update(_frame(i, [_box(1, 2, 0.5, 1.0, 0.6, 0.8, 0.3)], [0.6], ["chair"]))
    (obj,) = memory.objects()
    assert obj.n_observations == 10
    assert (obj.first_seen_frame, obj.last_seen_frame) == (0, 9)
    assert (obj.first_seen_ns, obj.last_seen_ns) == (0, 9_000_000)
    np.testing.assert_allclose(obj.box, _box(1, 2, 0.5, 1.0, 0.6, 0.8, 0.3), atol=1e-12)
    assert obj.class_name == "chair" and dict(obj.class_scores)["chair"] == pytest.approx(6.0)


def test_jittered_box_fuses_to_score_weighted_mean():
    rng = np.random.default_rng(1)
    boxes = np.array([_box(1, 2, 0.5, 1.2, 0.8, 0.9, 0.4) for _ in range(12)])
    boxes[:, 0:3] += rng.normal(0, 0.03, (12, 3))
    boxes[:, 3:6] += rng.normal(0, 0.02, (12, 3))
    boxes[:, 6] += rng.normal(0, 0.02, 12)
    scores = rng.uniform(0.3, 0.9, 12)
    memory = SceneMemory()
    for i in range(12):
        memory.update(_frame(i, [boxes[i]], [scores[i]], ["table"]))
    (obj,) = memory.objects()
    expected = np.average(boxes, axis=0, weights=scores)  # below the fusion weight cap: exact mean
    np.testing.assert_allclose(obj.box, expected, atol=1e-9)
    assert obj.score == pytest.approx(scores.max())  # ScoreMode.MAX


def test_separated_objects_stay_separate():
    memory = SceneMemory()
    for i in range(5):
        memory.update(_frame(i, [_box(0, 0), _box(3, 0)], [0.5, 0.4], ["chair", "chair"]))
    objs = memory.objects()
    assert [o.n_observations for o in objs] == [5, 5]
    assert [o.id for o in objs] == [0, 1]


def test_score_threshold():
    memory = SceneMemory()
    result = memory.update(_frame(0, [_box(0, 0), _box(3, 0), _box(6, 0)], [0.0749, 0.075, 0.5], ["cup"] * 3))
    assert result.n_low_score == 1
    assert sorted(o.box[0] for o in memory.objects()) == [3.0, 6.0]  # >= 0.075 enters
    for i in range(1, 20):
        memory.update(_frame(i, [_box(10, 0)], [0.07], ["cup"]))
    assert len(memory) == 2


def test_iou_threshold_is_strict():
    a, b = _box(0, 0), _box(0.74, 0)  # unit cubes: IoU = 0.26 / 1.74 = 0.149...
    iou = float(box_iou_3d(a[None], b[None])[0, 0])
    assert iou == pytest.approx(0.26 / 1.74, abs=1e-12)

    def n_objects(threshold: float) -> int:
        memory = SceneMemory(iou_threshold=threshold)
        memory.update(_frame(0, [a], [0.9], ["chair"]))
        memory.update(_frame(1, [b], [0.9], ["chair"]))
        return len(memory)

    assert n_objects(iou) == 2  # IoU equal to the threshold: not the same object
    assert n_objects(np.nextafter(iou, -np.inf)) == 1
    assert n_objects(0.15) == 2  # the demo's threshold
    close = _box(0.72, 0)  # IoU = 0.28 / 1.72 = 0.163 > 0.15
    memory = SceneMemory()
    memory.update(_frame(0, [a], [0.9], ["chair"]))
    memory.update(_frame(1, [close], [0.9], ["chair"]))
    assert len(memory) == 1


def test_class_agnostic_and_per_class():
    chair, sofa = _box(0, 0, 0.5, 1.0, 1.0, 1.0), _box(0.1, 0, 0.5, 1.2, 1.0, 1.0)
    agnostic = SceneMemory()
    agnostic.update(_frame(0, [chair], [0.6], ["chair"]))
    agnostic.update(_frame(1, [sofa], [0.5], ["sofa"]))
    (obj,) = agnostic.objects()
    assert obj.class_name == "chair" and dict(obj.class_scores) == pytest.approx({"chair": 0.6, "sofa": 0.5})

    per_class = SceneMemory(class_agnostic=False)
    per_class.update(_frame(0, [chair], [0.6], ["chair"]))
    per_class.update(_frame(1, [sofa], [0.5], ["sofa"]))
    assert sorted(o.class_name for o in per_class.objects()) == ["chair", "sofa"]
    # In one frame too: class-agnostic suppression drops the weaker overlapping detection.
    one = SceneMemory()
    result = one.update(_frame(0, [chair, sofa], [0.6, 0.5], ["chair", "sofa"]))
    assert len(one) == 1 and result.n_suppressed == 1


def test_class_is_argmax_of_evidence():
    memory = SceneMemory()
    for i, (name, score) in enumerate([("chair", 0.5), ("sofa", 0.9), ("chair", 0.5), ("chair", 0.5)]):
        memory.update(_frame(i, [_box()], [score], [name]))
        if i == 1:
            assert memory.objects()[0].class_name == "sofa"  # 0.9 > 0.5
    (obj,) = memory.objects()
    assert obj.class_name == "chair"  # 1.5 > 0.9
    assert obj.class_scores[0][0] == "chair" and obj.n_observations == 4


def test_several_detections_of_one_object_in_one_frame_are_greedy_by_score():
    memory = SceneMemory()
    memory.update(_frame(0, [_box()], [0.5], ["chair"]))
    result = memory.update(_frame(1, [_box(0.05), _box(-0.05)], [0.3, 0.8], ["chair", "sofa"]))
    (obj,) = memory.objects()
    assert result.updated == (0,) and result.n_suppressed == 1 and not result.created
    assert obj.n_observations == 2
    assert dict(obj.class_scores) == pytest.approx({"chair": 0.5, "sofa": 0.8})  # the 0.8 one was used
    np.testing.assert_allclose(obj.box[0], (0.5 * 0.0 + 0.8 * -0.05) / 1.3)


def test_merge_keeps_older_id_and_ids_are_never_reused():
    memory = SceneMemory()
    first = memory.update(_frame(0, [_box(0.0), _box(0.8)], [0.5, 0.5], ["chair", "chair"]))
    assert first.created == (0, 1)  # IoU 0.2 / 1.8 = 0.11: two objects
    # A detection at 0.35 matches both (IoU 0.48 and 0.35) and takes the better, object 0, which
    # moves to x = 0.175 and now overlaps object 1 with IoU 0.23 > 0.15: 1 is merged into 0.
    result = memory.update(_frame(1, [_box(0.35)], [0.5], ["chair"]))
    assert result.merged == ((1, 0),) and result.updated == (0,)
    (obj,) = memory.objects()
    assert obj.id == 0 and obj.n_observations == 3 and obj.first_seen_frame == 0 and obj.last_seen_frame == 1
    np.testing.assert_allclose(obj.box[0], (1.0 * 0.175 + 0.5 * 0.8) / 1.5)  # fusion weights 1.0 and 0.5
    assert memory.get(1) is None
    assert memory.update(_frame(2, [_box(5.0)], [0.5], ["cup"])).created == (2,)  # not 1
    memory.reset()
    assert len(memory) == 0 and memory.objects() == []
    assert memory.update(_frame(3, [_box(0.0)], [0.5], ["cup"])).created == (3,)  # ids keep counting


def test_published_objects_cap_per_class():
    memory = SceneMemory(min_observations=1, publish_confidence=0.0)  # every object counts here
    scores = np.linspace(0.2, 0.9, 15)
    chairs = [_box(3.0 * i, 0) for i in range(15)]
    memory.update(_frame(0, chairs + [_box(0, 5)], list(scores) + [0.1], ["chair"] * 15 + ["cup"]))
    published = memory.published_objects()
    assert len(memory.objects()) == 16
    assert [o.class_name for o in published].count("chair") == 10
    assert [o.score for o in published if o.class_name == "chair"] == pytest.approx(sorted(scores)[::-1][:10])
    assert published[-1].class_name == "cup"  # best score first overall
    assert len(SceneMemory(max_per_class=3).published_objects()) == 0
    confident = SceneMemory(min_observations=1)  # by default one fair sighting is not yet confidence
    confident.update(_frame(0, chairs, [0.5] * 15, ["chair"] * 15))
    assert confident.published_objects() == []
    confident.update(_frame(1, chairs, [0.5] * 15, ["chair"] * 15))  # a second one is (p 0.78) ...
    assert confident.objects()[0].confidence > 0.7 and confident.published_objects() == []
    confident.update(_frame(2, chairs, [0.5] * 15, ["chair"] * 15))  # ... but a chair appears once 0.8 sure
    assert len(confident.published_objects()) == 10


def test_containment_joins_a_thin_fragment_of_the_same_class_only():
    monitor = _box(0, 0, 1.0, 0.8, 0.10, 0.5)
    sliver = _box(0.2, 0.03, 1.0, 0.3, 0.04, 0.3)  # inside the monitor, IoU far below 0.15
    iou = box_iou_3d(monitor[None], sliver[None])[0, 0]
    assert iou < 0.15
    memory = SceneMemory()
    memory.update(_frame(0, [monitor], [0.6], ["chair"]))
    memory.update(_frame(1, [sliver], [0.5], ["chair"]))
    assert len(memory.objects()) == 1 and memory.objects()[0].n_observations == 2
    other_class = SceneMemory()
    other_class.update(_frame(0, [monitor], [0.6], ["chair"]))
    other_class.update(_frame(1, [sliver], [0.5], ["cup"]))  # a cup in front of a chair stays a cup
    assert len(other_class.objects()) == 2
    iou_only = SceneMemory(containment_threshold=1.0)
    iou_only.update(_frame(0, [monitor], [0.6], ["chair"]))
    iou_only.update(_frame(1, [sliver], [0.5], ["chair"]))
    assert len(iou_only.objects()) == 2


def test_published_objects_need_min_observations():
    assert SceneMemory().config.min_observations == 1  # by default the existence evidence alone decides
    memory = SceneMemory(publish_confidence=0.0, min_observations=2)  # confirmed by a second sighting
    cup, blip = _box(0, 0), _box(5, 0)
    memory.update(_frame(0, [cup, blip], [0.5, 0.9], ["cup", "chair"]))
    assert memory.published_objects() == [] and len(memory.objects()) == 2
    memory.update(_frame(1, [cup], [0.4], ["cup"]))
    assert [o.class_name for o in memory.published_objects()] == ["cup"]
    assert len(SceneMemory(min_observations=1).published_objects()) == 0  # empty memory publishes nothing
    with pytest.raises(ConfigError):
        SceneMemory(min_observations=0)


def test_yaw_fusion_across_the_quarter_turn_symmetry():
    long_x = _box(0, 0, 0.5, 2.0, 1.0, 0.8, 0.1)
    long_y = _box(0, 0, 0.5, 1.0, 2.0, 0.8, 0.1 + np.pi / 2 + 0.04)  # the same box, 0.04 rad more
    assert box_iou_3d(long_x[None], long_y[None])[0, 0] > 0.9
    memory = SceneMemory()
    memory.update(_frame(0, [long_x], [0.5], ["table"]))
    memory.update(_frame(1, [long_y], [0.5], ["table"]))
    (obj,) = memory.objects()
    np.testing.assert_allclose(obj.box[3:6], [2.0, 1.0, 0.8])  # not averaged into a square
    assert obj.box[6] == pytest.approx(0.12)  # yaw averaged modulo the symmetry
    assert obj.box[7] == 0.0 and obj.box[8] == 0.0
    # Near the wrap-around of yaw (pi-periodic): -pi/2 + 0.01 and pi/2 - 0.01 average to about pi/2.
    fused = fuse_boxes(_box(yaw=-np.pi / 2 + 0.01, dx=2.0), 1.0, _box(yaw=np.pi / 2 - 0.01, dx=2.0), 1.0)
    assert abs(np.sin(fused[6] - np.pi / 2)) < 1e-9
    np.testing.assert_allclose(fused[3:6], [2.0, 1.0, 1.0])


def test_general_rotation_fusion_resolves_axis_symmetry():
    rng = np.random.default_rng(3)
    for _ in range(20):
        box = _random_boxes(rng, 1)[0]
        R = box_rotations(box)[0]
        # The same box with its axes relabelled: rotate by 90 degrees about its own x axis.
        P = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
        same = make_boxes(box[0:3], box[3:6][[0, 2, 1]], (R @ P)[None])[0]
        assert box_iou_3d(box[None], same[None])[0, 0] == pytest.approx(1.0, abs=1e-6)
        aligned = align_box(same, box)
        np.testing.assert_allclose(box_rotations(aligned)[0], R, atol=1e-9)
        np.testing.assert_allclose(aligned[3:6], box[3:6], atol=1e-12)
        fused = fuse_boxes(box, 0.7, same, 0.3)
        np.testing.assert_allclose(box_rotations(fused)[0], R, atol=1e-9)
        np.testing.assert_allclose(fused[3:6], box[3:6], atol=1e-12)
    # Two different rotations: the fused one lies between them on the geodesic.
    a, b = _box(beta=0.2), _box(beta=0.5)
    fused = fuse_boxes(a, 1.0, b, 1.0)
    np.testing.assert_allclose(box_rotations(fused)[0], box_rotations(_box(beta=0.35))[0], atol=1e-9)


def test_snapshot_is_immutable_and_unaffected_by_later_updates():
    memory = SceneMemory()
    memory.update(_frame(0, [_box(0)], [0.5], ["chair"]))
    snap = memory.snapshot()
    memory.update(_frame(1, [_box(0.1)], [0.9], ["sofa"]))
    memory.update(_frame(2, [_box(5.0)], [0.9], ["cup"]))
    assert len(snap) == 1 and snap.objects[0].n_observations == 1 and snap.objects[0].box[0] == 0.0
    assert snap.frame_index == 0 and memory.snapshot().frame_index == 2
    with pytest.raises(ValueError):
        snap.boxes[0, 0] = 3.0
    with pytest.raises(ValueError):
        snap.objects[0].box[0] = 3.0
    assert memory.snapshot() is memory.snapshot()  # cached until the next change


def test_snapshots_from_another_thread_while_updating():
    memory = SceneMemory()
    rng = np.random.default_rng(5)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                snap = memory.snapshot()
                assert len(snap.ids) == len(snap.objects) == len(snap.boxes)
                assert list(snap.ids) == sorted(snap.ids)
        except BaseException as err:  # noqa: BLE001 - reported to the main thread
            errors.append(err)

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(60):
        boxes = _random_boxes(rng, 5, extent=3.0, general=False)
        memory.update(_frame(i, boxes, rng.uniform(0.1, 1.0, 5), ["chair"] * 5))
    stop.set()
    thread.join()
    assert not errors
    assert len(memory) > 0


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    memory = SceneMemory(max_per_class=4, score_mode=ScoreMode.EMA)
    for i in range(15):
        memory.update(_frame(i, _random_boxes(rng, 6, extent=2.5), rng.uniform(0.05, 1.0, 6),
                             list(rng.choice(VOCAB, 6)), viewpoint=rng.uniform(-3, 3, 3)))
    path = tmp_path / "memory.json"
    memory.save(path)
    loaded = SceneMemory.load(path)
    assert loaded.objects() == memory.objects()
    assert loaded.config == memory.config and loaded.frame_id == "world"
    assert loaded.vocabulary == memory.vocabulary == VOCAB  # what the detector could have named
    assert all(0.0 <= o.score <= 1.0 for o in loaded.objects())
    # Both go on identically (same fusion weights, same id counter).
    # (the directions objects were seen from are saved too: the next sighting turns fronts alike)
    nxt = _frame(15, _random_boxes(rng, 6, extent=2.5), rng.uniform(0.1, 1.0, 6), ["cup"] * 6, viewpoint=[0, 4, 1])
    assert loaded.update(nxt) == memory.update(nxt)
    assert loaded.objects() == memory.objects()
    assert SceneMemory.from_dict(memory.to_dict(), max_per_class=2).config.max_per_class == 2
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError):
        SceneMemory.load(tmp_path / "bad.json")
    with pytest.raises(InputError):
        SceneMemory.load(tmp_path / "missing.json")


def _front(box: np.ndarray) -> np.ndarray:
    return box_rotations(box[None])[0] @ FRONT_AXIS


def _same_box(a: np.ndarray, b: np.ndarray) -> bool:
    return np.allclose(np.sort(box_corners(a[None])[0], axis=0), np.sort(box_corners(b[None])[0], axis=0), atol=1e-9)


@pytest.mark.parametrize("direction", [(1, 0), (0, 1), (-1, 0), (0, -1), (0.6, -0.8)])
def test_face_box_turns_the_front_without_changing_the_box(direction):
    d = np.array(direction, dtype=np.float64)
    sofa = _box(1.0, 2.0, 0.4, 2.0, 0.9, 0.8, yaw=0.3)
    faced = face_box(sofa, d)
    assert _same_box(faced, sofa)
    assert faced[7] == 0.0 and faced[8] == 0.0  # gravity-aligned stays gravity-aligned
    front = _front(faced)[:2]
    # Of the four horizontal sides, the front is the one nearest the direction (within 45 degrees).
    assert front @ d / np.linalg.norm(d) >= np.cos(np.pi / 4) - 1e-9
    # A tilted box: its most vertical axis becomes local z, then the same rule.
    book = _box(0.0, 0.0, 0.8, 0.3, 0.2, 0.05, yaw=0.4, beta=1.3, gamma=0.2)
    faced = face_box(book, d)
    R = box_rotations(faced[None])[0]
    assert _same_box(faced, book)
    assert R[2, 2] == pytest.approx(np.abs(box_rotations(book[None])[0][2]).max())
    horizontal = _front(faced)[:2] / np.linalg.norm(_front(faced)[:2])
    assert horizontal @ d / np.linalg.norm(d) >= np.cos(np.pi / 4) - 1e-9
    # No direction: the box keeps its own front.
    np.testing.assert_allclose(face_box(sofa, np.zeros(2)), sofa, atol=1e-12)


def test_objects_face_where_they_were_seen_from():
    """A detector that cannot tell front from back; the memory turns a sofa's front towards the
    viewpoints it was seen from (the robot stood east of it, later north)."""
    detection = _box(0.0, 0.0, 0.4, 0.9, 2.0, 0.8, yaw=0.2)  # front (local -y) points roughly south
    memory = SceneMemory(min_observations=1, front_from_shape=False)  # any side (the shape rule: below)
    for i, y in enumerate((-1.0, 0.0, 1.5)):
        memory.update(_frame(i, [detection], [0.8], ["sofa"], viewpoint=[3.0, y, 1.2]))
    (sofa,) = memory.objects()
    assert _same_box(sofa.box, detection)
    assert _front(sofa.box)[0] > 0.95  # east
    for i in range(3, 12):  # then seen from the north, more often and with higher scores
        memory.update(_frame(i, [detection], [0.9], ["sofa"], viewpoint=[0.0, 5.0, 1.2]))
    assert _front(memory.objects()[0].box)[1] > 0.95
    # Off, or without viewpoints: the stored box is the fresh object's canonical form (here facing west).
    assert _front(canonical_box(detection))[0] < -0.95
    for kwargs, viewpoint in (({"front_from_views": False}, [3.0, 0.0, 1.2]), ({}, None)):
        other = SceneMemory(min_observations=1, **kwargs)
        other.update(_frame(0, [detection], [0.8], ["sofa"], viewpoint=viewpoint))
        np.testing.assert_allclose(other.objects()[0].box, canonical_box(detection), atol=1e-12)


def test_furniture_faces_across_its_depth_and_a_bed_towards_its_foot():
    """Seen from the side, the views alone give a sofa (or a monitor) a side for its front. With
    front_from_shape its front stays along its shorter horizontal extent (a bed's: the longer),
    on whichever of those two sides the views favour."""
    sofa = _box(0.0, 0.0, 0.4, 0.9, 2.0, 0.8)  # 0.9 m deep along x, 2 m long along y
    bed = _box(3.0, 0.0, 0.3, 1.6, 2.1, 0.6)  # 2.1 m long along y
    chair = _box(-3.0, 0.0, 0.5, 0.5, 0.5, 1.0)
    fronts = {}
    for shape in (True, False):
        memory = SceneMemory(min_observations=1, front_from_shape=shape)
        for i in range(3):  # mostly from the north (+y), a little from the east (+x)
            memory.update(_frame(i, [sofa, bed, chair], [0.8] * 3, ["sofa", "bed", "chair"],
                                 viewpoint=[1.0, 8.0, 1.2]))
        got = {o.class_name: o for o in memory.objects()}
        for name, truth in (("sofa", sofa), ("bed", bed), ("chair", chair)):
            assert _same_box(got[name].box, truth)  # the same physical box, whatever its front
        fronts[shape] = {name: _front(o.box)[:2] for name, o in got.items()}
    assert fronts[False]["sofa"][1] > 0.99 and fronts[False]["bed"][1] > 0.99  # views alone: north
    assert fronts[True]["sofa"][0] > 0.99  # across its depth, on the side nearer the views: east
    assert fronts[True]["bed"][1] > 0.99  # its foot, along its length: north
    assert fronts[True]["chair"][1] > 0.99 and fronts[False]["chair"][1] > 0.99  # not listed: the views
    with pytest.raises(ValueError, match="along"):
        face_box(sofa, np.array([1.0, 0.0]), along="wide")


def test_merged_objects_pool_the_directions_they_were_seen_from():
    memory = SceneMemory(min_observations=1)
    memory.update(_frame(0, [_box(0.0, 0, 0.5, 0.5, 0.5, 1.0)], [0.3], ["chair"], viewpoint=[-3.0, 0.0, 1.0]))
    for i in (1, 2, 3):
        memory.update(_frame(i, [_box(0.6, 0, 0.5, 0.5, 0.5, 1.0)], [0.9], ["chair"], viewpoint=[0.6, 3.0, 1.0]))
    assert len(memory) == 2 and _front(memory.get(0).box)[0] < -0.99  # object 0 faces west
    # A wide detection (no viewpoint) grows object 0 into object 1, which is merged into it.
    result = memory.update(_frame(4, [_box(0.2, 0, 0.5, 1.0, 0.5, 1.0)], [0.9], ["chair"]))
    assert result.merged == ((1, 0),)
    assert _front(memory.get(0).box)[1] > 0.95  # object 1's sightings from the north now dominate


def test_config_and_validation():
    memory = SceneMemory.from_config(MemoryConfig(iou_threshold=0.25, class_agnostic=False))
    assert memory.config.iou_threshold == 0.25 and not memory.config.class_agnostic
    with pytest.raises(ConfigError):
        SceneMemory(score_threshold=1.5)
    with pytest.raises(ConfigError):
        SceneMemory(score_mode="median")
    memory.update(_frame(0, [_box()], [0.5], ["cup"]))
    with pytest.raises(FrameError):
        memory.update(_frame(1, [_box()], [0.5], ["cup"], frame_id="map"))
    bad = _box(dx=-1.0)
    result = memory.update(_frame(2, [bad, _box(np.nan)], [0.5, 0.5], ["cup", "cup"]))
    assert result.n_invalid == 2 and len(memory) == 1


def test_spatial_index_matches_brute_force():
    rng = np.random.default_rng(11)
    for trial in range(4):
        objects = _random_boxes(rng, 300, extent=5.0, general=trial % 2 == 0)
        objects[:5, 3:6] *= 8.0  # a few huge boxes exercise the index's list of large objects
        index = SpatialHashGrid(cell_size=1.0)
        for i, box in enumerate(objects):
            index.insert(i, box)
        moved = rng.choice(300, 40, replace=False)  # updates and removals keep the index exact
        objects[moved, 0:3] += rng.normal(0, 1.0, (40, 3))
        for i in moved:
            index.update(int(i), objects[i])
        removed = set(rng.choice(300, 30, replace=False).tolist())
        for i in removed:
            index.remove(i)
        alive = np.array(sorted(set(range(300)) - removed))
        queries = _random_boxes(rng, 60, extent=5.0, general=True)
        iou = box_iou_3d(queries, objects[alive])
        for q in range(len(queries)):
            found = set(index.query(queries[q]).tolist())
            overlapping = set(alive[iou[q] > 0].tolist())
            assert overlapping <= found  # never misses an overlap
            assert found <= set(alive.tolist())


def test_memory_with_index_equals_memory_without():
    """Cells far larger than the scene make the index a brute-force scan: results must not change."""
    rng = np.random.default_rng(13)
    indexed, brute = SceneMemory(cell_size=0.7), SceneMemory(cell_size=1000.0)
    for i in range(40):
        frame = _frame(i, _random_boxes(rng, 6, extent=4.0, general=bool(i % 2)), rng.uniform(0.1, 1.0, 6),
                       list(rng.choice(VOCAB, 6)))
        assert indexed.update(frame) == brute.update(frame)
    assert indexed.objects() == brute.objects()
    assert len(indexed) > 20
    # No two objects overlap above the threshold: duplicates were merged.
    boxes = indexed.snapshot().boxes
    pair = box_iou_3d(boxes, boxes)
    np.fill_diagonal(pair, 0.0)
    assert pair.max() <= 0.15
