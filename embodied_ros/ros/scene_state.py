"""The node's scene: perceptor -> memory + occupancy per keyframe, and the map files behind save/load/reset.

ROS-free (the node converts and publishes what :meth:`SceneState.messages` builds), so the same
code path runs in the tests and the benchmark. A lock serialises updates against reset/load;
readers use ``memory.snapshot()``, which never waits for an update to finish.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..frame import Frame
from ..memory.config import MemoryConfig, OccupancyConfig
from ..memory.occupancy import OccupancyMap
from ..memory.scene_memory import SceneMemory
from ..network.perceptor import Perceptor
from ..outputs.scene_messages import detection3d_array, marker_array, occupancy_cloud, scene_object_array

MEMORY_FILE = "memory.json"  # SceneMemory.save, the same file `embodied-ros run` writes
OCCUPANCY_FILE = "occupancy.npz"  # OccupancyMap.save
DEFAULT_MAP_DIR = Path("~/.embodied_ros/map")


@dataclass(frozen=True)
class SceneMessages:
    """One keyframe's outputs as rosbags dataclasses (None: not built)."""

    markers: Any
    objects: Any
    detections: Any
    occupancy: Any


class SceneState:
    """Memory, occupancy and the perceptor behind the node.

    Args:
        perceptor: the network (+ lifting).
        memory_config, occupancy_config: parameters of a fresh memory and map.
    """

    def __init__(self, perceptor: Perceptor, memory_config: MemoryConfig, occupancy_config: OccupancyConfig) -> None:
        self.perceptor = perceptor
        self._memory_config = memory_config
        self._occupancy_config = occupancy_config
        self.memory = SceneMemory.from_config(memory_config)
        self.occupancy = OccupancyMap.from_config(occupancy_config)
        self.lock = threading.Lock()
        self.frames_processed = 0
        self.last_frame: Frame | None = None  # the latest keyframe: viewer-centred words are meant from its camera

    def process(self, frame: Frame) -> dict[str, float]:
        """Run one keyframe through the network, the memory and the occupancy map; per-stage seconds."""
        perception = self.perceptor.perceive(frame)
        stages = {k: float(v) for k, v in perception.timings_s.items()}
        with self.lock:
            t0 = time.perf_counter()
            self.memory.update(perception)
            t1 = time.perf_counter()
            self.occupancy.integrate_frame(frame, perception)
            t2 = time.perf_counter()
            self.frames_processed += 1
            self.last_frame = frame
        stages.update(memory=t1 - t0, occupancy=t2 - t1)
        return stages

    def messages(self, frame_id: str, stamp_ns: int, detections: bool) -> SceneMessages:
        """The scene as messages stamped ``stamp_ns`` (the keyframe's image stamp)."""
        objects = self.memory.published_objects()
        voxels = self.occupancy.occupied_voxels()
        return SceneMessages(
            markers=marker_array(objects, voxels, frame_id, stamp_ns),
            objects=scene_object_array(objects, frame_id, stamp_ns),
            detections=detection3d_array(objects, frame_id, stamp_ns) if detections else None,
            occupancy=occupancy_cloud(voxels, frame_id, stamp_ns),
        )

    def reset(self) -> str:
        with self.lock:
            n = len(self.memory)
            self.memory.reset()
            self.occupancy.reset()
        return f"scene memory cleared ({n} objects forgotten)"

    def save(self, directory: Path) -> str:
        """Write memory.json and occupancy.npz into ``directory`` (created); returns what was written."""
        directory = directory.expanduser()
        directory.mkdir(parents=True, exist_ok=True)
        with self.lock:
            self.memory.save(directory / MEMORY_FILE)
            self.occupancy.save(directory / OCCUPANCY_FILE)
            n, v = len(self.memory), len(self.occupancy.occupied_voxels())
        return f"saved {n} objects and {v} occupied voxels to {directory}"

    def load(self, directory: Path) -> str:
        """Replace memory and occupancy by those saved in ``directory`` (InputError when unreadable)."""
        directory = directory.expanduser()
        if not (directory / MEMORY_FILE).is_file():
            raise InputError(f"{directory}: no {MEMORY_FILE} there (save a map first)")
        memory = SceneMemory.load(directory / MEMORY_FILE)
        occ_path = directory / OCCUPANCY_FILE
        occupancy = OccupancyMap.load(occ_path) if occ_path.is_file() else OccupancyMap.from_config(
            self._occupancy_config)
        with self.lock:
            self.memory, self.occupancy = memory, occupancy
        return (f"loaded {len(memory)} objects and {len(occupancy.occupied_voxels())} occupied voxels "
                f"from {directory}")
