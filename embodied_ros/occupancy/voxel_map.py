"""The world occupancy map: log-odds voxels fused from depth rays and networks' local grids, with class votes.

Each voxel holds a clamped log-odds of being occupied (see OccupancyConfig for the numbers), a
flag saying it was ever observed, and a class vote. Per frame, every voxel gets at most one
update: a hit where a depth ray ends (or the network says occupied), else a miss where a ray
passes (or the network says empty). Free space is carved by sampling each ray every half voxel
from the camera up to one voxel short of its endpoint, so a surface is not erased by rays that
graze it. Pixels deeper than ``max_range`` give no hit; their rays are carved up to
``max_range``.

Class votes use a weighted majority vote per voxel (class_votes.py: one label and one weight,
the Boyer-Moore scheme).

Depth hits also set a bit in their voxel's surface mask: which of its n x n x n sub-cells the
surface passed through (surface_cells.py). ``labels_grid`` voxelises those sub-cells into the caller's grid, so a
grid turned against the map's lattice gets the surfaces where they are, not where the map voxel
under its centre says. The lattice itself is anchored at the first network grid fused, so
grids at the same floor height share its horizontal layers.

Storage and eviction are in voxel_blocks.py (bounded by ``max_voxels``; farthest blocks from
the latest camera position go first).
"""

from __future__ import annotations

import json
import os
import threading
import zipfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..detections import Detections3D, FramePerception, LocalOccupancy
from ..errors import ConfigError, FrameError, InputError
from ..frame import Frame
from ..geometry.boxes import box_corners, points_in_boxes
from ..geometry.columns import rows_all
from ..geometry.grid import GridSpec, voxels_in_view
from .class_votes import vote
from .config import OccupancyConfig
from .raycast import backproject, linearise, trace_rays, transform_per_axis, unlinearise
from .results import UNLABELLED_CLASS, IntegrationResult, OccupancyStats, OccupiedVoxels, VoxelSample
from .surface_cells import mark_surface, surface_labels
from .voxel_blocks import MAX_VOXEL_COORD, VoxelBlocks


class OccupancyMap:
    """A world voxel map of occupancy log-odds and class votes; thread-safe.

    Args:
        config: the parameters (default: ``OccupancyConfig()``, the one place their defaults live).
        **overrides: fields of :class:`OccupancyConfig` to change, by name
            (``OccupancyMap(voxel_size=0.08)``); an unknown name is a TypeError.

    Raises:
        ConfigError: if a parameter cannot work.
    """

    def __init__(self, config: OccupancyConfig | None = None, **overrides: Any) -> None:
        self.config = replace(config if config is not None else OccupancyConfig(), **overrides)
        self.voxel_size = self.config.voxel_size
        self._lock = threading.RLock()
        self._blocks = VoxelBlocks(self.config.max_voxels, {
            "log_odds": (np.float32, 0.0), "observed": (np.bool_, False),
            "label": (np.int16, -1), "label_weight": (np.float32, 0.0), "surface": (np.uint64, 0),
        })
        self._origin = np.zeros(3)  # world position of voxel (0, 0, 0)'s corner
        self._vocabulary: list[str] = []
        self._class_of: dict[str, int] = {}
        self._n_frames = 0

    @classmethod
    def from_config(cls, config: OccupancyConfig) -> OccupancyMap:
        """A map with the parameters of ``config``."""
        return cls(config)

    @property
    def origin(self) -> np.ndarray:
        """(3,) world position of the voxel lattice's origin (a voxel corner), metres."""
        return self._origin.copy()

    @property
    def class_names(self) -> tuple[str, ...]:
        """The map's vocabulary: every class name that ever voted, in order of arrival."""
        return tuple(self._vocabulary)

    def reset(self) -> None:
        """Forget every voxel and the vocabulary."""
        with self._lock:
            self._blocks.clear()
            self._origin = np.zeros(3)
            self._vocabulary.clear()
            self._class_of.clear()
            self._n_frames = 0

    # ------------------------------------------------------------------ integration

    def integrate_depth(self, frame: Frame, max_range: float | None = None,
                        pixel_stride: int | None = None) -> IntegrationResult:
        """Fuse one depth image: endpoint voxels get a hit, voxels along the rays a miss.

        Args:
            frame: posed RGB-D frame (depth in metres, pose camera-to-world).
            max_range: depth (camera z, metres) beyond which a pixel gives no hit; default from config.
            pixel_stride: use every n-th pixel in both axes; default from config.
        """
        max_range = self.config.max_range if max_range is None else float(max_range)
        stride = self.config.pixel_stride if pixel_stride is None else int(pixel_stride)
        if not max_range > 0 or stride < 1:
            raise ConfigError(f"max_range must be positive and pixel_stride >= 1, got {max_range}, {stride}")
        depth = frame.depth[::stride, ::stride]
        v, u = np.nonzero(np.isfinite(depth) & (depth > 0))
        z = depth[v, u].astype(np.float64)
        hit = z <= max_range
        z = np.minimum(z, max_range)
        # Rotation written out per axis: (R, 3) @ (3, 3) products go through BLAS, whose threads
        # cost more than the arithmetic at this size.
        cam = backproject(frame.K, u * float(stride), v * float(stride), z)  # camera-frame endpoint
        R_wc, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
        inv_vs = 1.0 / self.voxel_size
        origin = (t - self._origin) * inv_vs  # voxel units
        seg = np.stack([(R_wc[i, 0] * cam[0] + R_wc[i, 1] * cam[1] + R_wc[i, 2] * cam[2]) * inv_vs
                        for i in range(3)])  # (3, R) camera -> endpoint, voxel units, one row per axis
        k = max(1, int(self.config.carve_spacing * self.voxel_size * frame.K[0, 0] / (max_range * stride)))
        carve = None if k == 1 else (u % k == 0) & (v % k == 0)
        with self._lock:
            hit_vox, free_vox, rows = trace_rays(origin, seg, hit, carve, hit_rows=True)
            fh, ff = self._apply(hit_vox, free_vox, near=origin)
            # The hits' voxels are those just updated (bounds leave voxels of stored blocks out of
            # the update, whose surface bits a look-up would still set: then look them up).
            mark_surface(self._blocks, self.config.surface_subdivision, (origin[:, None] + seg[:, hit]).T,
                         fh[rows] if self.config.bounds is None else None)
            self._n_frames += 1
        return IntegrationResult(len(z), int(np.count_nonzero(fh >= 0)), int(np.count_nonzero(ff >= 0)))

    def integrate_frame(self, frame: Frame, perception: FramePerception) -> None:
        """One keyframe, as every caller fuses it: depth rays, the network's grid, detection evidence,
        pixel classes.

        With ``grid_in_view_only`` the grid counts only on the voxels in the frame's view frustum.
        Detections vote only when there is no grid, unless ``detection_votes_with_grid``. A pixel
        head's classes vote where their pixels' depth lands (``pixel_class_weight``; 0: never).
        """
        if perception.occupancy is not None:
            self._anchor(perception.occupancy.T_world_grid)
        self.integrate_depth(frame)
        occ = perception.occupancy
        if occ is not None:
            valid = None
            if self.config.grid_in_view_only:
                spec = GridSpec(shape=occ.labels.shape, voxel_size=occ.voxel_size)  # type: ignore[arg-type]
                valid = voxels_in_view(occ.T_world_grid, frame.T_world_camera, frame.K, frame.width, frame.height,
                                       spec)
            self.integrate_local_grid(occ, valid)
        if occ is None or self.config.detection_votes_with_grid:
            self.add_detection_evidence(perception.detections)
        if perception.pixel_labels is not None and self.config.pixel_class_weight > 0:
            self.add_pixel_votes(frame, perception.pixel_labels, perception.detections.class_names)

    def integrate_local_grid(self, occ: LocalOccupancy, valid: np.ndarray | None = None) -> IntegrationResult:
        """Fuse a network's local grid: label -1 -> miss; a class -> hit plus a class vote.

        A grid coarser than the map is split into the map's voxels first (a 0.16 m grid into a
        0.08 m map: each grid voxel becomes 2 x 2 x 2), so every map voxel it covers gets its label.

        Args:
            occ: the grid.
            valid: optional bool grid of its shape; only True voxels are fused.

        Raises:
            FrameError: if the grid is not 3-D, its pose not finite, a label outside its vocabulary
                or ``valid`` of another shape.
        """
        labels = np.asarray(occ.labels)
        T = np.asarray(occ.T_world_grid, dtype=np.float64)
        if labels.ndim != 3 or T.shape != (4, 4) or not np.all(np.isfinite(T)) or not occ.voxel_size > 0:
            raise FrameError(f"local occupancy grid must be 3-D with a finite 4x4 pose, got {labels.shape}")
        if valid is not None and np.shape(valid) != labels.shape:
            raise FrameError(f"valid mask {np.shape(valid)} differs from the grid {labels.shape}")
        self._anchor(T)
        split = max(1, int(round(occ.voxel_size / self.voxel_size)))
        voxel_size = occ.voxel_size / split
        if split > 1:
            for axis in range(3):
                labels = np.repeat(labels, split, axis=axis)
                valid = None if valid is None else np.repeat(valid, split, axis=axis)
        lab = labels.reshape(-1).astype(np.int64)
        if lab.size and (lab.min() < -1 or lab.max() >= len(occ.class_names)):
            raise FrameError("local occupancy grid has a label outside -1..len(class_names)-1")
        centres = GridSpec(shape=labels.shape, voxel_size=voxel_size).voxel_centres()  # type: ignore[arg-type]
        if valid is not None:
            keep = np.asarray(valid, dtype=bool)
            lab, centres = lab[keep.reshape(-1)], centres[keep.reshape(-1)]
        vox = np.floor(self._voxel_units(transform_per_axis(T, centres))).astype(np.int64)
        occupied = lab >= 0
        lin, lo, dims = linearise(vox)
        hit_lin = np.unique(lin[occupied])
        free_lin = np.setdiff1d(np.unique(lin[~occupied]), hit_lin, assume_unique=True)  # a hit wins
        centre = T[:3, :3] @ (0.5 * voxel_size * np.array(labels.shape, dtype=np.float64)) + T[:3, 3]
        with self._lock:
            fh, ff = self._apply(unlinearise(hit_lin, lo, dims), unlinearise(free_lin, lo, dims),
                                 near=self._voxel_units(centre))
            names = np.array([self._class_index(n) for n in occ.class_names] or [0], dtype=np.int64)
            at = np.searchsorted(hit_lin, lin[occupied])
            vote(self._blocks.data, len(self._vocabulary), fh[at], names[lab[occupied]],
                 np.full(at.size, self.config.grid_class_weight))
            self._n_frames += 1
        return IntegrationResult(0, int(np.count_nonzero(fh >= 0)), int(np.count_nonzero(ff >= 0)))

    def add_detection_evidence(self, detections: Detections3D) -> int:
        """Occupied voxels inside each world-frame detection box vote for its class (weight = score).

        Returns:
            Number of (voxel, detection) votes cast.
        """
        ranges, boxes = [], []
        for box, name, score in zip(detections.boxes, detections.names, detections.scores, strict=True):
            if not (np.all(np.isfinite(box)) and np.isfinite(score) and score > 0):
                continue
            corners = box_corners(box)[0]
            lo = np.floor(self._voxel_units(corners.min(axis=0))).astype(np.int64)
            hi = np.floor(self._voxel_units(corners.max(axis=0))).astype(np.int64)
            if np.any(lo < -MAX_VOXEL_COORD) or np.any(hi >= MAX_VOXEL_COORD):
                continue
            ranges.append((lo, hi))
            boxes.append((box, name, float(score)))
        if not boxes:
            return 0
        with self._lock:
            d = self._blocks.data
            # Every box's stored voxels at once, then those occupied, then those inside it (box by box).
            flat, owner = self._blocks.voxels_in_ranges(np.array([r[0] for r in ranges]),
                                                        np.array([r[1] for r in ranges]))
            occupied = d["observed"][flat] & (d["log_odds"][flat] > self.config.occupied_threshold)
            flat, owner = flat[occupied], owner[occupied]
            centres = self._centres(self._blocks.voxel_coords(flat))
            starts = np.searchsorted(owner, np.arange(len(boxes) + 1))
            inside = np.zeros(len(flat), dtype=bool)
            for k, (box, _, _) in enumerate(boxes):
                at = slice(starts[k], starts[k + 1])
                inside[at] = points_in_boxes(centres[at], box[None])[0]
            flat, owner = flat[inside], owner[inside]
            if not len(flat):
                return 0
            classes = np.array([self._class_index(name) for _, name, _ in boxes])
            vote(self._blocks.data, len(self._vocabulary), flat, classes[owner],
                 np.array([score for _, _, score in boxes])[owner])
            return int(flat.size)

    def add_pixel_votes(self, frame: Frame, labels: np.ndarray, class_names: tuple[str, ...]) -> int:
        """Each labelled cell of a per-pixel class map votes for its class at its depth point's voxel.

        One vote of ``pixel_class_weight`` per (voxel, class) and call, on voxels the map already
        holds (depth integration made them). A cell reads the depth at its centre pixel.

        Args:
            frame: the posed RGB-D frame the labels describe.
            labels: (h, w) int16 class indices into ``class_names`` over the whole image; -1 = none.
            class_names: their vocabulary.

        Returns:
            Number of (voxel, class) votes cast.

        Raises:
            FrameError: labels not 2-D, or a label outside -1..len(class_names)-1.
        """
        labels = np.asarray(labels)
        if labels.ndim != 2 or (labels.size and (labels.min() < -1 or labels.max() >= len(class_names))):
            raise FrameError(f"pixel labels must be a 2-D map of -1..{len(class_names) - 1}, got shape {labels.shape}")
        rows, cols = np.nonzero(labels >= 0)
        h, w = labels.shape
        u = np.minimum(((cols + 0.5) * frame.width / w).astype(np.int64), frame.width - 1)
        v = np.minimum(((rows + 0.5) * frame.height / h).astype(np.int64), frame.height - 1)
        z = frame.depth[v, u].astype(np.float64)
        ok = np.isfinite(z) & (z > 0) & (z <= self.config.max_range)
        if not ok.any():
            return 0
        u, v, z, cls = u[ok], v[ok], z[ok], labels[rows[ok], cols[ok]].astype(np.int64)
        cam = np.stack(backproject(frame.K, u, v, z), axis=1)
        vox = np.floor(self._voxel_units(transform_per_axis(frame.T_world_camera, cam))).astype(np.int64)
        keys = np.unique(np.concatenate([vox, cls[:, None]], axis=1), axis=0)  # one vote per (voxel, class)
        keys = keys[np.all((keys[:, :3] >= -MAX_VOXEL_COORD) & (keys[:, :3] < MAX_VOXEL_COORD), axis=1)]
        with self._lock:
            flat = self._blocks.lookup(keys[:, :3], allocate=False)
            used, inverse = np.unique(keys[:, 3], return_inverse=True)
            index = np.array([self._class_index(class_names[c]) for c in used], dtype=np.int64)
            vote(self._blocks.data, len(self._vocabulary), flat, index[inverse.reshape(-1)],
                 np.full(len(flat), self.config.pixel_class_weight))
        return int(np.count_nonzero(flat >= 0))

    # ------------------------------------------------------------------ queries

    def occupied_voxels(self) -> OccupiedVoxels:
        """Every voxel whose log-odds is above the occupied threshold."""
        with self._lock:
            d = self._blocks.data
            flat = np.flatnonzero(d["observed"] & (d["log_odds"] > self.config.occupied_threshold))
            centres = self._centres(self._blocks.voxel_coords(flat))
            return OccupiedVoxels(centres, d["label"][flat].copy(), self.class_names, d["log_odds"][flat].copy(),
                                  self.voxel_size)

    def sample(self, points: np.ndarray) -> VoxelSample:
        """Map values at (N, 3) world points (metres); unknown voxels read log-odds 0, not observed, label -1."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        vox = np.floor(self._voxel_units(pts))
        ok = np.all(np.isfinite(vox) & (vox >= -MAX_VOXEL_COORD) & (vox < MAX_VOXEL_COORD), axis=1)
        n = len(pts)
        log_odds, observed, labels = np.zeros(n, np.float32), np.zeros(n, bool), np.full(n, -1, np.int16)
        surface = np.zeros(n, np.uint64)
        with self._lock:
            flat = np.full(n, -1, dtype=np.int64)
            flat[ok] = self._blocks.lookup(vox[ok].astype(np.int64))
            have = flat >= 0
            d = self._blocks.data
            log_odds[have], observed[have], labels[have] = d["log_odds"][flat[have]], d["observed"][flat[have]], \
                d["label"][flat[have]]
            surface[have] = d["surface"][flat[have]]
        return VoxelSample(log_odds, observed, labels, surface)

    def labels_grid(self, T_world_grid: np.ndarray, shape: tuple[int, int, int] = (40, 40, 16),
                    voxel_size: float | None = None) -> LocalOccupancy:
        """The map on a local grid (e.g. to score occupancy against a network's grid).

        Occupied voxels with surface sub-cells put each sub-cell's centre into the grid voxel it
        falls in (the majority class of a grid voxel's sub-cells wins); a grid voxel that gets none
        reads the map voxel under its centre, unless that voxel has sub-cells elsewhere (then its
        surface lies in another grid voxel). With ``surface_subdivision`` 1 every grid voxel reads
        the map voxel under its centre.

        Args:
            T_world_grid: (4, 4) pose of the grid's voxel (0, 0, 0) corner in the world.
            shape: grid size in voxels.
            voxel_size: grid voxel edge in metres; default the map's.

        Returns:
            LocalOccupancy whose labels are -1 for free or unknown voxels, a class index for
            occupied voxels with a class vote, and ``len(self.class_names)`` (the class named
            UNLABELLED_CLASS, appended to the vocabulary) for occupied voxels without one.
        """
        vs = self.voxel_size if voxel_size is None else float(voxel_size)
        T = np.asarray(T_world_grid, dtype=np.float64)
        spec = GridSpec(shape=shape, voxel_size=vs)
        with self._lock:
            s = self.sample(transform_per_axis(T, spec.voxel_centres()))
            vocab = self.class_names
            splat = surface_labels(self._blocks, self._origin, self.voxel_size, self.config.surface_subdivision,
                                   self.config.occupied_threshold, T, spec, len(vocab)) \
                if self.config.surface_subdivision > 1 else None
        occupied = s.observed & (s.log_odds > self.config.occupied_threshold)
        labels = np.where(occupied, np.where(s.labels >= 0, s.labels, len(vocab)), -1)
        if splat is not None:
            labels = np.where(splat >= 0, splat, np.where(s.surface != 0, -1, labels))
        return LocalOccupancy(labels.astype(np.int16).reshape(shape), T.copy(), vs, vocab + (UNLABELLED_CLASS,))

    def class_grid(self, T_world_grid: np.ndarray, class_names: tuple[str, ...] | list[str],
                   shape: tuple[int, int, int] = (40, 40, 16), voxel_size: float | None = None) -> np.ndarray:
        """The map sampled on a local grid as labels of the caller's ``class_names``.

        Returns:
            (X, Y, Z) int64: index into ``class_names``; -1 where free, unknown, occupied without a
            class vote, or voted for a class not in ``class_names`` (to score against a network's grid).
        """
        grid = self.labels_grid(T_world_grid, shape, voxel_size)
        index = {name: i for i, name in enumerate(class_names)}
        lut = np.array([index.get(name, -1) for name in grid.class_names] + [-1], dtype=np.int64)
        return lut[grid.labels.astype(np.int64)]  # label -1 reads the last entry

    def stats(self) -> OccupancyStats:
        """Counts of blocks and voxels (allocated, observed, occupied, free, labelled), frames and bytes."""
        with self._lock:
            d = self._blocks.data
            seen = d["observed"]
            occ = seen & (d["log_odds"] > self.config.occupied_threshold)
            return OccupancyStats(
                self._blocks.n_blocks, self._blocks.n_blocks * 512, int(seen.sum()), int(occ.sum()),
                int(np.count_nonzero(seen & ~occ)), int(np.count_nonzero(occ & (d["label"] >= 0))),
                self._n_frames, self._blocks.n_evicted, self._blocks.nbytes,
            )

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the map (config, vocabulary, used blocks) to an ``.npz`` file."""
        with self._lock:
            config = json.dumps(asdict(self.config))
            arrays = self._blocks.export()
            meta = json.dumps({"vocabulary": self._vocabulary, "n_frames": self._n_frames,
                               "origin": self._origin.tolist()})
        with open(path, "wb") as f:
            np.savez_compressed(f, config=np.array(config), meta=np.array(meta), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> OccupancyMap:
        """Read a map written by ``save``.

        Raises:
            InputError: if the file is missing or not an occupancy map.
        """
        try:
            with np.load(Path(path), allow_pickle=False) as z:
                config = json.loads(str(z["config"]))
                meta = json.loads(str(z["meta"]))
                arrays = {k: z[k] for k in z.files if k not in ("config", "meta")}
            if "surface" not in arrays:  # written before maps kept surface sub-cells: none known
                arrays["surface"] = np.zeros(np.shape(arrays["log_odds"]), dtype=np.uint64)
            config["bounds"] = tuple(config["bounds"]) if config.get("bounds") else None
            occ = cls(**config)
            occ._blocks.restore(arrays)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as err:
            raise InputError(f"{path}: not an occupancy map: {err}") from None
        occ._vocabulary = [str(n) for n in meta["vocabulary"]]
        occ._class_of = {n: i for i, n in enumerate(occ._vocabulary)}
        occ._n_frames = int(meta["n_frames"])
        occ._origin = np.asarray(meta.get("origin", [0.0, 0.0, 0.0]), dtype=np.float64).reshape(3)
        return occ

    # ------------------------------------------------------------------ internals

    def _voxel_units(self, points: np.ndarray) -> np.ndarray:
        """World points (metres) -> continuous voxel coordinates of the map's lattice."""
        return (np.asarray(points, dtype=np.float64) - self._origin) / self.voxel_size

    def _centres(self, voxels: np.ndarray) -> np.ndarray:
        """(M, 3) voxel coordinates -> (M, 3) world centres, metres."""
        return (np.asarray(voxels, dtype=np.float64) + 0.5) * self.voxel_size + self._origin

    def _anchor(self, T_world_grid: np.ndarray) -> None:
        """Put the lattice's origin on the corner of a network grid, while the map is still empty."""
        with self._lock:
            if self.config.align_to_grid and self._n_frames == 0 and self._blocks.n_blocks == 0:
                self._origin = np.mod(np.asarray(T_world_grid, dtype=np.float64)[:3, 3], self.voxel_size)

    def _class_index(self, name: str) -> int:
        if name not in self._class_of:
            if len(self._vocabulary) >= np.iinfo(np.int16).max:
                raise ConfigError("occupancy map vocabulary is full (32767 class names)")
            self._class_of[name] = len(self._vocabulary)
            self._vocabulary.append(name)
        return self._class_of[name]

    def _apply(self, hit_vox: np.ndarray, free_vox: np.ndarray, near: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One hit per voxel of ``hit_vox``, one miss per voxel of ``free_vox`` (each unique, disjoint).

        Returns:
            Flat indices of the hit and the free voxels, aligned with the inputs; -1 where a voxel
            is outside the bounds or did not fit in memory.
        """
        vox = np.concatenate([hit_vox, free_vox])
        ok = rows_all((vox >= -MAX_VOXEL_COORD) & (vox < MAX_VOXEL_COORD))
        if self.config.bounds is not None:
            c = self._centres(vox)
            b = np.asarray(self.config.bounds)
            ok &= rows_all((c >= b[:3]) & (c <= b[3:]))
        flat = np.full(len(vox), -1, dtype=np.int64)
        flat[ok] = self._blocks.lookup(vox[ok], allocate=True, near=near)
        fh, ff = flat[: len(hit_vox)], flat[len(hit_vox):]
        d, c = self._blocks.data, self.config
        f = ff[ff >= 0]
        d["log_odds"][f] = np.maximum(d["log_odds"][f] + c.log_odds_miss, c.log_odds_min)
        d["observed"][f] = True
        d["surface"][f[d["log_odds"][f] <= c.occupied_threshold]] = 0  # a voxel that turns free forgets its surface
        f = fh[fh >= 0]
        d["log_odds"][f] = np.minimum(d["log_odds"][f] + c.log_odds_hit, c.log_odds_max)
        d["observed"][f] = True
        return fh, ff
