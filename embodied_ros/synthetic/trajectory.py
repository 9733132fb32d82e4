"""Robot-like camera trajectories through a synthetic room: camera-to-world poses, OpenCV optical.

A robot's camera rides on a mast at a fixed-ish height, looks slightly down, moves smoothly
through free floor space and turns mostly in yaw. Two kinds:
* LOOP: a closed loop through waypoints around the room's free middle, joined by shortest
  paths over the free floor (so the robot never drives through furniture) and smoothed, the
  camera looking mostly towards the room centre, with slow height, pitch and roll wobble;
* SPIN: the robot stands near the middle and turns on the spot, as in a "look around" scan.
Free space is a 2D grid of the floor where no object footprint (inflated by the robot's
radius) lies; the robot keeps to its largest connected piece.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from ..geometry.boxes import box_corners, points_in_boxes
from .scene_objects import RoomShell, SyntheticObject

_GRID = 0.05  # free-space grid cell, metres
_SHORT_LOOP = 4.0  # loops shorter than this (metres) turn the camera all the way round instead of looking inward


class TrajectoryKind(enum.Enum):
    """Shape of the camera path."""

    LOOP = "loop"
    SPIN = "spin"


@dataclass(frozen=True)
class TrajectoryConfig:
    """How camera paths are drawn."""

    kind: TrajectoryKind = TrajectoryKind.LOOP  # path shape
    n_frames: int = 60  # poses on the path
    loops: float = 1.0  # turns around the room (LOOP) or on the spot (SPIN) over the whole path
    height: tuple[float, float] = (1.1, 1.6)  # camera height range above the floor, metres
    pitch_deg: tuple[float, float] = (-30.0, -12.0)  # camera pitch range (negative = looking down), degrees
    roll_deg: float = 2.0  # amplitude of the roll wobble, degrees
    robot_radius: float = 0.3  # clearance kept from object footprints and walls, metres
    look_inward: float = 0.75  # 0 = look along the path, 1 = look at the room centre


def free_space(room: RoomShell, objects: list[SyntheticObject], radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Floor cells a robot of ``radius`` can stand in.

    Returns:
        (M, 2) float64 xy centres of the free cells, and the (gx, gy) bool grid (x index first).
    """
    xs = np.arange(-room.width / 2 + _GRID / 2, room.width / 2, _GRID)
    ys = np.arange(-room.depth / 2 + _GRID / 2, room.depth / 2, _GRID)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    free = (np.abs(X) < room.width / 2 - radius) & (np.abs(Y) < room.depth / 2 - radius)
    pts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1)
    for obj in objects:
        c = box_corners(obj.box)[0]
        if c[:, 2].min() > 1.9:
            continue
        if abs(obj.box[7]) < 1e-9 and abs(obj.box[8]) < 1e-9:  # upright: its rotated footprint, grown by radius
            grown = obj.box.copy()
            grown[3:5] += 2 * radius
            grown[2] = 0.0
            grown[5] = 1.0
            free &= ~points_in_boxes(pts, grown[None])[0].reshape(X.shape)
        else:  # tilted: its axis-aligned footprint, grown by radius
            lo, hi = c[:, :2].min(axis=0) - radius, c[:, :2].max(axis=0) + radius
            free &= ~((X >= lo[0]) & (X <= hi[0]) & (Y >= lo[1]) & (Y <= hi[1]))
    return np.stack([X[free], Y[free]], axis=1), free


def look_pose(position: np.ndarray, yaw: float, pitch: float, roll: float = 0.0) -> np.ndarray:
    """(4, 4) camera-to-world pose (OpenCV optical) at ``position`` looking along yaw/pitch (radians).

    World z is up; yaw is measured from world x towards y; negative pitch looks down.
    """
    f = np.array([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)])
    x = np.cross(f, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(f, x)
    c, s = np.cos(roll), np.sin(roll)
    x, y = c * x + s * y, -s * x + c * y
    T = np.eye(4)
    T[:3, :3] = np.stack([x, y, f], axis=1)
    T[:3, 3] = position
    return T


def _smooth_periodic(values: np.ndarray, width: int) -> np.ndarray:
    """Moving average of (N, ...) values over 2 * width + 1 samples on a closed loop."""
    if width < 1 or len(values) < 3:
        return values
    width = min(width, (len(values) - 1) // 2)
    idx = (np.arange(len(values))[:, None] + np.arange(-width, width + 1)[None]) % len(values)
    return values[idx].mean(axis=1)


def _rate_limited(yaw: np.ndarray, max_step: float) -> np.ndarray:
    """Yaw angles followed with at most ``max_step`` radians of turn per frame (a robot turns gradually,
    e.g. where its path doubles back)."""
    out = np.empty_like(yaw)
    out[0] = yaw[0]
    for i in range(1, len(yaw)):
        step = (yaw[i] - out[i - 1] + np.pi) % (2 * np.pi) - np.pi
        out[i] = out[i - 1] + np.clip(step, -max_step, max_step)
    return out


def _free_graph(free: np.ndarray) -> tuple[csr_matrix, np.ndarray]:
    """8-connected graph of the free cells (edge weights in metres) and the cell id grid (-1 = blocked)."""
    ids = np.full(free.shape, -1, dtype=np.int64)
    ids[free] = np.arange(int(free.sum()))
    rows, cols, weights = [], [], []
    gx, gy = free.shape
    for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
        a = ids[0:gx - dx, max(0, -dy):gy - max(0, dy)]  # cell (x, y)
        b = ids[dx:gx, max(0, dy):gy - max(0, -dy)]  # its neighbour (x + dx, y + dy)
        ok = (a >= 0) & (b >= 0)
        rows.append(a[ok])
        cols.append(b[ok])
        weights.append(np.full(int(ok.sum()), _GRID * np.hypot(dx, dy)))
    n = int(free.sum())
    graph = csr_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    return graph, ids


def _loop_path(cells: np.ndarray, graph: csr_matrix, centre: np.ndarray, theta0: float, direction: float,
               n_waypoints: int = 8) -> np.ndarray:
    """(P, 2) closed path through free cells visiting waypoints around ``centre`` (shortest paths between them)."""
    rel = cells - centre
    ang = np.arctan2(rel[:, 1], rel[:, 0])
    dist = np.linalg.norm(rel, axis=1)
    waypoints: list[int] = []
    for k in range(n_waypoints):
        th = theta0 + direction * 2 * np.pi * k / n_waypoints
        sector = np.abs((ang - th + np.pi) % (2 * np.pi) - np.pi) < np.pi / n_waypoints
        if not sector.any():
            continue
        target = 0.6 * dist[sector].max()  # well inside the free space, away from the furniture by the walls
        cand = np.flatnonzero(sector)
        best = int(cand[np.argmin(np.abs(dist[cand] - target))])
        if not waypoints or best != waypoints[-1]:
            waypoints.append(best)
    if len(waypoints) < 2:
        return cells[[int(np.argmin(dist))]]
    path: list[int] = []
    for a, b in zip(waypoints, waypoints[1:] + waypoints[:1], strict=True):
        _, pred = dijkstra(graph, directed=False, indices=a, return_predecessors=True)
        seg = [b]
        while seg[-1] != a and pred[seg[-1]] >= 0:
            seg.append(int(pred[seg[-1]]))
        path.extend(seg[::-1][:-1])
    return cells[np.array(path)]


def make_trajectory(room: RoomShell, objects: list[SyntheticObject], rng: np.random.Generator,
                    config: TrajectoryConfig = TrajectoryConfig()) -> np.ndarray:
    """(n_frames, 4, 4) camera-to-world poses along a robot-like path through the room.

    Raises:
        ValueError: if ``n_frames`` < 1.
    """
    n = int(config.n_frames)
    if n < 1:
        raise ValueError(f"n_frames must be >= 1, got {n}")
    cells, free = free_space(room, objects, config.robot_radius)
    if len(cells) == 0:  # a packed room: stand in its middle anyway
        cells, free = np.zeros((1, 2)), np.ones((1, 1), bool)
    graph, _ = _free_graph(free)
    # The robot lives in the largest connected piece of free floor.
    _, comp = connected_components(graph, directed=False)
    main = comp == np.bincount(comp).argmax()
    graph = graph[main][:, main]
    cells = cells[main]
    centre = cells[np.argmin(np.linalg.norm(cells, axis=1))]
    s = np.linspace(0.0, 1.0, n, endpoint=False)
    phase = rng.uniform(0, 2 * np.pi)
    direction = float(rng.choice([-1.0, 1.0]))
    h0 = rng.uniform(*config.height)
    heights = np.clip(h0 + 0.08 * np.sin(2 * np.pi * s * 2 + rng.uniform(0, 6)), *config.height)
    pitch0 = np.deg2rad(rng.uniform(*config.pitch_deg))
    pitches = pitch0 + np.deg2rad(4.0) * np.sin(2 * np.pi * s * 3 + rng.uniform(0, 6))
    rolls = np.deg2rad(config.roll_deg) * np.sin(2 * np.pi * s * 5 + rng.uniform(0, 6))
    wobble = np.deg2rad(10.0) * np.sin(2 * np.pi * s * 2 + rng.uniform(0, 6))
    if config.kind is TrajectoryKind.SPIN:
        xy = np.repeat(centre[None], n, axis=0)
        yaws = phase + direction * 2 * np.pi * config.loops * s
    else:
        path = _smooth_periodic(_loop_path(cells, graph, centre, phase, direction), 4)
        closed = np.concatenate([path, path[:1]])
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(closed, axis=0), axis=1))])
        at = (s * config.loops * arc[-1]) % max(arc[-1], 1e-9)
        xy = np.stack([np.interp(at, arc, closed[:, 0]), np.interp(at, arc, closed[:, 1])], axis=1)
        ahead = (at + 0.3) % max(arc[-1], 1e-9)
        nxt = np.stack([np.interp(ahead, arc, closed[:, 0]), np.interp(ahead, arc, closed[:, 1])], axis=1)
        tangent = nxt - xy
        inward = centre - xy
        unit = lambda v: v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6)  # noqa: E731
        # Near the centre the direction to it swings quickly: lean on the path direction there.
        w_in = config.look_inward * np.minimum(1.0, np.linalg.norm(inward, axis=1, keepdims=True) / 1.0)
        look = _smooth_periodic(w_in * unit(inward) + (1 - w_in) * unit(tangent), max(1, n // 30))
        yaws = _rate_limited(np.arctan2(look[:, 1], look[:, 0]), max(np.deg2rad(25.0), 4 * np.pi / n)) + wobble
        if arc[-1] < _SHORT_LOOP:  # cramped floor: the robot circles a little and turns all the way round
            yaws = phase + direction * 2 * np.pi * config.loops * s + wobble
    return np.stack([look_pose(np.array([xy[i, 0], xy[i, 1], heights[i]]), yaws[i], pitches[i], rolls[i])
                     for i in range(n)])
