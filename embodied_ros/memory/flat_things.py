"""Flat things on a support, found by their appearance: magazines, papers, a phone lying on a table.

A thing a few millimetres to a few centimetres high lies inside the support's own height band: depth cannot
tell it from the table. Its colour can. Per connected surface of a frame's support samples (memory/discovery.py:
up-facing surfaces in dense height layers, and those the support map knows):

* the surface's own colours are those that hold at least ``own_share`` of its samples (CIELAB bins of ``bin``
  units with their neighbours, lightness counted half: shading changes lightness more than hue); the table's
  grain and a carpet's two stripes are its own;
* a sample whose colour lies ``contrast`` away from every own colour is foreign, and a connected group of
  foreign samples is a flat thing when it is compact (between ``min_side`` and ``max_size`` along its
  footprint's axes, at least ``min_samples`` samples), lies inside the image, and lies on the surface: at least
  ``enclosed`` of the samples around it in the image are the surface's own (a shadow, or a patch at a table's
  edge, meets the thing that casts it or the edge);
* it does not lie on the floor: floors carry patterns (rugs, tiles) and the shadows of furniture, which colour
  alone cannot tell from a thing.

The memory then asks of a flat thing what it asks of every unknown object: looks from several places (a
highlight on a glossy table moves with the camera; a magazine stays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from ..geometry.grouped import percentiles
from .object_colour import to_lab


@dataclass(frozen=True)
class FlatParams:
    """The rules of flat things (module notes). Defaults suit Kinect-class RGB-D and everyday things."""

    # A surface: connected support samples, at least min_surface of them.
    min_surface: int = 60
    # Its own colours hold at least own_share of its samples (in CIELAB bins of bin units and their neighbours).
    own_share: float = 0.15
    bin: float = 8.0
    # A sample at least contrast (CIELAB, lightness counted half) from every own colour is foreign.
    contrast: float = 22.0
    # A flat thing: between min_side and max_size (m) along its footprint's axes, at least min_samples samples,
    # with at least enclosed of the samples around it the surface's own.
    min_side: float = 0.05
    max_size: float = 0.6
    min_samples: int = 6
    enclosed: float = 0.7
    # ... at the surface's height, within same_height (m).
    same_height: float = 0.03
    # Surfaces within this height (m) of the floor are not looked at.
    floor_clearance: float = 0.05
    # The height (m) of a flat thing's box where the depth shows less (it lies within the surface's noise).
    thickness: float = 0.02
    # Samples under a thing standing there (its box's footprint widened by foot_margin, m, each way) are its foot
    # and shadow; a region with at least foot_share of its samples there is nothing else.
    foot_margin: float = 0.02
    foot_share: float = 0.5


def block_colours(color: np.ndarray, stride: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(N, 3) CIELAB of the samples' cells at grid positions (rows, cols): the mean RGB of each sample's ``stride``
    x ``stride`` pixels (JPEG noise and a pixel or two of misregistration average out)."""
    offsets = range(0, stride, max(stride // 2, 1))  # every other pixel of the cell: as good an average, a quarter
    pixels = color.reshape(-1, 3)  # of the work
    corner = rows * stride * color.shape[1] + cols * stride
    total = np.zeros((len(rows), 3), np.uint32)
    for dy in offsets:  # one gather per pixel of the cell (a fancy index of the cells as blocks costs more)
        for dx in offsets:
            total += pixels[corner + dy * color.shape[1] + dx]
    n = len(offsets) ** 2
    return to_lab(((total + n // 2) // n).astype(np.uint8))


def _scaled(lab: np.ndarray) -> np.ndarray:
    """CIELAB with lightness halved: Euclidean distances then count lightness half (shading moves lightness more
    than hue)."""
    return lab * np.array([0.5, 1.0, 1.0])


def _own_colours(lab: np.ndarray, p: FlatParams) -> np.ndarray:
    """(M, 3) the colours (``_scaled`` CIELAB) that hold at least ``own_share`` of a surface's samples ``lab``
    (N, 3 scaled): the means of the densest bin neighbourhoods, each taking its neighbours out of the count."""
    keys = np.floor(lab / p.bin).astype(np.int64) + 64  # scaled CIELAB bins: each in 0..127
    packed, inverse, counts = np.unique((keys[:, 0] << 14) | (keys[:, 1] << 7) | keys[:, 2], return_inverse=True,
                                        return_counts=True)
    bins = np.stack([packed >> 14, (packed >> 7) & 127, packed & 127], axis=1)
    inverse = inverse.reshape(-1)
    near = np.all(np.abs(bins[:, None, :] - bins[None, :, :]) <= 1, axis=2)  # (B, B)
    left = counts.astype(np.float64)
    out = []
    while True:
        density = near @ left
        best = int(np.argmax(density))
        if density[best] < p.own_share * len(lab):
            break
        members = near[best][inverse]
        out.append(lab[members].mean(axis=0))
        left[near[best]] = 0.0
    return np.array(out).reshape(-1, 3)


def flat_regions(points: np.ndarray, valid: np.ndarray, support: np.ndarray, color: np.ndarray, stride: int,
                 floor_z: float | None, p: FlatParams) -> list[tuple[np.ndarray, float]]:
    """The flat things among a frame's support samples (module notes).

    Args:
        points: (h, w, 3) world points of the samples (z up).
        valid: (h, w) bool, the samples with depth.
        support: (h, w) bool, the samples on supports.
        color: (H, W, 3) uint8 RGB image the samples were taken from, every ``stride`` pixels.
        floor_z: the floor's height, when known.
        p: the rules.

    Returns:
        Per flat thing: (K,) flat indices of its samples, and the height of the surface around it (m).
    """
    h, w = support.shape
    surfaces, n = ndimage.label(support)
    if n == 0:
        return []
    flat = surfaces.ravel()
    z = points[..., 2].ravel()
    large = np.flatnonzero(np.bincount(flat, minlength=n + 1)[1:] >= p.min_surface) + 1
    if len(large) == 0:  # only small supports in view: no surface around which a flat thing could lie
        return []
    on = np.flatnonzero(np.isin(flat, large))
    heights = np.full(n + 1, np.nan)
    heights[large] = ndimage.median(z[on], flat[on], large)
    if floor_z is not None:
        large = large[heights[large] - floor_z >= p.floor_clearance]
        on = on[np.isin(flat[on], large)]
    scaled = np.zeros((h * w, 3))
    scaled[on] = _scaled(block_colours(color, stride, *np.divmod(on, w)))
    foreign = np.zeros(h * w, bool)
    for k in large:
        members = on[flat[on] == k]
        own = _own_colours(scaled[members], p)
        if len(own) == 0:
            continue
        gap = np.linalg.norm(scaled[members, None, :] - own[None], axis=2).min(axis=1)
        foreign[members[gap >= p.contrast]] = True
    groups, m = ndimage.label(foreign.reshape(h, w))
    sizes = np.bincount(groups.ravel(), minlength=m + 1)
    out = []
    for g, where in enumerate(ndimage.find_objects(groups), start=1):
        if sizes[g] < p.min_samples:
            continue
        rr, cc = np.nonzero(groups[where] == g)
        rr, cc = rr + where[0].start, cc + where[1].start
        if rr.min() == 0 or cc.min() == 0 or rr.max() == h - 1 or cc.max() == w - 1:
            continue  # cut by the image's edge
        members = rr * w + cc
        side = _footprint(points.reshape(-1, 3)[members, :2])
        if side[0] < p.min_side or side[1] > p.max_size:
            continue
        around = _ring(rr, cc, h, w)
        k = int(np.bincount(flat[around], minlength=2)[1:].argmax()) + 1
        # Around it, the surface's own colours at the surface's height (its own edge, a step of its thickness,
        # may have no normal): not the surface's edge, nor something standing on it (beside its shadow).
        own = valid.ravel()[around] & ~foreign[around] & (np.abs(z[around] - heights[k]) <= p.same_height)
        if np.isnan(heights[k]) or own.sum() < p.enclosed * len(around):
            continue
        out.append((members, float(heights[k])))
    return out


def _footprint(xy: np.ndarray) -> np.ndarray:
    """(2,) the smaller and larger extents (m) of points (N, 2) along their principal axes (5th-95th
    percentile)."""
    centred = xy - xy.mean(axis=0)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    along = centred @ vectors
    q = percentiles(along, (5, 95))
    ext = q[1] - q[0]
    return np.sort(ext)


def _ring(rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> np.ndarray:
    """Flat indices of the samples 4-adjacent to a region (rows, cols) and outside it."""
    inside = np.zeros((h + 2, w + 2), bool)
    inside[rows + 1, cols + 1] = True
    grown = inside.copy()
    grown[1:] |= inside[:-1]
    grown[:-1] |= inside[1:]
    grown[:, 1:] |= inside[:, :-1]
    grown[:, :-1] |= inside[:, 1:]
    ring = grown & ~inside
    ring[0], ring[-1], ring[:, 0], ring[:, -1] = False, False, False, False
    rr, cc = np.nonzero(ring)
    return (rr - 1) * w + (cc - 1)
