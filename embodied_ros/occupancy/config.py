"""Configuration of the world occupancy map (occupancy/voxel_map.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class OccupancyConfig:
    """Parameters of :class:`embodied_ros.occupancy.voxel_map.OccupancyMap`.

    Log-odds values are natural-log odds: 0.85 is p = 0.70 for one hit, -0.4 is p = 0.40 for one
    miss (OctoMap's defaults); a clamp of 3.5 is p = 0.97 and -2.0 is p = 0.12, so a voxel can
    change state after a few contrary observations instead of staying saturated forever.
    """

    # Voxel edge in metres (the Embodied Perceptron's occupancy grid uses 0.16 m).
    voxel_size: float = 0.16
    # Log-odds added to a voxel for each frame in which a ray ends in it (or the network says occupied).
    log_odds_hit: float = 0.85
    # Log-odds added to a voxel for each frame in which a ray passes through it (or the network says empty).
    log_odds_miss: float = -0.4
    # Lower clamp of a voxel's log-odds.
    log_odds_min: float = -2.0
    # Upper clamp of a voxel's log-odds.
    log_odds_max: float = 3.5
    # A voxel is occupied when its log-odds is strictly above this. 0.8 (probability 0.69): one hit
    # alone is enough (0.85), one hit and one miss (0.45) is not, so a guess of the network's that a
    # ray later passed through no longer stands. World map mIoU on whole keyframe grids 0.411 -> 0.429
    # against 0.0 (probability 0.5, OctoMap's), seeds 10028..10043; 1.0 gave 0.419.
    occupied_threshold: float = 0.8
    # Default depth (camera z, metres) beyond which a pixel gives no hit; its ray is carved up to here.
    max_range: float = 4.0
    # Default pixel stride of integrate_depth in both image axes (4 on 640x480 = 19,200 rays).
    pixel_stride: int = 4
    # Free space needs fewer rays than surfaces: only every k-th of those rays (in both image axes)
    # is carved, k the largest whose rays at max_range lie at most this fraction of a voxel apart
    # (0.5: k = 2 for 0.16 m voxels, 4 m and f = 525-585 px, a quarter of the samples). Every ray
    # still gives its hit. 0 carves every ray. Depth integration 10.7 -> 6.4 ms of CPU per walk frame;
    # over the 1000-frame redkitchen walk 1710 occupied voxels against 1691 (all of those among
    # them), 3238 free against 3317 (docs/performance.md).
    carve_spacing: float = 0.5
    # Bound on the voxels held in memory (allocated in blocks of 8x8x8); when exceeded, the blocks
    # farthest from the latest camera position are evicted.
    max_voxels: int = 2_000_000
    # Class-vote weight of one occupied voxel of a network's local grid (detections vote with their score).
    grid_class_weight: float = 1.0
    # Take a network's local grid as evidence only on the voxels in the camera's view frustum;
    # the rest of the grid (most of it: the grid is centred on the camera) is the network's guess.
    grid_in_view_only: bool = True
    # Let detections vote for their class on the occupied voxels in their boxes also when the
    # perceptor gives an occupancy grid. Off: they vote only when it gives none (a lifted 2D
    # detector); the network's grid labels voxels better than its boxes do (world-map mIoU in
    # view 0.46 without the votes vs 0.40 with them, shipped weights, seeds 10004..10007).
    detection_votes_with_grid: bool = False
    # Class-vote weight, per voxel and frame, of a pixel head's classes (FramePerception.pixel_labels)
    # at the depth points of their pixels; 0 turns the votes off. Small objects get a handful of a
    # frame's pixels but a fraction of a grid voxel (world map mIoU on whole grids 0.336 -> 0.360,
    # seeds 10004..10005; weight 3 gave 0.351).
    pixel_class_weight: float = 1.0
    # Depth hits also mark which of n x n x n sub-cells of their voxel they fell in (n <= 4: one
    # 64-bit mask per voxel). labels_grid then voxelises these surface points into the query grid,
    # the way ground truth is made from surface samples, instead of reading the one map voxel under
    # each query voxel's centre: a grid turned against the map's lattice no longer thickens or
    # misses thin surfaces. 1 turns it off; 2 keeps 8 sub-cells. Costs 8 bytes per voxel. World map
    # mIoU on whole keyframe grids, seeds 10004..10011: 0.393 (off) -> 0.411 (2) -> 0.423 (4).
    surface_subdivision: int = 4
    # Anchor the voxel lattice at the corner of the first network grid fused, so every later grid
    # at the same floor height shares the map's horizontal layers (the perceptron's grids start
    # 0.78 m below the floor; a lattice at the world origin cuts them 2 cm apart). Off: the lattice
    # starts at the world origin. World map mIoU on whole keyframe grids 0.381 -> 0.393, in view
    # 0.462 -> 0.482 (seeds 10004..10011, without surface sub-cells).
    align_to_grid: bool = True
    # Optional axis-aligned world region (xmin, ymin, zmin, xmax, ymax, zmax), metres; voxels whose
    # centre lies outside are never stored. None = unbounded.
    bounds: tuple[float, float, float, float, float, float] | None = None

    def __post_init__(self) -> None:
        _check(self.voxel_size > 0.0, "voxel_size must be positive (metres)", self.voxel_size)
        _check(self.log_odds_hit > 0.0, "log_odds_hit must be positive", self.log_odds_hit)
        _check(self.log_odds_miss < 0.0, "log_odds_miss must be negative", self.log_odds_miss)
        _check(self.log_odds_min < self.occupied_threshold < self.log_odds_max,
               "need log_odds_min < occupied_threshold < log_odds_max", self.occupied_threshold)
        _check(self.max_range > 0.0, "max_range must be positive (metres)", self.max_range)
        _check(self.pixel_stride >= 1, "pixel_stride must be at least 1", self.pixel_stride)
        _check(self.carve_spacing >= 0.0, "carve_spacing must be >= 0 (a fraction of a voxel)", self.carve_spacing)
        _check(self.max_voxels >= 512, "max_voxels must hold at least one 8x8x8 block (512)", self.max_voxels)
        _check(self.grid_class_weight > 0.0, "grid_class_weight must be positive", self.grid_class_weight)
        _check(self.pixel_class_weight >= 0.0, "pixel_class_weight must be >= 0", self.pixel_class_weight)
        _check(1 <= self.surface_subdivision <= 4, "surface_subdivision must be 1..4 (sub-cells per voxel edge)",
               self.surface_subdivision)
        if self.bounds is not None:
            b = tuple(float(v) for v in self.bounds)
            _check(len(b) == 6 and all(math.isfinite(v) for v in b) and all(b[i] < b[i + 3] for i in range(3)),
                   "bounds must be (xmin, ymin, zmin, xmax, ymax, zmax) with min < max", self.bounds)
            object.__setattr__(self, "bounds", b)


def _check(ok: bool, message: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"{message}, got {value!r}")
