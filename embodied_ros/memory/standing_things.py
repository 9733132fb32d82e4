"""The pieces of a keyframe's depth that are things standing on a support (memory/discovery.py's rules).

A piece is a thing when its base touches a support seen beside it (the support map, or a surface just
below it in the image), or stands where a support must be though none is seen (the floor, a black
worktop, a height other pieces end at too); what rises above the support is the thing, split where its
colours part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..frame import Frame
from ..geometry.fitting import fit_upright_boxes
from ..geometry.grouped import group_medians, medians
from .depth_grid import DepthSamples, connected_groups, label_runs, piece_edges
from .object_colour import to_lab
from .room_surfaces import SupportMap, on_wall

if TYPE_CHECKING:
    from .discovery import DiscoveryParams


def split_by_colour(p: DiscoveryParams, piece: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                    frame: Frame) -> list[np.ndarray]:
    """The piece as one or two index arrays: two things that touch side by side (a brochure beside a
    wooden model) are one piece of depth; their colours part them, at the cut along the piece's long
    horizontal axis where the mean colours of the two sides differ most, when they differ by at least
    ``split_colour`` (CIELAB) and the colours of ``split_purity`` of the samples are nearer their own
    side's mean (a multicoloured thing mixes its colours on both sides of any cut)."""
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

def _seen_below(p: DiscoveryParams, piece: np.ndarray, rows: np.ndarray, cols: np.ndarray, s: DepthSamples,
                labels: np.ndarray, slack: float) -> float | None:
    """The height of a surface the piece's base touches in the image (or None): just below its lowest
    samples, in at least ``min_contact`` of their columns, other samples at the base's height and
    within ``contact_reach`` of it horizontally (a worktop whose normals the noise tilts; a chair's
    backrest seen over the table's far edge ends well behind the edge)."""
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
    return float(medians(np.concatenate(heights)))

def _unseen_support(p: DiscoveryParams, supports: SupportMap, base: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                    piece: np.ndarray, s: DepthSamples, levels: np.ndarray, floor_z: float | None,
                    bases: np.ndarray, slack: float) -> float | None:
    """The height of the support a piece stands on where none was seen beside it, or None: the floor
    (it goes on under everything), or an unseen surface (no depth just below the piece: a black
    worktop) of a height seen within ``unseen_reach`` of it, or on which other pieces of the frame
    stand too (``bases``: (M, 3) the other pieces' lowest points: several things ending at one
    height with nothing seen below them stand on something there)."""
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
    if len(near) and supports.surface_near(base[:1], p.contact_below, above, reach)[0]:
        return float(near[np.argmin(np.abs(near - bottom))])
    level = bases[np.abs(bases[:, 2] - bottom) <= p.shared_base]
    spread = np.ptp(np.vstack([level[:, :2], base[:1, :2]]), axis=0).max() if len(level) else 0.0
    if len(level) >= p.shared_pieces and spread >= p.min_support_span:
        return float(medians(np.append(level[:, 2], bottom)))
    return None


def sample_spacing(pixel_stride: int, frame: Frame, s: DepthSamples, rr: np.ndarray, cc: np.ndarray) -> float:
    """The distance (m) between neighbouring samples at the depth of these."""
    return float(medians(s.depth[rr, cc])) * pixel_stride / frame.K[0, 0]


def standing_things(p: DiscoveryParams, supports: SupportMap, frame: Frame, s: DepthSamples, labels: np.ndarray,
                    n: int, hidden: np.ndarray, floor_z: float | None, walls: np.ndarray) -> list[tuple]:
    """The pieces that are things standing on a support: per thing (box, points, rows, columns, support
    height)."""
    found = _pieces(p, s, labels, n, hidden)
    if found is None:
        return []
    pieces, lowest, lows = found
    # Each piece's base must touch a support: one look-up for all of them.
    bases = np.concatenate([piece[1] for piece in pieces])
    owner = np.repeat(np.arange(len(pieces)), [len(piece[1]) for piece in pieces])
    slack = np.array([piece[5] for piece in pieces])
    bases[:, 2] += slack[owner]  # a surface up to contact_above + slack over the base: the window moves up
    cells, layers = supports.cells_near(bases, p.contact_below + slack.max(), p.contact_above)
    touching = cells.any(axis=1)
    contact = np.bincount(owner, weights=touching, minlength=len(pieces)) / np.bincount(owner)
    levels = supports.levels(p.level_cells)
    parts = []  # (points, rows, columns, support height) of each part above its support
    for j in range(len(pieces)):
        piece, base, r, c, label, slack = pieces[j]
        if contact[j] >= p.min_contact:
            # supports.height_under(its touching bases, p.contact_below + slack, ...), from the cells found above
            window = layers >= -int(np.ceil((p.contact_below + slack) / supports.layer))
            support_z = supports.height_of(bases[owner == j], cells[owner == j] & window, layers)
        else:  # on a wall (a socket, a poster, a pocket): the wall under it is no surface it stands on
            fixture = on_wall(piece, walls, p.fixture_depth)
            support_z = None if fixture else _seen_below(p, piece, r, c, s, labels, slack)
            if support_z is None:
                others = lowest[lows != label]
                support_z = _unseen_support(p, supports, base, r, c, piece, s, levels, floor_z, others, slack)
            if support_z is None:
                continue  # standing on nothing: part of something larger, or of the room
        above = piece[:, 2] > support_z + p.support_tol  # the support's own samples are not the thing's
        for part in (sub for apart in connected_groups(r[above], c[above]) for sub in
                     split_by_colour(p, piece[above][apart], r[above][apart], c[above][apart], frame)):
            thing, rr, cc = piece[above][part], r[above][part], c[above][part]
            if len(thing) >= p.min_points:
                parts.append((thing, rr, cc, support_z))
    if not parts:
        return []
    pad = np.array([[sample_spacing(p.pixel_stride, frame, s, rr, cc)] for _, rr, cc, _ in parts])
    group = np.repeat(np.arange(len(parts)), [len(part[0]) for part in parts])
    boxes = fit_upright_boxes(np.concatenate([part[0] for part in parts]), group, len(parts), pad=pad)
    things = []
    for box, (thing, rr, cc, support_z) in zip(boxes, parts, strict=True):
        box = _rest_on(box, support_z)
        size = box[3:6]
        if size.max() > p.max_size or size[2] < p.min_height or size[2] > p.max_slenderness * size[0]:
            continue  # too large, too flat, or a pole
        things.append((box, thing, rr, cc, support_z))
    return things


def _pieces(p: DiscoveryParams, s: DepthSamples, labels: np.ndarray, n: int, hidden: np.ndarray
            ) -> tuple[list[tuple], np.ndarray, np.ndarray] | None:
    """The pieces that may stand on something, all at once (array operations grouped by piece): not larger than
    an object, inside the image, their top not hidden. Per piece (points, base, rows, columns, its index among the
    pieces of ``min_points``, contact slack); and the lowest point of each piece of an object's size with the
    index of its piece (``_unseen_support``'s other bases). None: no piece."""
    counts = np.bincount(labels.ravel(), minlength=n + 1)
    ids = np.flatnonzero(counts >= p.min_points)
    ids = ids[ids > 0]
    if len(ids) == 0:
        return None
    lo, hi, order, first = label_runs(labels, n, s.points)
    ext = hi[ids] - lo[ids]
    lows = np.flatnonzero((ext.max(axis=1) <= 1.2 * p.max_size) & (ext[:, 2] >= p.min_height))
    if len(lows) == 0:
        return None
    # The samples of those pieces, piece after piece (each in label_runs' order), as flat indices ``at``.
    sizes = counts[ids[lows]]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    group = np.repeat(np.arange(len(lows)), sizes)
    at = order[np.repeat(first[ids[lows]] - starts, sizes) + np.arange(len(group))]
    pts = s.points.reshape(-1, 3)[at].astype(np.float64)
    z = pts[:, 2]
    by_height = np.lexsort((z, group))  # stable: a piece's first lowest sample first
    lowest = pts[by_height[starts]]
    h, w = labels.shape
    rows, cols = np.divmod(at, w)
    cut = ((np.minimum.reduceat(rows, starts) == 0) | (np.minimum.reduceat(cols, starts) == 0)
           | (np.maximum.reduceat(rows, starts) == h - 1) | (np.maximum.reduceat(cols, starts) == w - 1))
    top = piece_edges(labels).ravel()[at] & (z >= (hi[ids[lows], 2] - 0.25 * ext[lows, 2])[group])
    hidden_top = np.add.reduceat(hidden.ravel()[at] & top, starts, dtype=np.int64)
    covered = hidden_top > p.max_hidden_top * np.maximum(np.add.reduceat(top, starts, dtype=np.int64), 1)
    # np.median of float32 depth (rounded from the exact float64 median: the same number)
    depth = group_medians(s.depth.ravel()[at].astype(np.float64), group, len(lows)).astype(np.float32)
    bottom = _bottoms(z, cols, group, len(lows))
    in_base = z <= (bottom + p.base_band)[group]
    pieces = []
    for k in np.flatnonzero(~cut & ~covered):  # cut by the image's edge, or its top hidden: part of something larger
        span = slice(starts[k], starts[k] + sizes[k])
        base = pts[span][in_base[span]]  # its samples within base_band of its bottom, none below it
        base[:, 2] = np.maximum(base[:, 2], bottom[k])
        slack = p.contact_per_m2 * float(depth[k]) ** 2
        pieces.append((pts[span], base, rows[span], cols[span], lows[k], slack))
    return (pieces, lowest, lows) if pieces else None


def _bottoms(z: np.ndarray, cols: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """(G,) each piece's ``_bottom``: the median height of its lowest sample in each image column."""
    order = np.lexsort((z, cols, group))
    g, c = group[order], cols[order]
    firsts = order[np.concatenate([[True], (g[1:] != g[:-1]) | (c[1:] != c[:-1])])]
    return group_medians(z[firsts], group[firsts], n_groups)


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
    return float(medians(piece[firsts, 2]))


def _rest_on(box: np.ndarray, support_z: float) -> np.ndarray:
    """The box reaching down to its support (the support layer took the object's lowest centimetres)."""
    if not np.isfinite(support_z):
        return box
    top = box[2] + 0.5 * box[5]
    b = box.copy()
    b[2], b[5] = 0.5 * (top + support_z), max(top - support_z, 1e-3)
    return b
