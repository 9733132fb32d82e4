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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from ..detections import Detections3D
from ..errors import ConfigError
from ..frame import Frame
from ..geometry.fitting import fit_upright_box
from ..geometry.iou import box_intersection_volume
from .depth_grid import (
    connected_groups,
    depth_breaks,
    grid_normals,
    grow_silhouettes,
    hidden_samples,
    label_runs,
    mixed_samples,
    piece_edges,
)
from .flat_things import FlatParams, flat_regions
from .object_colour import to_lab
from .room_surfaces import SupportMap, WallPlanes, find_walls, on_wall
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
class _Samples:
    """A frame's depth on the sampling grid: (h, w, 3) world points, (h, w) depth and valid mask."""

    points: np.ndarray
    depth: np.ndarray
    valid: np.ndarray


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

    def _sample(self, frame: Frame) -> _Samples:
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
        return _Samples(points, d, valid)

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
        peaks = np.flatnonzero((band >= dense) & (band >= np.concatenate([band[1:], [0]]))
                               & (band >= np.concatenate([[0], band[:-1]])))
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
                span = np.percentile(on, 95, axis=0) - np.percentile(on, 5, axis=0)
                wide[j] = span.max() >= p.min_support_span
        out[up] = wide[level]
        return out

    # -- the pieces -------------------------------------------------------------------------------

    def _split_by_colour(self, piece: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                         frame: Frame) -> list[np.ndarray]:
        """The piece as one or two index arrays: two things that touch side by side (a brochure beside a
        wooden model) are one piece of depth; their colours part them, at the cut along the piece's long
        horizontal axis where the mean colours of the two sides differ most, when they differ by at least
        ``split_colour`` (CIELAB) and the colours of ``split_purity`` of the samples are nearer their own
        side's mean (a multicoloured thing mixes its colours on both sides of any cut)."""
        p = self.params
        everything = [np.arange(len(piece))]
        if len(piece) < 2 * p.min_points:
            return everything
        xy = piece[:, :2] - piece[:, :2].mean(axis=0)
        _, vectors = np.linalg.eigh(xy.T @ xy)
        t = xy @ vectors[:, 1]  # along the long horizontal axis
        if np.ptp(t) < p.split_min_width:
            return everything
        k, o = p.pixel_stride, p.pixel_stride // 2
        lab = to_lab(frame.color[rows * k + o, cols * k + o])
        order = np.argsort(t)
        total = np.cumsum(lab[order], axis=0)
        n = len(t)
        m = np.arange(max(int(0.15 * n), 1), min(int(0.85 * n), n - 1) + 1)  # the cuts: left of each
        gaps = np.linalg.norm(total[m - 1] / m[:, None] - (total[-1] - total[m - 1]) / (n - m)[:, None], axis=1)
        if not len(m) or gaps.max() < p.split_colour:
            return everything
        cut = int(m[int(np.argmax(gaps))])
        left, right = order[:cut], order[cut:]
        mean_l, mean_r = lab[left].mean(axis=0), lab[right].mean(axis=0)
        nearer_left = np.linalg.norm(lab - mean_l, axis=1) < np.linalg.norm(lab - mean_r, axis=1)
        purity = (nearer_left[left].sum() + (~nearer_left[right]).sum()) / n
        return [left, right] if purity >= p.split_purity else everything

    def _seen_below(self, piece: np.ndarray, rows: np.ndarray, cols: np.ndarray, s: _Samples,
                    labels: np.ndarray, slack: float) -> float | None:
        """The height of a surface the piece's base touches in the image (or None): just below its lowest
        samples, in at least ``min_contact`` of their columns, other samples at the base's height and
        within ``contact_reach`` of it horizontally (a worktop whose normals the noise tilts; a chair's
        backrest seen over the table's far edge ends well behind the edge)."""
        p = self.params
        bottom = _bottom(piece, cols)
        low = piece[:, 2] <= bottom + p.base_band
        h = labels.shape[0]
        found, heights = np.zeros(low.sum(), bool), []
        for step in (1, 2):
            r, c = np.minimum(rows[low] + step, h - 1), cols[low]
            there = s.points[r, c].astype(np.float64)
            dz = there[:, 2] - piece[low, 2]
            ok = (s.valid[r, c] & (labels[r, c] != labels[rows[low], cols[low]]) & (dz >= -p.contact_below)
                  & (dz <= p.contact_above + slack)
                  & (np.linalg.norm(there[:, :2] - piece[low, :2], axis=1) <= p.contact_reach))
            found |= ok
            heights.append(there[ok, 2])
        columns = np.unique(cols[low])
        touched = np.unique(cols[low][found])
        if len(touched) < p.min_contact * len(columns):
            return None
        return float(np.median(np.concatenate(heights)))

    def _unseen_support(self, base: np.ndarray, rows: np.ndarray, cols: np.ndarray, piece: np.ndarray,
                        s: _Samples, levels: np.ndarray, floor_z: float | None,
                        bases: np.ndarray, slack: float) -> float | None:
        """The height of the support a piece stands on where none was seen beside it, or None: the floor
        (it goes on under everything), or an unseen surface (no depth just below the piece: a black
        worktop) of a height seen within ``unseen_reach`` of it, or on which other pieces of the frame
        stand too (``bases``: (M, 3) the other pieces' lowest points: several things ending at one
        height with nothing seen below them stand on something there)."""
        p = self.params
        bottom = float(base[:, 2].min())
        if floor_z is not None and abs(bottom - floor_z) <= p.floor_tol + slack:
            return floor_z
        r, c = _lowest_in_columns(rows, cols)
        inside = r + 1 < s.valid.shape[0]
        r, c = r[inside], c[inside]
        far = p.break_base + p.break_per_m * p.pixel_stride / 4 * s.depth[r, c]
        # The surface under it is not seen from here: no depth just below the piece in the image (a black
        # worktop), or the view passes it to something farther (the wall under a shelf seen edge-on).
        unseen = ~s.valid[r + 1, c] | (s.depth[r + 1, c] > s.depth[r, c] + far)
        if not len(unseen):
            return None
        hidden = s.valid[r + 1, c] & (s.depth[r + 1, c] < s.depth[r, c] - far)
        if floor_z is not None and hidden.mean() >= p.min_unseen_below and piece[:, 2].max() - floor_z <= p.max_size:
            return floor_z  # its base is hidden behind something nearer (a table's edge): on the floor the map knows
        if unseen.mean() < p.min_unseen_below:
            return None
        above = p.contact_above + slack
        near = levels[(levels >= bottom - p.contact_below) & (levels <= bottom + above)]
        reach = int(np.ceil(p.unseen_reach / p.support_cell))
        if len(near) and self.supports.surface_near(base[:1], p.contact_below, above, reach)[0]:
            return float(near[np.argmin(np.abs(near - bottom))])
        level = bases[np.abs(bases[:, 2] - bottom) <= p.shared_base]
        spread = np.ptp(np.vstack([level[:, :2], base[:1, :2]]), axis=0).max() if len(level) else 0.0
        if len(level) >= p.shared_pieces and spread >= p.min_support_span:
            return float(np.median(np.append(level[:, 2], bottom)))
        return None

    def _objects(self, frame: Frame, s: _Samples, labels: np.ndarray, n: int, hidden: np.ndarray,
                 floor_z: float | None, walls: np.ndarray, flats: list[tuple[np.ndarray, float]]) -> Detections3D:
        """The pieces (``labels``) that are objects, and the flat things; ``hidden``: samples with something in
        front of them; ``walls``: (W, 4) the room's structure planes (``_plane``); ``flats``: each flat thing's
        samples (flat indices) and the height of its surface (memory/flat_things.py)."""
        p = self.params
        w = labels.shape[1]
        things = self._standing(frame, s, labels, n, hidden, floor_z, walls)
        standing = np.array([t[0] for t in things]).reshape(-1, 9)
        for members, support_z in flats:
            r, c = np.divmod(members, w)
            region = s.points.reshape(-1, 3)[members].astype(np.float64)
            for part in self._split_by_colour(region, r, c, frame):  # a magazine lying on leaflets
                thing, rr, cc = region[part], r[part], c[part]
                if len(thing) < p.flat.min_samples:
                    continue
                box = fit_upright_box(thing, pad=self._spacing(frame, s, rr, cc))
                top = max(box[2] + 0.5 * box[5], support_z + p.flat.thickness)
                box[2], box[5] = 0.5 * (top + support_z), top - support_z
                if len(standing) and box_intersection_volume(box[None], standing)[0].max() > 0:
                    continue  # the foot of a thing standing there (its colour reaches into the surface's band)
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

    def _spacing(self, frame: Frame, s: _Samples, rr: np.ndarray, cc: np.ndarray) -> float:
        """The distance (m) between neighbouring samples at the depth of these."""
        return float(np.median(s.depth[rr, cc])) * self.params.pixel_stride / frame.K[0, 0]

    def _standing(self, frame: Frame, s: _Samples, labels: np.ndarray, n: int, hidden: np.ndarray,
                  floor_z: float | None, walls: np.ndarray) -> list[tuple]:
        """The pieces that are things standing on a support: per thing (box, points, rows, columns, support
        height)."""
        p = self.params
        flat = labels.ravel()
        counts = np.bincount(flat, minlength=n + 1)
        ids = np.flatnonzero(counts >= p.min_points)
        ids = ids[ids > 0]
        if len(ids) == 0:
            return []
        lo, hi, order, first = label_runs(labels, n, s.points)
        lo, hi = lo[ids], hi[ids]
        starts, ends = first[ids], first[ids] + counts[ids]
        pts = s.points.reshape(-1, 3)[order].astype(np.float64)
        ext = hi - lo
        keep = (ext.max(axis=1) <= 1.2 * p.max_size) & (ext[:, 2] >= p.min_height)
        h, w = labels.shape
        rows, cols = np.divmod(order, w)
        lows = np.flatnonzero(keep)  # the lowest point of each piece that may stand on something
        lowest = pts[[starts[j] + int(np.argmin(pts[starts[j]:ends[j], 2])) for j in lows]].reshape(-1, 3)
        edge = piece_edges(labels).ravel()[order]
        hidden = hidden.ravel()[order]
        pieces = []
        for j in np.flatnonzero(keep):
            r, c = rows[starts[j]:ends[j]], cols[starts[j]:ends[j]]
            if r.min() == 0 or c.min() == 0 or r.max() == h - 1 or c.max() == w - 1:
                continue  # cut by the image's edge
            piece = pts[starts[j]:ends[j]]
            top = edge[starts[j]:ends[j]] & (piece[:, 2] >= hi[j, 2] - 0.25 * ext[j, 2])
            if hidden[starts[j]:ends[j]][top].sum() > p.max_hidden_top * max(top.sum(), 1):
                continue  # its top is hidden behind something nearer: cut, part of something larger
            slack = p.contact_per_m2 * float(np.median(s.depth[r, c])) ** 2
            pieces.append((piece, _base(piece, c, p.base_band), r, c, j, slack))
        if not pieces:
            return []
        # Each piece's base must touch a support: one look-up for all of them.
        bases = np.concatenate([piece[1] for piece in pieces])
        owner = np.repeat(np.arange(len(pieces)), [len(piece[1]) for piece in pieces])
        slack = np.array([piece[5] for piece in pieces])
        bases[:, 2] += slack[owner]  # a surface up to contact_above + slack over the base: the window moves up
        touching = self.supports.surface_near(bases, p.contact_below + slack.max(), p.contact_above)
        contact = np.bincount(owner, weights=touching, minlength=len(pieces)) / np.bincount(owner)
        levels = self.supports.levels(p.level_cells)
        things = []
        for j in range(len(pieces)):
            piece, base, r, c, label, slack = pieces[j]
            if contact[j] >= p.min_contact:
                support_z = self.supports.height_under(bases[owner == j][touching[owner == j]],
                                                       p.contact_below + slack, p.contact_above)
            else:  # on a wall (a socket, a poster, a pocket): the wall under it is no surface it stands on
                fixture = on_wall(piece, walls, p.fixture_depth)
                support_z = None if fixture else self._seen_below(piece, r, c, s, labels, slack)
                if support_z is None:
                    others = lowest[lows != label]
                    support_z = self._unseen_support(base, r, c, piece, s, levels, floor_z, others, slack)
                if support_z is None:
                    continue  # standing on nothing: part of something larger, or of the room
            above = piece[:, 2] > support_z + p.support_tol  # the support's own samples are not the thing's
            for part in (sub for apart in connected_groups(r[above], c[above]) for sub in
                         self._split_by_colour(piece[above][apart], r[above][apart], c[above][apart], frame)):
                thing, rr, cc = piece[above][part], r[above][part], c[above][part]
                if len(thing) < p.min_points:
                    continue
                box = _rest_on(fit_upright_box(thing, pad=self._spacing(frame, s, rr, cc)), support_z)
                size = box[3:6]
                if size.max() > p.max_size or size[2] < p.min_height or size[2] > p.max_slenderness * size[0]:
                    continue  # too large, too flat, or a pole
                things.append((box, thing, rr, cc, support_z))
        return things


def _lowest_in_columns(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lowest sample in the image (largest row) of each image column of a piece: (rows, columns)."""
    order = np.lexsort((-rows, cols))
    firsts = order[np.concatenate([[True], cols[order][1:] != cols[order][:-1]])]
    return rows[firsts], cols[firsts]


def _bottom(piece: np.ndarray, cols: np.ndarray) -> float:
    """The height (m) of a piece's base: the median of its lowest sample in each image column. Its very lowest
    samples are the noisiest (the mixed depth of its bottom edge and the surface behind it lies lower)."""
    order = np.lexsort((piece[:, 2], cols))
    firsts = order[np.concatenate([[True], cols[order][1:] != cols[order][:-1]])]
    return float(np.median(piece[firsts, 2]))


def _base(piece: np.ndarray, cols: np.ndarray, band: float) -> np.ndarray:
    """(B, 3) a piece's base: its samples within ``band`` of its bottom (``_bottom``), none of them below it."""
    bottom = _bottom(piece, cols)
    base = piece[piece[:, 2] <= bottom + band].copy()
    base[:, 2] = np.maximum(base[:, 2], bottom)
    return base


def _rest_on(box: np.ndarray, support_z: float) -> np.ndarray:
    """The box reaching down to its support (the support layer took the object's lowest centimetres)."""
    if not np.isfinite(support_z):
        return box
    top = box[2] + 0.5 * box[5]
    b = box.copy()
    b[2], b[5] = 0.5 * (top + support_z), max(top - support_z, 1e-3)
    return b
