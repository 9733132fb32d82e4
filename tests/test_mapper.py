"""SceneMapper: the per-frame step and the map's files, on a generated scene with the oracle perceptor."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("open3d", reason="rendering needs open3d (pip install open3d; apt libusb-1.0-0)")

from conftest import DATA, DETECTOR, KITCHEN  # noqa: E402

from embodied_ros.errors import InputError  # noqa: E402
from embodied_ros.mapper import MEMORY_FILE, OCCUPANCY_FILE, PipelineConfig, SceneMapper, StepResult  # noqa: E402
from embodied_ros.memory.config import MemoryConfig  # noqa: E402
from embodied_ros.memory.scene_object import UpdateResult  # noqa: E402
from embodied_ros.network.weights import DEFAULT_MODEL  # noqa: E402
from embodied_ros.synthetic import GroundTruthPerceptor, SceneConfig, SyntheticSource, TrajectoryConfig  # noqa: E402

CONFIG = SceneConfig(width=128, height=128, trajectory=TrajectoryConfig(n_frames=4))


@pytest.fixture(scope="module")
def mapped() -> tuple[SceneMapper, list]:
    source = SyntheticSource(seed=5, config=CONFIG)
    mapper = SceneMapper(PipelineConfig(memory=MemoryConfig(min_observations=1)),
                         GroundTruthPerceptor(source.scene, min_pixels=20))
    seen: list[tuple[int, int]] = []  # (objects, occupied voxels) when before_occupancy is called
    frames = list(source.frames())
    steps = [mapper.step(frame, before_occupancy=lambda _: seen.append(
        (len(mapper.memory), len(mapper.occupancy.occupied_voxels())))) for frame in frames]
    return mapper, [frames, seen, steps]


def test_a_step_splits_the_memory_time_into_its_parts(mapped) -> None:
    """The offline run reports the memory's association apart from discovery and structure: the split adds up."""
    *_, steps = mapped[1]
    step = steps[-1]
    timed = StepResult(step.perception, UpdateResult(discovery_s=0.02, structure_s=0.01),
                       {"network": 0.04, "memory": 0.05, "occupancy": 0.03})
    for s in (*steps, timed):
        split, u = s.stage_split_s(), s.update
        assert list(split) == ["network", "lifting", "memory", "discovery", "structure", "occupancy"]
        ahead = u.discovery_ahead_s  # discovery done alongside the network, outside the memory's own time
        assert split["memory"] + split["discovery"] - ahead + split["structure"] == pytest.approx(s.stages_s["memory"])
        assert (split["discovery"], split["structure"]) == (u.discovery_s, u.structure_s)
        assert split["occupancy"] == s.stages_s["occupancy"] and split["memory"] >= 0
    assert timed.stage_split_s() == pytest.approx({"network": 0.04, "lifting": 0.0, "memory": 0.02, "discovery": 0.02,
                                                   "structure": 0.01, "occupancy": 0.03})


@pytest.fixture(scope="module")
def kitchen() -> tuple[list, object]:
    """Eight real kitchen frames (every 12th) and the default detector."""
    if not (KITCHEN.is_dir() and DETECTOR.is_dir()):
        pytest.skip(f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.recordings import open_source

    frames = list(open_source(KITCHEN).frames(stride=12))
    return frames, build_perceptor(DEFAULT_MODEL, weights=DETECTOR, backend="onnxruntime")


def test_discovery_alongside_the_network_gives_the_map_of_one_after_the_other(kitchen) -> None:
    """Discovery needs the frame alone: run on its own thread while the network looks at the frame (the default), the
    memory is the one of every stage in turn."""
    frames, perceptor = kitchen
    maps, steps = [], []
    for alongside in (False, True):
        mapper = SceneMapper(PipelineConfig(), perceptor, discover_alongside=alongside)
        steps.append([mapper.step(frame) for frame in frames])
        maps.append(json.dumps(mapper.memory.to_dict(), sort_keys=True, default=str))
    assert maps[0] == maps[1] and sum(o["class_name"] == "object" for o in json.loads(maps[1])["objects"]) > 0
    assert all(s.update.discovery_ahead_s == 0 for s in steps[0])
    ahead = [s.update.discovery_ahead_s for s in steps[1]]
    assert all(a > 0 for a in ahead) and all(a <= s.update.discovery_s for a, s in zip(ahead, steps[1], strict=True))


def test_a_frame_prepared_but_never_stepped_leaves_the_next_frame_its_own_discovery(kitchen) -> None:
    """A frame whose discovery was done ahead and which was then skipped (its detections never came): the next
    frame's step does its own discovery, never the skipped frame's."""
    frames, perceptor = kitchen
    mapper = SceneMapper(PipelineConfig(), perceptor, discover_alongside=False)
    assert mapper.prepare(frames[0]).result(10)
    assert mapper.memory.prepared(frames[0]) and not mapper.memory.prepared(frames[1])
    step = mapper.step(frames[1])
    assert step.update.discovery_ahead_s == 0 and step.update.discovery_looked
    mapper.prepare(frames[2])  # under way on discovery's thread while the step's network runs
    assert mapper.step(frames[2]).update.discovery_ahead_s > 0


def test_a_perceptor_without_frames_gets_no_discovery_ahead(mapped) -> None:
    """The synthetic oracle's perceptions carry no frame, so the memory never looks at their depth: nothing is done
    ahead for them either (the floor would move)."""
    mapper, (_, _, steps) = mapped
    assert mapper.discover_alongside and mapper.memory.floor_z is None
    assert all(s.update.discovery_ahead_s == 0 and not s.update.discovery_looked for s in steps)


def test_the_published_scene_is_what_the_memory_and_the_map_publish(mapped) -> None:
    mapper, (_, _, steps) = mapped
    scene = mapper.published_scene()
    assert [o.id for o in scene.objects] == [o.id for o in mapper.memory.published_objects()] and scene.objects
    assert [o.id for o in scene.structure] == [o.id for o in mapper.memory.published_structure()]
    assert len(scene.voxels) == len(mapper.occupancy.occupied_voxels()) > 100
    seen = mapper.seen_in(steps[-1].update)
    assert {i for i, *_ in seen} == set(steps[-1].update.created) | set(steps[-1].update.updated)
    for i, box, points in seen:
        assert np.array_equal(box, mapper.memory.get(i).box) and points.ndim == 2 and points.shape[1] == 3


def test_a_step_fills_the_memory_and_the_occupancy_map(mapped) -> None:
    mapper, (frames, *_) = mapped
    assert len(mapper.memory) >= 3 and len(mapper.occupancy.occupied_voxels()) > 100
    assert mapper.frames_processed == len(frames) and mapper.last_frame is frames[-1]
    assert len(mapper.snapshot()) == len(mapper.memory)


def test_objects_are_in_the_memory_before_the_occupancy_fusion_starts(mapped) -> None:
    _, (_, seen, _) = mapped
    objects, voxels = seen[0]
    assert objects > 0 and voxels == 0  # the first frame: objects already in, depth not fused yet


def test_save_and_load_round_trip_and_reset(mapped, tmp_path) -> None:
    mapper, _ = mapped
    message = mapper.save(tmp_path / "kitchen")
    assert (tmp_path / "kitchen" / MEMORY_FILE).is_file() and (tmp_path / "kitchen" / OCCUPANCY_FILE).is_file()
    assert f"saved {len(mapper.memory)} objects" in message
    other = SceneMapper(mapper.config)
    other.load(tmp_path / "kitchen")
    assert other.memory.objects() == mapper.memory.objects()
    assert np.array_equal(other.occupancy.occupied_voxels().centers, mapper.occupancy.occupied_voxels().centers)
    with pytest.raises(InputError):
        other.load(tmp_path / "absent")
    assert "forgotten" in other.reset() and len(other.memory) == 0 and len(other.occupancy.occupied_voxels()) == 0
