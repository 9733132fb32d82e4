"""A ROS-free transform tree (like tf2's Buffer) for looking up poses recorded in a bag.

Each child frame has one parent edge, static (time-independent) or dynamic (a time series).
A lookup composes the edges up to the common ancestor of the two frames, as tf2 does.
Dynamic edges are interpolated between the two samples around the query time (linear
translation, slerp rotation); outside a series' time span a lookup fails unless it lies within
``extrapolation_ns`` of the first/last sample, which is then used as is.
Frame ids are compared without a leading "/" (tf2 strips it too).

A live node adds poses on one executor thread while another looks up an image's pose, so every call holds the
buffer's lock (as tf2's Buffer does); a live buffer keeps ``cache_ns`` of each dynamic edge (tf2 keeps 10 s),
a recording's buffer everything.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from ..geometry.transforms import invert_transform, make_transform

_MAX_DEPTH = 256  # longer parent chains mean a cycle in the recorded tree


def normalise_frame_id(frame_id: str) -> str:
    """tf2 frame ids are compared without a leading slash."""
    return frame_id.lstrip("/")


@dataclass
class _DynamicEdge:
    """Samples of T_parent_child over time (unsorted until ``_finalise``)."""

    parent: str
    stamps: list[int] = field(default_factory=list)
    transforms: list[np.ndarray] = field(default_factory=list)
    _t: np.ndarray | None = None  # sorted stamps, int64 ns
    _trans: np.ndarray | None = None  # (N, 3)
    _rot: Rotation | None = None  # N rotations

    def _finalise(self) -> None:
        order = np.argsort(np.asarray(self.stamps, dtype=np.int64), kind="stable")
        mats = np.stack(self.transforms)[order]
        self._t = np.asarray(self.stamps, dtype=np.int64)[order]
        self._trans = mats[:, :3, 3]
        self._rot = Rotation.from_matrix(mats[:, :3, :3])

    def at(self, stamp_ns: int, extrapolation_ns: int) -> np.ndarray | None:
        if self._t is None:
            self._finalise()
        assert self._t is not None and self._trans is not None and self._rot is not None
        t = self._t
        if stamp_ns <= t[0]:
            return self._sample(0) if t[0] - stamp_ns <= extrapolation_ns else None
        if stamp_ns >= t[-1]:
            return self._sample(len(t) - 1) if stamp_ns - t[-1] <= extrapolation_ns else None
        hi = int(np.searchsorted(t, stamp_ns, side="left"))
        if t[hi] == stamp_ns:
            return self._sample(hi)
        lo = hi - 1
        alpha = (stamp_ns - t[lo]) / float(t[hi] - t[lo])
        r0 = self._rot[lo]
        delta = (r0.inv() * self._rot[hi]).as_rotvec()
        rot = r0 * Rotation.from_rotvec(alpha * delta)
        trans = (1.0 - alpha) * self._trans[lo] + alpha * self._trans[hi]
        return make_transform(rot.as_matrix(), trans)

    def _sample(self, i: int) -> np.ndarray:
        assert self._trans is not None and self._rot is not None
        return make_transform(self._rot[i].as_matrix(), self._trans[i])

    def span(self) -> tuple[int, int]:
        return min(self.stamps), max(self.stamps)

    def forget_before(self, stamp_ns: int) -> None:
        """Drop the samples older than ``stamp_ns``, the newest always kept."""
        keep = [i for i, s in enumerate(self.stamps) if s >= stamp_ns]
        if len(keep) < len(self.stamps):
            keep = keep or [int(np.argmax(self.stamps))]
            self.stamps = [self.stamps[i] for i in keep]
            self.transforms = [self.transforms[i] for i in keep]
            self._t = None


class TransformBuffer:
    """Transforms between named frames over time.

    Args:
        extrapolation_ns: how far before the first or after the last sample of a dynamic edge
            a lookup may still use that sample (0 = tf2's strict behaviour).
        cache_ns: a dynamic edge keeps the samples this much older than its newest, all when None (a
            recording); a live stream's buffer would otherwise grow, and each lookup after a new sample sorts
            them all again.
    """

    def __init__(self, extrapolation_ns: int = 0, cache_ns: int | None = None) -> None:
        self.extrapolation_ns = int(extrapolation_ns)
        self.cache_ns = cache_ns
        self._static: dict[str, tuple[str, np.ndarray]] = {}
        self._dynamic: dict[str, _DynamicEdge] = {}
        self._lock = threading.Lock()

    def add(self, parent: str, child: str, stamp_ns: int, T_parent_child: np.ndarray, static: bool = False) -> None:
        """Record the pose of ``child`` in ``parent`` (4x4, child-to-parent) at ``stamp_ns``.

        A child has one parent: a new parent replaces the old edge (static or dynamic), like a
        re-parented tf frame. A static edge replaces an earlier static edge of the same child.
        """
        parent, child = normalise_frame_id(parent), normalise_frame_id(child)
        T = np.asarray(T_parent_child, dtype=np.float64).reshape(4, 4)
        with self._lock:
            self._add(parent, child, int(stamp_ns), T, static)

    def _add(self, parent: str, child: str, stamp_ns: int, T: np.ndarray, static: bool) -> None:
        if static:
            self._static[child] = (parent, T)
            self._dynamic.pop(child, None)
            return
        edge = self._dynamic.get(child)
        if edge is None or edge.parent != parent:
            edge = self._dynamic[child] = _DynamicEdge(parent)
            self._static.pop(child, None)
        edge.stamps.append(stamp_ns)
        edge.transforms.append(T)
        edge._t = None  # new sample: re-sort on the next lookup
        if self.cache_ns is not None and len(edge.stamps) % 64 == 0:  # now and then: a pass over the samples
            edge.forget_before(max(edge.stamps) - self.cache_ns)

    @property
    def frames(self) -> set[str]:
        """Every frame id that appears as a parent or a child."""
        with self._lock:
            return self._frames()

    def _frames(self) -> set[str]:
        names = set(self._static) | set(self._dynamic)
        names |= {p for p, _ in self._static.values()} | {e.parent for e in self._dynamic.values()}
        return names

    def _parent_edge(self, child: str, stamp_ns: int) -> tuple[str, np.ndarray] | None:
        """(parent, T_parent_child at stamp_ns) or None at a root; LookupError when out of range."""
        if child in self._static:
            return self._static[child]
        edge = self._dynamic.get(child)
        if edge is None:
            return None
        T = edge.at(stamp_ns, self.extrapolation_ns)
        if T is None:
            first, last = edge.span()
            raise LookupError(
                f"no transform {edge.parent} -> {child} at t={stamp_ns} ns (recorded from {first} to {last} ns)"
            )
        return edge.parent, T

    def _chain_to_root(self, frame: str, stamp_ns: int) -> dict[str, np.ndarray]:
        """{ancestor: T_ancestor_frame} for ``frame`` and each of its ancestors."""
        chain = {frame: np.eye(4)}
        current, T = frame, np.eye(4)
        for _ in range(_MAX_DEPTH):
            edge = self._parent_edge(current, stamp_ns)
            if edge is None:
                return chain
            current, T = edge[0], edge[1] @ T
            if current in chain:
                raise LookupError(f"transform tree has a cycle through {current}")
            chain[current] = T
        raise LookupError(f"transform chain above {frame} is longer than {_MAX_DEPTH} frames")

    def lookup(self, target: str, source: str, stamp_ns: int) -> np.ndarray:
        """T_target_source at ``stamp_ns``: maps points in ``source`` coordinates into ``target``.

        Raises:
            LookupError: a frame is unknown, the two frames are not connected, or a dynamic
                edge on the way has no sample near ``stamp_ns``.
        """
        target, source = normalise_frame_id(target), normalise_frame_id(source)
        with self._lock:
            return self._lookup(target, source, stamp_ns)

    def _lookup(self, target: str, source: str, stamp_ns: int) -> np.ndarray:
        known = self._frames()
        for name in (target, source):
            if name not in known:
                listed = ", ".join(sorted(known)) or "none"
                raise LookupError(f"frame {name!r} is not in the transform tree (frames: {listed})")
        source_chain = self._chain_to_root(source, stamp_ns)
        current, T_current_target = target, np.eye(4)
        for _ in range(_MAX_DEPTH):
            if current in source_chain:
                return invert_transform(T_current_target) @ source_chain[current]
            edge = self._parent_edge(current, stamp_ns)
            if edge is None:
                raise LookupError(f"frames {target!r} and {source!r} are not connected in the transform tree")
            current, T_current_target = edge[0], edge[1] @ T_current_target
        raise LookupError(f"transform chain above {target} is longer than {_MAX_DEPTH} frames")
