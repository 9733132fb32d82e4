"""Past views of the room, kept small: was a place seen empty before something stood there?

A new object is a change only where the map had looked before and seen free space or a surface
(memory/changes.py); an object first detected late, that stood there all along, is no change. To
tell the two apart, the memory keeps a depth thumbnail of a keyframe per place (a cell of camera
positions, as existence counts looks), heading and visit: the depth pooled to its nearest valid value
over ``pool`` x ``pool`` pixels (a cell is "farther" only when all of it is, so a thin leg or the
object's own edge never reads as empty), with the camera's pose and intrinsics. Of each place and
heading the first visit and the latest are kept, so a later pass over the room does not erase what
the first pass saw. About 10 kB a view (80 x 60 half floats for 640 x 480 depth).
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..frame import Frame

ViewKey = tuple[int, int, int, int, int]  # place cell (x, y, z), heading bin, pitch bin

_YAW_BINS = 8
_PITCH_EDGES = (math.radians(-35.0), math.radians(-10.0))  # steeply down / down / level or up


@dataclass(frozen=True)
class PooledView:
    """One past keyframe's depth, pooled.

    Attributes:
        depth: (h, w) float16 metres, the nearest valid depth of each ``pool`` x ``pool`` cell; inf
            where the cell held none.
        K: (3, 3) intrinsics of the pooled image.
        T_world_camera: (4, 4) camera-to-world pose.
        stamp_ns: the keyframe's stamp.
        look: (place, visit start in ns) of the look it belongs to.
    """

    depth: np.ndarray
    K: np.ndarray
    T_world_camera: np.ndarray
    stamp_ns: int
    look: tuple[tuple[int, int, int], int]


@dataclass(frozen=True)
class ViewJudgement:
    """How a set of world points fell in one past view: inside the image and observed, seen at their depth,
    hidden behind something nearer, or seen through (the view saw farther than them)."""

    stamp_ns: int
    look: tuple[tuple[int, int, int], int]
    inside: int
    seen: int
    hidden: int
    through: int


def pool_depth(depth: np.ndarray, pool: int) -> np.ndarray:
    """(H // pool, W // pool) float16 nearest valid depth of each cell (inf where none is valid), from every
    other pixel of the cell along each axis when ``pool`` is even (a quarter of the work, and no surface
    worth a change is one pixel wide). Rows, then columns, by strided minima: about a millisecond."""
    h, w = depth.shape[0] // pool, depth.shape[1] // pool
    step = 2 if pool % 2 == 0 else 1
    sub = depth[:h * pool:step, :w * pool:step]
    sub = np.where(sub > 0, sub, np.inf)  # NaN > 0 is False: invalid too
    k = pool // step  # pixels of a cell along each axis, after the subsampling
    rows = sub[0::k].copy()
    for i in range(1, k):
        np.minimum(rows, sub[i::k], out=rows)
    out = rows[:, 0::k].copy()
    for j in range(1, k):
        np.minimum(out, rows[:, j::k], out=out)
    return out.astype(np.float16)


def view_key(place: tuple[int, int, int], T_world_camera: np.ndarray) -> ViewKey:
    """The place and the heading (8 yaw bins) and pitch (3 bins) of the camera's optical axis."""
    fx, fy, fz = (float(c) for c in T_world_camera[:3, 2])
    yaw = int((math.atan2(fy, fx) + math.pi) / (2 * math.pi) * _YAW_BINS) % _YAW_BINS
    pitch = math.asin(max(-1.0, min(1.0, fz)))
    return (*place, yaw, sum(pitch > edge for edge in _PITCH_EDGES))


class ViewStore:
    """Thumbnails of past keyframes: the first and the latest visit of each place and heading.

    Args:
        pool: pixels pooled into one cell along each image axis.
        max_views: bound on the views kept; past it the latest visits longest ago go first (first
            visits are kept longest: they are what "before" means to a returning robot).
    """

    def __init__(self, pool: int = 8, max_views: int = 800) -> None:
        self.pool = int(pool)
        self.max_views = int(max_views)
        self._first: dict[ViewKey, PooledView] = {}
        self._latest: dict[ViewKey, PooledView] = {}
        self._groups: dict[tuple[int, ...], _Slots] = {}  # the views as arrays, one group per image size

    def __len__(self) -> int:
        return len(self._first) + len(self._latest)

    def views(self) -> list[PooledView]:
        return [*self._first.values(), *self._latest.values()]

    def clear(self) -> None:
        self._first.clear()
        self._latest.clear()
        self._groups.clear()

    def _put(self, pool: dict[ViewKey, PooledView], key: ViewKey, view: PooledView) -> None:
        old = pool.get(key)
        if old is not None:
            self._groups[old.depth.shape].remove(old)
        pool[key] = view
        self._groups.setdefault(view.depth.shape, _Slots(view.depth.shape)).add(view)

    def _drop(self, pool: dict[ViewKey, PooledView], key: ViewKey) -> None:
        view = pool.pop(key)
        self._groups[view.depth.shape].remove(view)

    def add(self, frame: Frame, place: tuple[int, int, int], visit_ns: int) -> bool:
        """Keep ``frame`` when it is the first view of its place and heading in this visit; True if kept."""
        key = view_key(place, frame.T_world_camera)
        first, latest = self._first.get(key), self._latest.get(key)
        if first is not None and (first.look[1] == visit_ns or (latest is not None and latest.look[1] == visit_ns)):
            return False  # this look already has its view from here
        K = frame.K.copy()
        K[:2] /= self.pool  # pixel u of the full image falls in cell floor(u / pool)
        view = PooledView(pool_depth(frame.depth, self.pool), K, frame.T_world_camera.copy(), int(frame.stamp_ns),
                          (place, int(visit_ns)))
        self._put(self._latest if first is not None else self._first, key, view)
        while len(self) > self.max_views:
            pool = self._latest if self._latest else self._first
            self._drop(pool, min(pool, key=lambda k: pool[k].stamp_ns))
        return True

    def judge(self, points: np.ndarray, tolerance: float, before_ns: int, margin: float = 0.05,
              margin_per_m: float = 0.02, max_depth: float = 4.0) -> list[ViewJudgement]:
        """How ``points`` (P, 3) fell in each view taken before ``before_ns`` that had them in range, oldest first.

        The depth margin is that of memory/visibility.py plus ``tolerance`` (half a box's extent for box samples).
        One batched projection per image size.
        """
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        out: list[ViewJudgement] = []
        if not len(pts):
            return out
        for group in self._groups.values():
            depths, K, T, stamps, views = group.depth, group.K, group.T, group.stamps, group.views
            pick = np.flatnonzero((stamps >= 0) & (stamps < before_ns))
            if not len(pick):
                continue
            R, t = T[pick, :3, :3], T[pick, :3, 3]
            cam = np.einsum("vpi,vij->vpj", pts[None] - t[:, None], R)  # (V, P, 3): R^T (p - t)
            z = cam[..., 2]
            h, w = depths.shape[1:]
            with np.errstate(divide="ignore", invalid="ignore"):
                u = np.floor(K[pick, 0, 0, None] * cam[..., 0] / z + K[pick, 0, 2, None])
                v = np.floor(K[pick, 1, 1, None] * cam[..., 1] / z + K[pick, 1, 2, None])
            inside = (z > 0.1) & (z <= max_depth) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
            d = np.full(z.shape, np.inf)
            vi = np.broadcast_to(pick[:, None], z.shape)
            d[inside] = depths[vi[inside], v[inside].astype(np.int64), u[inside].astype(np.int64)]
            inside &= np.isfinite(d)
            tol = margin + margin_per_m * z + tolerance
            counts = [inside, inside & (np.abs(d - z) <= tol), inside & (d < z - tol), inside & (d > z + tol)]
            n_in, n_seen, n_hidden, n_through = (c.sum(axis=1) for c in counts)
            out += [ViewJudgement(int(stamps[k]), views[k].look, int(n_in[a]), int(n_seen[a]), int(n_hidden[a]),
                                  int(n_through[a])) for a, k in enumerate(pick) if n_in[a]]
        return sorted(out, key=lambda j: j.stamp_ns)

    # ---- persistence (inside memory.json) ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        def one(key: ViewKey, view: PooledView, first: bool) -> dict[str, Any]:
            return {"key": list(key), "first": first, "shape": list(view.depth.shape),
                    "depth": base64.b64encode(zlib.compress(view.depth.tobytes())).decode("ascii"),
                    "K": view.K.ravel().tolist(), "T": view.T_world_camera.ravel().tolist(),
                    "stamp_ns": view.stamp_ns, "place": list(view.look[0]), "visit_ns": view.look[1]}

        return {"pool": self.pool, "max_views": self.max_views,
                "views": [one(k, v, True) for k, v in self._first.items()]
                + [one(k, v, False) for k, v in self._latest.items()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ViewStore:
        store = cls(int(data.get("pool", 8)), int(data.get("max_views", 800)))
        for o in data.get("views", ()):
            depth = np.frombuffer(zlib.decompress(base64.b64decode(o["depth"])), dtype=np.float16)
            view = PooledView(depth.reshape(o["shape"]).copy(), np.array(o["K"], dtype=np.float64).reshape(3, 3),
                              np.array(o["T"], dtype=np.float64).reshape(4, 4), int(o["stamp_ns"]),
                              (tuple(int(c) for c in o["place"]), int(o["visit_ns"])))
            store._put(store._first if o["first"] else store._latest, tuple(int(c) for c in o["key"]), view)
        return store


class _Slots:
    """Views of one image size as arrays, for one batched projection: slots are reused, free ones have stamp -1."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.depth = np.zeros((0, *shape), np.float16)
        self.K, self.T = np.zeros((0, 3, 3)), np.zeros((0, 4, 4))
        self.stamps = np.zeros(0, np.int64)
        self.views: list[PooledView | None] = []
        self._slot: dict[int, int] = {}  # id(view) -> slot

    def add(self, view: PooledView) -> None:
        free = np.flatnonzero(self.stamps < 0)
        if len(free):
            k = int(free[0])
        else:  # grow by half again (amortised constant)
            k, n = len(self.stamps), max(8, len(self.stamps) // 2)
            self.depth = np.concatenate([self.depth, np.zeros((n, *self.depth.shape[1:]), np.float16)])
            self.K = np.concatenate([self.K, np.zeros((n, 3, 3))])
            self.T = np.concatenate([self.T, np.zeros((n, 4, 4))])
            self.stamps = np.concatenate([self.stamps, np.full(n, -1, np.int64)])
            self.views += [None] * n
        self.depth[k], self.K[k], self.T[k], self.stamps[k] = view.depth, view.K, view.T_world_camera, view.stamp_ns
        self.views[k] = view
        self._slot[id(view)] = k

    def remove(self, view: PooledView) -> None:
        k = self._slot.pop(id(view))
        self.stamps[k], self.views[k] = -1, None
