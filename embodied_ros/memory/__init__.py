"""Scene memory: objects accumulated across frames (the world occupancy map is occupancy/)."""

from .config import MemoryConfig, ScoreMode
from .scene_memory import SceneMemory
from .scene_object import MemorySnapshot, SceneObject, UpdateResult

__all__ = [
    "MemoryConfig", "ScoreMode", "SceneMemory", "MemorySnapshot", "SceneObject", "UpdateResult",
]
