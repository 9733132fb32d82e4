"""What the occupancy map hands out: its occupied voxels, values at points, one integration's counts, its size."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNLABELLED_CLASS = "occupied"
"""Name of the extra class ``labels_grid`` gives occupied voxels that have no class vote."""


@dataclass(frozen=True, eq=False)
class OccupiedVoxels:
    """Occupied voxels, for publishing.

    Attributes:
        centers: (K, 3) float64 voxel centres, world frame, metres.
        labels: (K,) int16 index into ``vocabulary``; -1 where no class voted.
        vocabulary: class names of the map.
        log_odds: (K,) float32 clamped log-odds (> the occupied threshold).
        voxel_size: voxel edge, metres.
    """

    centers: np.ndarray
    labels: np.ndarray
    vocabulary: tuple[str, ...]
    log_odds: np.ndarray
    voxel_size: float

    def __len__(self) -> int:
        return len(self.centers)

    @property
    def probability(self) -> np.ndarray:
        """(K,) float64 occupancy probability in [0, 1]."""
        return 1.0 / (1.0 + np.exp(-self.log_odds.astype(np.float64)))

    @property
    def class_names(self) -> tuple[str, ...]:
        """Per voxel, its class name, or "" where no class voted."""
        names = self.vocabulary + ("",)
        return tuple(names[i] for i in self.labels.tolist())


@dataclass(frozen=True, eq=False)
class VoxelSample:
    """Map values at query points.

    Attributes:
        log_odds: (N,) float32; 0.0 where never observed.
        observed: (N,) bool, True where the voxel was ever updated.
        labels: (N,) int16 class index into the map's vocabulary; -1 for none.
        surface: (N,) uint64 mask of the voxel's sub-cells that depth hits went through; 0 for none.
    """

    log_odds: np.ndarray
    observed: np.ndarray
    labels: np.ndarray
    surface: np.ndarray


@dataclass(frozen=True)
class IntegrationResult:
    """What one integration did: rays cast, voxels given a hit, voxels given a miss."""

    n_rays: int
    n_hit: int
    n_free: int


@dataclass(frozen=True)
class OccupancyStats:
    """Size of the map: blocks and voxels held, observed, occupied, free, labelled; frames; bytes."""

    n_blocks: int
    n_allocated: int
    n_observed: int
    n_occupied: int
    n_free: int
    n_labelled: int
    n_frames: int
    n_evicted_blocks: int
    nbytes: int
