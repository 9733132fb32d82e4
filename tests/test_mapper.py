"""SceneMapper: the per-frame step and the map's files, on a generated scene with the oracle perceptor."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("open3d", reason="rendering needs open3d (pip install open3d; apt libusb-1.0-0)")

from embodied_ros.errors import InputError  # noqa: E402
from embodied_ros.mapper import MEMORY_FILE, OCCUPANCY_FILE, PipelineConfig, SceneMapper  # noqa: E402
from embodied_ros.memory.config import MemoryConfig  # noqa: E402
from embodied_ros.synthetic import GroundTruthPerceptor, SceneConfig, SyntheticSource, TrajectoryConfig  # noqa: E402

CONFIG = SceneConfig(width=128, height=128, trajectory=TrajectoryConfig(n_frames=4))


@pytest.fixture(scope="module")
def mapped() -> tuple[SceneMapper, list]:
    source = SyntheticSource(seed=5, config=CONFIG)
    mapper = SceneMapper(PipelineConfig(memory=MemoryConfig(min_observations=1)),
                         GroundTruthPerceptor(source.scene, min_pixels=20))
    seen: list[tuple[int, int]] = []  # (objects, occupied voxels) when before_occupancy is called
    frames = list(source.frames())
    for frame in frames:
        step = mapper.step(frame, before_occupancy=lambda _: seen.append(
            (len(mapper.memory), len(mapper.occupancy.occupied_voxels()))))
        assert {"memory", "occupancy"} <= set(step.stages_s) and step.update.created is not None
    return mapper, [frames, seen]


def test_a_step_fills_the_memory_and_the_occupancy_map(mapped) -> None:
    mapper, (frames, seen) = mapped
    assert len(mapper.memory) >= 3 and len(mapper.occupancy.occupied_voxels()) > 100
    assert mapper.frames_processed == len(frames) and mapper.last_frame is frames[-1]
    assert len(mapper.snapshot()) == len(mapper.memory)


def test_objects_are_in_the_memory_before_the_occupancy_fusion_starts(mapped) -> None:
    _, (_, seen) = mapped
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
