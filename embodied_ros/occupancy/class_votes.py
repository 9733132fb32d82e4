"""The occupancy map's class of a voxel: a weighted majority vote (one label and one weight per voxel).

The Boyer-Moore scheme: the same class adds its weight, another class subtracts it and takes over
when the weight goes below zero. It costs six bytes per voxel whatever the vocabulary and always
keeps the majority class when one has more than half of the votes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def vote(data: Mapping[str, np.ndarray], n_classes: int, flat: np.ndarray, classes: np.ndarray,
         weights: np.ndarray) -> None:
    """Per voxel, this call's strongest class (summed weight) votes once.

    Args:
        data: the map's voxel fields; "label" (int16) and "label_weight" (float32) are updated.
        n_classes: size of the map's vocabulary.
        flat: (N,) flat voxel indices; -1 entries are skipped.
        classes: (N,) class index of each vote.
        weights: (N,) weight of each vote.
    """
    ok = flat >= 0
    flat, classes, weights = flat[ok], classes[ok].astype(np.int64), weights[ok]
    if flat.size == 0:
        return
    n_cls = max(n_classes, 1)
    keys, inverse = np.unique(flat * n_cls + classes, return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=weights)
    vox, cls = np.divmod(keys, n_cls)
    order = np.lexsort((-total, vox))
    first = order[np.r_[True, vox[order][1:] != vox[order][:-1]]]
    vox, cls, w = vox[first], cls[first], total[first].astype(np.float32)
    label, weight = data["label"], data["label_weight"]
    same = label[vox] == cls
    weight[vox[same]] += w[same]
    other, c_other, w_other = vox[~same], cls[~same], w[~same]
    left = weight[other] - w_other
    flip = left < 0
    label[other[flip]] = c_other[flip]
    weight[other] = np.abs(left)
