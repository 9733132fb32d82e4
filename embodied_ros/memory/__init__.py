"""Scene memory: objects accumulated across frames, and the world occupancy map."""

from .config import MemoryConfig, OccupancyConfig, ScoreMode
from .occupancy import OccupancyMap, OccupiedVoxels
from .scene_memory import SceneMemory
from .scene_object import MemorySnapshot, SceneObject, UpdateResult

__all__ = [
    "MemoryConfig", "OccupancyConfig", "ScoreMode", "OccupancyMap", "OccupiedVoxels", "SceneMemory",
    "MemorySnapshot", "SceneObject", "UpdateResult",
]
