"""Vertical planes of the room and how high they reach along their length: walls and furniture fronts.

A wall rises above anything that stands in front of it; the front of a cabinet, a drawer unit or a
sideboard rises from the floor to its top and no further. Both are vertical planes of the facing cells
(memory/structure_cells.py). Each plane is summarised once as a height profile along its length (bins of
``bin`` metres: the lowest and highest cell seen in each, and how much of the height between them is
filled), which the structure rules (memory/structure_rules.py) read: where a wall stands behind a surface,
where a front reaches down to the floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .room_surfaces import histogram_peaks

_DIRECTION_STEP = np.deg2rad(5.0)  # the facing directions' histogram bins
_SAME_DIRECTION = np.deg2rad(15.0)  # cells facing within this of a direction seed its planes
_MEMBER_ANGLE = np.deg2rad(30.0)  # cells facing within this of a plane's fitted direction are on it
_ELONGATION = 3.0  # a plane's cells spread at least this many times as far along it as across
_DIRECTIONS_APART = np.deg2rad(20.0)  # two directions closer than this are one
_MAX_DIRECTIONS = 8
_DIRECTION_CELLS = 4  # a direction the room's planes face holds this many planes' worth of cells


@dataclass(frozen=True)
class PlaneProfile:
    """One vertical plane: the direction it faces, where it lies, and its height profile along its length.

    Attributes:
        angle: direction the plane faces (towards where it was seen from), radians.
        offset: position along that direction (``normal @ xy``), metres.
        start: position along the plane (``along @ xy``) where the first bin begins, metres.
        bin: bin length, metres.
        low, high: (B,) height above the floor of the lowest and highest cell in each bin (NaN: none).
        fill: (B,) share of the cell layers between ``low`` and ``high`` that hold a cell.
    """

    angle: float
    offset: float
    start: float
    bin: float
    low: np.ndarray
    high: np.ndarray
    fill: np.ndarray

    @property
    def normal(self) -> np.ndarray:
        return np.array([np.cos(self.angle), np.sin(self.angle)])

    @property
    def along(self) -> np.ndarray:
        return np.array([-np.sin(self.angle), np.cos(self.angle)])

    def bins(self, t0: float, t1: float) -> slice:
        """The bins covering positions ``t0`` to ``t1`` along the plane."""
        a = int(np.clip(np.floor((t0 - self.start) / self.bin), 0, len(self.high)))
        b = int(np.clip(np.ceil((t1 - self.start) / self.bin), a, len(self.high)))
        return slice(a, b)

    def rises_from(self, t0: float, t1: float, base: float, above: float, reach: float = 0.3) -> float:
        """Share of the length from ``t0`` to ``t1`` where the plane rises from near ``base`` (its lowest
        cell at most ``reach`` above it) to at least ``above`` over it, heights above the floor: a wall
        behind a worktop is seen right above it, the front of a wall unit hung higher is not (0 where the
        plane does not cover that stretch)."""
        span = max(int(np.ceil((t1 - t0) / self.bin)), 1)
        part = self.bins(t0, t1)
        rises = (self.low[part] <= base + reach) & (self.high[part] >= base + above)
        return float(np.count_nonzero(rises)) / span


@dataclass(frozen=True)
class Segment:
    """A stretch of a plane of one kind: ``wall`` (it rises higher than furniture) or ``front`` (it reaches
    from near the floor up to ``top``); ``t0``, ``t1`` along the plane, ``top`` above the floor, metres."""

    plane: PlaneProfile
    kind: str
    t0: float
    t1: float
    top: float

    @property
    def length(self) -> float:
        return self.t1 - self.t0


def facing_directions(angles: np.ndarray, min_cells: int) -> list[float]:
    """The directions (radians) that at least ``min_cells`` cells face, strongest first, each the circular
    mean of its cells."""
    n_bins = int(round(2 * np.pi / _DIRECTION_STEP))
    codes = np.floor(np.mod(angles, 2 * np.pi) / _DIRECTION_STEP).astype(np.int64) % n_bins
    hist = np.bincount(codes, minlength=n_bins)
    band = hist + np.roll(hist, 1) + np.roll(hist, -1)
    out: list[float] = []
    for k in np.argsort(-band, kind="stable"):
        if band[k] < min_cells or len(out) >= _MAX_DIRECTIONS:
            break
        centre = (k + 0.5) * _DIRECTION_STEP
        if any(abs((centre - a + math.pi) % (2 * math.pi) - math.pi) < _DIRECTIONS_APART for a in out):
            continue
        near = directions_apart(angles, centre) < 1.5 * _DIRECTION_STEP
        out.append(float(np.arctan2(np.sin(angles[near]).sum(), np.cos(angles[near]).sum())))
    return out


def vertical_planes(centres: np.ndarray, angles: np.ndarray, floor_z: float, min_cells: int, tolerance: float,
                    bin_size: float, layer: float) -> list[PlaneProfile]:
    """The vertical planes of the facing cells (``FacingCells.cells``), each with its height profile (bins of
    ``bin_size`` metres; cells ``layer`` metres high).

    Per facing direction, strongest first: the offsets where at least ``min_cells`` cells facing it lie
    together seed a plane; the line through the seed's cells (their principal axis) gives the plane's
    direction, which a cell's own normal gives only roughly (noisy, and turned towards the camera at grazing
    views); the plane takes the cells not yet taken that lie within ``tolerance`` metres of it and face its
    way (within 30 degrees).
    """
    planes: list[PlaneProfile] = []
    if len(centres) < min_cells:
        return planes
    xy = centres[:, :2]
    free = np.ones(len(centres), bool)
    for angle in facing_directions(angles, _DIRECTION_CELLS * min_cells):
        first = len(planes)
        apart = directions_apart(angles, angle)
        near = np.flatnonzero(free & (apart < _SAME_DIRECTION + _MEMBER_ANGLE))  # those any plane here may take
        pts, ang, seeds = xy[near], angles[near], apart[near] < _SAME_DIRECTION
        offsets = pts @ np.array([np.cos(angle), np.sin(angle)])
        taken = np.zeros(len(near), bool)
        for rho in histogram_peaks(offsets[seeds], 0.02, min_cells):
            seed = seeds & ~taken & (np.abs(offsets - rho) < 2 * tolerance)
            if np.count_nonzero(seed) < min_cells:
                continue
            fitted = _fit_line(pts[seed], angle)
            if fitted is None:
                continue
            n = np.array([np.cos(fitted), np.sin(fitted)])
            across = pts @ n
            rho_n = float(np.mean(across[seed]))
            on = ~taken & (np.abs(across - rho_n) < tolerance)
            on[on] = directions_apart(ang[on], fitted) < _MEMBER_ANGLE
            if np.count_nonzero(on) < min_cells:
                continue
            members = near[on]
            taken |= on
            along = np.array([-n[1], n[0]])
            planes.append(_profile(fitted, float(np.mean(across[on])), xy[members] @ along,
                                   centres[members, 2] - floor_z, bin_size, layer))
        free[near[taken]] = False
        # Cells on these planes facing askew (the noise turns normals at a plane's edges and where it is seen at a
        # grazing angle) seed no plane of their own: a line across them and what stands in front of them would
        # be one. Cells facing across (another wall, a cabinet's side) are left to their own planes.
        for plane in planes[first:]:
            left = np.flatnonzero(free)
            on = np.abs(xy[left] @ plane.normal - plane.offset) < tolerance
            left = left[on]
            t, apart = xy[left] @ plane.along, directions_apart(angles[left], plane.angle)
            free[left[(t >= plane.start) & (t <= plane.start + plane.bin * len(plane.high))
                      & (apart >= _MEMBER_ANGLE) & (apart <= 2 * _MEMBER_ANGLE)]] = False
    return planes


def _fit_line(xy: np.ndarray, angle: float) -> float | None:
    """The direction (radians) of the normal of the line through points (N, 2), turned to face ``angle``;
    None when they do not lie along a line facing about that way (a blob of things, not a plane)."""
    centred = xy - xy.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred)
    n = vectors[:, 0]  # the smallest spread: across the line
    if n @ np.array([np.cos(angle), np.sin(angle)]) < 0:
        n = -n
    fitted = float(np.arctan2(n[1], n[0]))
    if values[1] < _ELONGATION**2 * max(values[0], 1e-12) or directions_apart(fitted, angle) >= _MEMBER_ANGLE:
        return None
    return fitted


def _profile(angle: float, offset: float, t: np.ndarray, h: np.ndarray, bin_size: float,
             layer: float) -> PlaneProfile:
    start = float(np.floor(t.min() / bin_size) * bin_size)
    b = ((t - start) / bin_size).astype(np.int64)
    n = int(b.max()) + 1
    order = np.lexsort((h, b))  # by bin, then height: each bin's lowest and highest are its run's ends
    b, h = b[order], h[order]
    counts = np.bincount(b, minlength=n)
    ends = np.cumsum(counts)
    seen = counts > 0
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    low[seen], high[seen] = h[ends[seen] - counts[seen]], h[ends[seen] - 1]
    level = np.floor(h / layer).astype(np.int64)
    distinct = np.ones(len(b), bool)
    distinct[1:] = (b[1:] != b[:-1]) | (level[1:] != level[:-1])  # sorted: repeats are neighbours
    filled = np.bincount(b[distinct], minlength=n).astype(np.float64)
    fill = np.zeros(n)
    fill[seen] = filled[seen] / (np.round((high[seen] - low[seen]) / layer) + 1)
    return PlaneProfile(angle, offset, start, bin_size, low, high, np.minimum(fill, 1.0))


def plane_segments(plane: PlaneProfile, wall_height: float, front_top: tuple[float, float], front_bottom: float,
                   front_fill: float, max_gap: int) -> list[Segment]:
    """The plane's stretches of wall (bins reaching ``wall_height`` above the floor) and of furniture front
    (bins reaching from at most ``front_bottom`` up to a top within ``front_top``, filled to at least
    ``front_fill``), bridging up to ``max_gap`` bins where nothing was seen, and a front also across bins
    where only its top part was seen (a table or a chair stood in front of the cabinets' lower part)."""
    high, low = plane.high, plane.low
    seen = np.isfinite(high)
    wall = seen & (high >= wall_height)
    upper = seen & ~wall & (high >= front_top[0]) & (high <= front_top[1]) & (plane.fill >= front_fill)
    front = upper & (low <= front_bottom)
    out = []
    for kind, mask, hidden in (("wall", wall, np.zeros_like(wall)), ("front", front, upper & ~front)):
        for a, b in _runs(mask, ~seen, max_gap, hidden):
            t0, t1 = plane.start + a * plane.bin, plane.start + b * plane.bin
            top = float(np.nanmax(high[a:b])) if kind == "wall" else float(np.median(high[a:b][mask[a:b]]))
            out.append(Segment(plane, kind, t0, t1, top))
    return out


def _runs(mask: np.ndarray, empty: np.ndarray, max_gap: int, hidden: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of the runs of ``mask``, joined across at most ``max_gap`` ``empty`` bins and any number
    of ``hidden`` ones (partly hidden bins that agree with the run)."""
    runs: list[tuple[int, int]] = []
    k, n = 0, len(mask)
    while k < n:
        if not mask[k]:
            k += 1
            continue
        a = b = k
        while b < n:
            if mask[b]:
                b += 1
                continue
            gap, missing = b, 0
            while gap < n and (hidden[gap] or (empty[gap] and missing < max_gap)):
                missing += int(empty[gap])
                gap += 1
            if gap < n and mask[gap] and gap > b:
                b = gap
                continue
            break
        runs.append((a, b))
        k = b
    return runs


def directions_apart(angles: np.ndarray | float, angle: float) -> np.ndarray:
    """Angles between directed horizontal directions (radians in [0, pi])."""
    return np.abs(np.mod(np.asarray(angles) - angle + np.pi, 2 * np.pi) - np.pi)
