"""The node's scene: perceptor -> memory + occupancy per keyframe, and the map files behind save/load/reset.

ROS-free (the node publishes what the memory and occupancy hold), so the same code path runs in
the tests and the benchmark. The perceptor may arrive after the node is up (it loads on a thread
while services already answer). A lock serialises updates against reset/load; readers use
``memory.snapshot()``, which never waits for an update to finish.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ..detections import FramePerception
from ..errors import InputError
from ..frame import Frame
from ..memory.config import MemoryConfig, OccupancyConfig
from ..memory.occupancy import OccupancyMap
from ..memory.scene_memory import SceneMemory
from ..network.perceptor import Perceptor
from .map_store import recover, save_atomically

MEMORY_FILE = "memory.json"  # SceneMemory.save, the same file `embodied-ros run` writes
OCCUPANCY_FILE = "occupancy.npz"  # OccupancyMap.save


class SceneState:
    """Memory, occupancy and the perceptor behind the node.

    Args:
        perceptor: the network (+ lifting); None until it is loaded.
        memory_config, occupancy_config: parameters of a fresh memory and map.
    """

    def __init__(self, perceptor: Perceptor | None, memory_config: MemoryConfig,
                 occupancy_config: OccupancyConfig) -> None:
        self.perceptor = perceptor
        self._memory_config = memory_config
        self._occupancy_config = occupancy_config
        self.memory = SceneMemory.from_config(memory_config)
        self.occupancy = OccupancyMap.from_config(occupancy_config)
        self.lock = threading.Lock()
        self.frames_processed = 0
        self.last_frame: Frame | None = None  # the latest keyframe: viewer-centred words are meant from its camera

    def remember(self, frame: Frame) -> tuple[FramePerception, dict[str, float]]:
        """Run one keyframe through the network and the scene memory; (perception, per-stage seconds)."""
        if self.perceptor is None:
            raise RuntimeError("the network is not loaded yet")
        perception = self.perceptor.perceive(frame)
        stages = {k: float(v) for k, v in perception.timings_s.items()}
        with self.lock:
            start = time.perf_counter()
            self.memory.update(perception)
            self.frames_processed += 1
            self.last_frame = frame  # the latest keyframe: viewer-centred words are meant from its camera
        stages["memory"] = time.perf_counter() - start
        return perception, stages

    def integrate(self, frame: Frame, perception: FramePerception) -> float:
        """Fuse the keyframe into the occupancy map (after its objects are out); seconds taken."""
        with self.lock:
            start = time.perf_counter()
            self.occupancy.integrate_frame(frame, perception)
            return time.perf_counter() - start

    def integrate_depth(self, frame: Frame) -> float:
        """Fuse a frame the network skipped into the occupancy map, its depth only; seconds taken."""
        with self.lock:
            start = time.perf_counter()
            self.occupancy.integrate_depth(frame)
            return time.perf_counter() - start

    def process(self, frame: Frame) -> dict[str, float]:
        """Network, memory and occupancy map for one keyframe; per-stage seconds."""
        perception, stages = self.remember(frame)
        stages["occupancy"] = self.integrate(frame, perception)
        return stages

    def reset(self) -> str:
        with self.lock:
            n = len(self.memory)
            self.memory.reset()
            self.occupancy.reset()
        return f"scene memory cleared ({n} objects forgotten)"

    def save(self, directory: Path) -> str:
        """Write memory.json and occupancy.npz as the folder ``directory``, atomically; returns what was written."""
        with self.lock:
            n, v = len(self.memory), len(self.occupancy.occupied_voxels())

            def write(tmp: Path) -> None:
                self.memory.save(tmp / MEMORY_FILE)
                self.occupancy.save(tmp / OCCUPANCY_FILE)

            save_atomically(directory, write)
        return f"saved {n} objects and {v} occupied voxels to {directory}"

    def load(self, directory: Path) -> str:
        """Replace memory and occupancy by those saved in ``directory`` (InputError when unreadable)."""
        recover(directory)
        if not (directory / MEMORY_FILE).is_file():
            raise InputError(f"no saved map {directory.name!r} in {directory.parent} (save one first)")
        memory = SceneMemory.load(directory / MEMORY_FILE)
        occ_path = directory / OCCUPANCY_FILE
        occupancy = OccupancyMap.load(occ_path) if occ_path.is_file() else OccupancyMap.from_config(
            self._occupancy_config)
        with self.lock:
            self.memory, self.occupancy = memory, occupancy
        return (f"loaded {len(memory)} objects and {len(occupancy.occupied_voxels())} occupied voxels "
                f"from {directory}")
