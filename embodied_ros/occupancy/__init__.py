"""The world occupancy map: log-odds voxels fused from depth rays and networks' local grids, with class votes."""

from .config import OccupancyConfig
from .results import OccupiedVoxels
from .voxel_map import OccupancyMap

__all__ = ["OccupancyConfig", "OccupancyMap", "OccupiedVoxels"]
