"""Objects no detector names: compact things resting on a support, found in a frame's depth.

A detector names what its classes cover; a robot also needs what stands on its tables and floors
that no class covers (a food box, a game controller, a PC tower). The geometry shows them with
physical reasoning alone, on the frame's depth sampled every ``pixel_stride`` pixels:

* supports: horizontal surfaces (up-facing normals) in dense height layers of the frame (floor,
  table, counter, shelf), kept across frames in a support map (memory/room_surfaces.py): a black
  worktop returns depth only from some views, and a thing hides the surface under it;
* structure: vertical planes longer or taller than any object (walls, cabinet fronts); their
  points belong to the room, and removing them frees what stands against them;
* the rest is split into connected pieces at depth discontinuities; a piece is an object when it
  touches a support at its bottom (surface cells within ``contact`` of its lowest points, at their
  height: a chair's backrest seen over the table's far edge does not), rises at least
  ``min_height`` from it, is at most ``max_size`` in every direction and not a pole
  (``max_slenderness``), and lies inside the image (a piece cut by the image's edge is part of
  something larger, or of an object seen better from elsewhere).

A piece whose top is hidden behind something nearer is not taken either: its height is unknown, and
it is mostly part of something larger (the plinth under a cabinet's doors). Each object is given as a
detection of class ``UNKNOWN_CLASS`` with its points, pixels, gravity-aligned box (down to its
support) and image region: the scene memory tracks it with the evidence rules of every object (a
segment seen from several looks is an object) and leaves out what is part of a named object.

Here: the rules' parameters, the keyframe gate, the frame's samples, supports and structure, and the
support and wall maps kept across frames; which pieces stand on a support is memory/standing_things.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from ..detections import Detections3D
from ..errors import ConfigError
from ..frame import Frame
from ..geometry.boxes import points_in_boxes
from ..geometry.fitting import fit_upright_box
from ..geometry.grouped import percentiles
from .depth_grid import DepthSamples, depth_breaks, grid_normals, grow_silhouettes, hidden_samples, mixed_samples
from .flat_things import FlatParams, flat_regions
from .room_surfaces import SupportMap, WallPlanes, find_walls
from .standing_things import sample_spacing, split_by_colour, standing_things
from .structure_cells import FrameSurfaces

UNKNOWN_CLASS = "object"
"""The class of what the geometry shows and no detector names (grounding answers it by colour, size
and place, as "unnamed object #N")."""


@dataclass(frozen=True)
class DiscoveryParams:
    """How a frame's depth becomes unknown objects. Defaults suit Kinect-class RGB-D at 0.3-4.5 m."""

    # A frame is looked at when the camera moved min_move m or turned min_turn rad since the last one
    # looked at, or max_interval s passed (0, 0, 0: every frame).
    min_move: float = 0.05
    min_turn: float = 0.087
    max_interval: float = 0.5
    # Depth pixels sampled every this many pixels along both image axes (4 on 640x480: 19,200 points).
    pixel_stride: int = 4
    # Depth outside [min_depth, max_depth] metres is not used (beyond, a 5 cm thing is lost in the noise).
    min_depth: float = 0.3
    max_depth: float = 3.5
    # A surface is horizontal when its normal's z is at least this (within 21 degrees of up) ...
    up_cos: float = 0.8
    # ... and a frame's support layer when such points pile up in one height band of 1 cm (with
    # its neighbours) holding at least this share of the frame's points; points within support_tol
    # metres of a layer's height belong to it.
    min_layer_share: float = 0.004
    support_tol: float = 0.025
    # Samples in a surface cell of the support map (or one layer above) whose normal's z is at least
    # known_up_cos are on that surface too (the noise tilts the normals of a far worktop).
    known_up_cos: float = 0.5
    # A support layer spreads at least this far (m) in the frame: the lid of a box on a table is the
    # box's top, not a surface other things stand on.
    min_support_span: float = 0.4
    # A surface is vertical when its normal's |z| is below this.
    wall_cos: float = 0.25
    # A vertical plane longer or taller than this (m) is structure (a wall, a cabinet front), not an
    # object; points within wall_tol metres of it belong to it.
    min_wall_span: float = 1.0
    wall_tol: float = 0.03
    # A sample at a depth step that continues the surface on neither side of it along an image axis, within
    # mixed_base + mixed_per_m x depth (m), is a mixed ("flying") depth pixel: not used (depth_grid.mixed_samples).
    mixed_base: float = 0.01
    mixed_per_m: float = 0.02
    # Neighbouring samples farther apart in depth than break_base + break_per_m x depth x (stride / 4)
    # metres lie on different surfaces.
    break_base: float = 0.02
    break_per_m: float = 0.03
    # A piece at least split_min_width (m) wide is cut in two where its colour changes by split_colour
    # (CIELAB) and split_purity of its samples are nearer their side's colour (two things side by side).
    split_min_width: float = 0.15
    split_colour: float = 25.0
    split_purity: float = 0.85
    # A piece lying within fixture_depth (m) of a structure plane is a fixture on it (a socket, a pipe, a
    # poster), not a thing standing there.
    fixture_depth: float = 0.08
    # Fewer samples than this and a piece is not looked at.
    min_points: int = 12
    # A piece whose top edge is hidden, in more than this share of its samples, by another piece or the
    # room nearer by hidden_gap metres (or anything nearer across a depth discontinuity) is cut by
    # what stands in front of it.
    max_hidden_top: float = 0.4
    hidden_gap: float = 0.03
    # An object rises at least min_height (m) above its support and is at most max_size (m) along
    # every axis; one more than max_slenderness times as tall as it is wide is a pole (a table leg,
    # a pipe, a cable), not a thing.
    min_height: float = 0.03
    max_size: float = 0.6
    max_slenderness: float = 6.0
    # Its lowest points (the lowest base_band metres) have support surface cells within one cell of
    # them, at most contact_below under and contact_above over their height, in at least
    # min_contact of them.
    base_band: float = 0.04
    contact_below: float = 0.05
    contact_above: float = 0.02
    min_contact: float = 0.3
    # ... plus contact_per_m2 x depth^2 (m; the noise of a far surface and a thing's lowest samples grow with
    # the square of the depth: 2.5 cm more at 2.5 m).
    contact_per_m2: float = 0.004
    # ... or just below them in the image, samples of that height lie within contact_reach (m).
    contact_reach: float = 0.08
    # Where the support beside a piece was not seen, it still stands on one when its base is at the
    # floor's height (within floor_tol m; the floor goes on under everything), or at the height of a
    # surface seen in at least level_cells cells with no depth just below its base (a black worktop
    # returns none) in at least min_unseen_below of its base samples
    floor_tol: float = 0.04
    level_cells: int = 40
    min_unseen_below: float = 0.5
    # ... and that surface was seen within this distance (m) of the base elsewhere, or at least
    # shared_pieces other pieces of the frame end within shared_base (m) of the same height, spread
    # over min_support_span.
    unseen_reach: float = 0.3
    shared_pieces: int = 2
    shared_base: float = 0.015
    # Support map cell (m) across, its height, and the frames that must see a surface in it.
    support_cell: float = 0.04
    support_layer: float = 0.02
    support_frames: int = 1
    # Flat things on supports, found by their colour (memory/flat_things.py); None: not looked for.
    flat: FlatParams | None = field(default_factory=FlatParams)
    # The score of one discovered object (memory.existence_hit x score is one look's evidence: 0.5
    # gives 0.625, p = 0.65, below the 0.7 published; a second look publishes it).
    score: float = 0.5

    def __post_init__(self) -> None:
        if self.pixel_stride < 1:
            raise ConfigError(f"discovery: pixel_stride must be at least 1, got {self.pixel_stride}")
        if not 0 <= self.min_depth < self.max_depth:
            raise ConfigError(f"discovery: need 0 <= min_depth < max_depth, got {self.min_depth}, {self.max_depth}")
        if not 0 < self.score <= 1:
            raise ConfigError(f"discovery: score must be in (0, 1], got {self.score}")
        if self.min_points < 4 or self.max_size <= self.min_height:
            raise ConfigError("discovery: need min_points >= 4 and max_size > min_height")


@dataclass
class ObjectDiscovery:
    """Finds unknown objects frame by frame and keeps the supports seen so far (not thread-safe: its
    owner, the scene memory, serialises calls).

    Attributes:
        params: the rules.
        supports: the horizontal surfaces seen so far.
        walls: the structure planes seen so far.
        seconds: wall-clock seconds of the latest ``discover`` call.
        surfaces: the latest keyframe's samples as classified here (the room's structure reads them).
    """

    params: DiscoveryParams = field(default_factory=DiscoveryParams)
    supports: SupportMap = field(init=False)
    walls: WallPlanes = field(init=False)
    seconds: float = 0.0
    surfaces: FrameSurfaces | None = field(default=None, repr=False)
    _rays: dict = field(default_factory=dict, repr=False)
    _last: tuple[np.ndarray, int] | None = field(default=None, repr=False)  # the last frame looked at

    def __post_init__(self) -> None:
        p = self.params
        self.supports = SupportMap(p.support_cell, p.support_layer, p.support_frames)
        self.walls = WallPlanes()

    def reset(self) -> None:
        self.supports.reset()
        self.walls = WallPlanes()
        self._last = None
        self.surfaces = None

    def discover(self, frame: Frame, floor_z: float | None = None) -> Detections3D | None:
        """The compact things resting on supports in one frame (module notes), or None when the camera has
        not moved ``min_move`` m nor turned ``min_turn`` rad since the last frame looked at, and less than
        ``max_interval`` s have passed: a 30 Hz stream says little more than its keyframes, at a fraction
        of the cost.

        Args:
            frame: posed RGB-D frame, world z up.
            floor_z: the floor's height, when known (memory/amodal.py's FloorEstimate).

        Returns:
            Detections3D of class ``UNKNOWN_CLASS`` in the frame's world, with points, pixels, 2D
            regions and, as ``surround_z``, the height of the support each rests on; None: not looked at.
        """
        start = time.perf_counter()
        try:
            if not self._keyframe(frame):
                return None
            return self._discover(frame, floor_z)
        finally:
            self.seconds = time.perf_counter() - start

    def _keyframe(self, frame: Frame) -> bool:
        p = self.params
        last = self._last
        T = frame.T_world_camera
        if last is not None:
            moved = float(np.linalg.norm(T[:3, 3] - last[0][:3, 3]))
            turned = float(np.arccos(np.clip((np.trace(last[0][:3, :3].T @ T[:3, :3]) - 1) / 2, -1.0, 1.0)))
            if moved < p.min_move and turned < p.min_turn and 0 <= frame.stamp_ns - last[1] < p.max_interval * 1e9:
                return False
        self._last = (T.copy(), int(frame.stamp_ns))
        return True

    def _discover(self, frame: Frame, floor_z: float | None) -> Detections3D:
        p = self.params
        s = self._sample(frame)
        breaks = depth_breaks(s.depth, p.break_base, p.break_per_m * p.pixel_stride / 4)
        normal, has_normal = grid_normals(s.points, s.valid & ~breaks)
        up = has_normal & (normal[..., 2] >= p.up_cos)
        support = self._supports(s.points, up, int(s.valid.sum()))
        self.supports.add(s.points[support])
        # Where the map knows a surface, a sample at its height is on it, whatever the noise did to its normal.
        level = s.valid & ~support & (~has_normal | (normal[..., 2] >= p.known_up_cos))
        support[level] = self.supports.holds(s.points[level])
        structure, walls = find_walls(s.points, normal, has_normal, s.valid, p)
        self.walls.add(walls)
        self.surfaces = FrameSurfaces(s.points, normal, has_normal & s.valid, support, s.valid,
                                      frame.T_world_camera[:3, 3].copy(), p.pixel_stride)
        labels, n = ndimage.label(s.valid & ~support & ~structure & ~breaks)
        far = p.break_base + p.break_per_m * p.pixel_stride / 4 * s.depth
        labels = grow_silhouettes(labels, s.depth, s.valid & breaks & ~support & ~structure, far)
        hidden = hidden_samples(s.depth, labels, support | structure, p.hidden_gap, far)
        flats = [] if p.flat is None else flat_regions(s.points, s.valid, support, frame.color, p.pixel_stride,
                                                       floor_z, p.flat)
        return self._objects(frame, s, labels, n, hidden, floor_z, self.walls.seen(walls), flats)

    # -- the frame's samples ----------------------------------------------------------------------

    def _sample(self, frame: Frame) -> DepthSamples:
        p = self.params
        k, o = p.pixel_stride, p.pixel_stride // 2
        depth = frame.depth[o::k, o::k]
        key = (depth.shape, frame.K.tobytes())
        if key not in self._rays:  # the unit-depth ray of every sample, per camera
            vs, us = np.mgrid[o:frame.depth.shape[0]:k, o:frame.depth.shape[1]:k]
            K = frame.K
            self._rays = {key: np.stack([(us - K[0, 2]) / K[0, 0], (vs - K[1, 2]) / K[1, 1],
                                         np.ones(us.shape)], axis=-1).astype(np.float32)}
        valid = np.isfinite(depth) & (depth >= p.min_depth) & (depth <= p.max_depth)
        d = np.where(valid, depth, 0.0).astype(np.float32)
        valid &= ~mixed_samples(d, p.mixed_base, p.mixed_per_m)  # flying pixels: on no surface
        d[~valid] = 0.0
        R = frame.T_world_camera[:3, :3].astype(np.float32)
        t = frame.T_world_camera[:3, 3].astype(np.float32)
        points = (self._rays[key] * d[..., None]) @ R.T + t
        return DepthSamples(points, d, valid)

    def _supports(self, points: np.ndarray, up: np.ndarray, n_valid: int) -> np.ndarray:
        """(h, w) bool: the samples on the frame's supports: up-facing points in dense height layers that
        spread at least ``min_support_span``."""
        p = self.params
        z = points[..., 2]
        heights = z[up]
        out = np.zeros_like(up)
        if len(heights) == 0:
            return out
        lo = float(heights.min())
        hist = np.bincount(((heights - lo) / 0.01).astype(np.int64))
        band = hist + np.concatenate([hist[1:], [0]]) + np.concatenate([[0], hist[:-1]])
        dense = max(p.min_points, p.min_layer_share * n_valid)
        # Local maxima of the band; of a plateau only its lowest bin (a magazine's layer 1 cm over the table's
        # ties the table's band: one level for both, not a second one the magazine alone spans).
        peaks = np.flatnonzero((band >= dense) & (band >= np.concatenate([band[1:], [0]]))
                               & (band > np.concatenate([[0], band[:-1]])))
        if len(peaks) == 0:
            return out
        levels = (lo + (peaks + 0.5) * 0.01).astype(np.float32)
        gap = np.abs(heights[:, None] - levels[None, :])
        level = np.where(gap.min(axis=1) <= p.support_tol, gap.argmin(axis=1), -1)
        xy = points[up][:, :2]
        wide = np.zeros(len(levels) + 1, bool)  # the last one: no level
        for j in range(len(levels)):
            on = xy[level == j]
            if len(on) >= p.min_points:
                q = percentiles(on, (5, 95))
                span = q[1] - q[0]
                wide[j] = span.max() >= p.min_support_span
        out[up] = wide[level]
        return out

    # -- the pieces -------------------------------------------------------------------------------

    def _objects(self, frame: Frame, s: DepthSamples, labels: np.ndarray, n: int, hidden: np.ndarray,
                 floor_z: float | None, walls: np.ndarray, flats: list[tuple[np.ndarray, float]]) -> Detections3D:
        """The pieces (``labels``) that are objects, and the flat things; ``hidden``: samples with something in
        front of them; ``walls``: (W, 4) the room's structure planes (``_plane``); ``flats``: each flat thing's
        samples (flat indices) and the height of its surface (memory/flat_things.py)."""
        p = self.params
        w = labels.shape[1]
        things = standing_things(p, self.supports, frame, s, labels, n, hidden, floor_z, walls)
        standing = np.array([t[0] for t in things]).reshape(-1, 9)
        footprints = standing.copy()  # what stands there, as columns a little wider than its box
        footprints[:, 3:5] += 2 * p.flat.foot_margin
        footprints[:, 5] = np.inf
        for members, support_z in flats:
            r, c = np.divmod(members, w)
            region = s.points.reshape(-1, 3)[members].astype(np.float64)
            # The foot of a thing standing there (its colour reaches into the surface's band) is not a flat thing;
            # a magazine a cup stands on is, outside the cup's foot.
            under = points_in_boxes(region, footprints).any(axis=0)
            if under.mean() >= p.flat.foot_share:
                continue
            region, r, c = region[~under], r[~under], c[~under]
            for part in split_by_colour(p, region, r, c, frame):  # a magazine lying on leaflets
                thing, rr, cc = region[part], r[part], c[part]
                if len(thing) < p.flat.min_samples:
                    continue
                box = fit_upright_box(thing, pad=sample_spacing(p.pixel_stride, frame, s, rr, cc))
                top = max(box[2] + 0.5 * box[5], support_z + p.flat.thickness)
                box[2], box[5] = 0.5 * (top + support_z), top - support_z
                things.append((box, thing, rr, cc, support_z))
        if not things:
            return Detections3D.empty((UNKNOWN_CLASS,), frame.world_frame)
        k = p.pixel_stride
        block = np.stack(np.meshgrid(np.arange(k), np.arange(k)), axis=-1).reshape(-1, 2)  # (k*k, 2)
        pixels = [(np.stack([cc * k, rr * k], axis=1)[:, None, :] + block[None]).reshape(-1, 2).astype(np.int32)
                  for _, _, rr, cc, _ in things]  # every pixel of its samples' cells: a small thing keeps a colour
        regions = [[uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max() + 1, uv[:, 1].max() + 1] for uv in pixels]
        m = len(things)
        return Detections3D(np.array([t[0] for t in things]), np.zeros(m, np.int64), np.full(m, p.score),
                            (UNKNOWN_CLASS,), frame.world_frame, boxes_2d=np.array(regions, dtype=np.float64),
                            points=tuple(t[1] for t in things), pixels=tuple(pixels),
                            surround_z=np.array([t[4] for t in things]))
