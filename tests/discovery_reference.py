"""Standing things one piece at a time, as discovery found them before its pieces were tested together (issue 41):
a slow reference that tests compare ``standing_things`` with, thing for thing.

Kept as it was (a Python loop over the pieces, numpy's median, one box fit and one support look-up per piece); the
rules it calls per piece (``_seen_below``, ``_unseen_support``, ``on_wall``, the colour split) are discovery's own.
"""

from __future__ import annotations

import numpy as np

from embodied_ros.geometry.fitting import fit_upright_box
from embodied_ros.memory.depth_grid import connected_groups, label_runs, piece_edges
from embodied_ros.memory.room_surfaces import on_wall
from embodied_ros.memory.standing_things import (
    _bottom,
    _rest_on,
    _seen_below,
    _unseen_support,
    sample_spacing,
    split_by_colour,
)


def _base(piece: np.ndarray, cols: np.ndarray, band: float) -> np.ndarray:
    bottom = _bottom(piece, cols)
    base = piece[piece[:, 2] <= bottom + band].copy()
    base[:, 2] = np.maximum(base[:, 2], bottom)
    return base


def standing_things(p, supports, frame, s, labels, n, hidden, floor_z, walls) -> list[tuple]:
    """memory/standing_things.py's ``standing_things``, one piece at a time."""
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
    lows = np.flatnonzero(keep)
    lowest = pts[[starts[j] + int(np.argmin(pts[starts[j]:ends[j], 2])) for j in lows]].reshape(-1, 3)
    edge = piece_edges(labels).ravel()[order]
    hidden = hidden.ravel()[order]
    pieces = []
    for j in np.flatnonzero(keep):
        r, c = rows[starts[j]:ends[j]], cols[starts[j]:ends[j]]
        if r.min() == 0 or c.min() == 0 or r.max() == h - 1 or c.max() == w - 1:
            continue
        piece = pts[starts[j]:ends[j]]
        top = edge[starts[j]:ends[j]] & (piece[:, 2] >= hi[j, 2] - 0.25 * ext[j, 2])
        if hidden[starts[j]:ends[j]][top].sum() > p.max_hidden_top * max(top.sum(), 1):
            continue
        slack = p.contact_per_m2 * float(np.median(s.depth[r, c])) ** 2
        pieces.append((piece, _base(piece, c, p.base_band), r, c, j, slack))
    if not pieces:
        return []
    bases = np.concatenate([piece[1] for piece in pieces])
    owner = np.repeat(np.arange(len(pieces)), [len(piece[1]) for piece in pieces])
    slack = np.array([piece[5] for piece in pieces])
    bases[:, 2] += slack[owner]
    touching = supports.surface_near(bases, p.contact_below + slack.max(), p.contact_above)
    contact = np.bincount(owner, weights=touching, minlength=len(pieces)) / np.bincount(owner)
    levels = supports.levels(p.level_cells)
    things = []
    for j in range(len(pieces)):
        piece, base, r, c, label, slack = pieces[j]
        if contact[j] >= p.min_contact:
            support_z = supports.height_under(bases[owner == j][touching[owner == j]],
                                              p.contact_below + slack, p.contact_above)
        else:
            fixture = on_wall(piece, walls, p.fixture_depth)
            support_z = None if fixture else _seen_below(p, piece, r, c, s, labels, slack)
            if support_z is None:
                others = lowest[lows != label]
                support_z = _unseen_support(p, supports, base, r, c, piece, s, levels, floor_z, others, slack)
            if support_z is None:
                continue
        above = piece[:, 2] > support_z + p.support_tol
        for part in (sub for apart in connected_groups(r[above], c[above]) for sub in
                     split_by_colour(p, piece[above][apart], r[above][apart], c[above][apart], frame)):
            thing, rr, cc = piece[above][part], r[above][part], c[above][part]
            if len(thing) < p.min_points:
                continue
            box = _rest_on(fit_upright_box(thing, pad=sample_spacing(p.pixel_stride, frame, s, rr, cc)), support_z)
            size = box[3:6]
            if size.max() > p.max_size or size[2] < p.min_height or size[2] > p.max_slenderness * size[0]:
                continue
            things.append((box, thing, rr, cc, support_z))
    return things
