"""Per-class correction of a detector's box sizes: height and footprint factors fitted on training scenes.

A box regressor trained on few steps keeps a per-class size bias (the shipped Embodied Perceptron
draws beds' footprints about twice too large and shelves' several times too small); 3D IoU punishes it hard on small and
thin objects. The correction is the geometric median of truth/prediction ratios per class, for
two quantities that do not depend on how a box's axes are labelled: the extent along the box axis
nearest world z (height) and the product of the other two (footprint area). Fitted by
``training.calibrate.calibrate_sizes`` on training seeds, saved as JSON beside the weights
(``<weights stem>.sizes.json``), applied by ``PerceptronPerceptor`` after decoding.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..geometry.boxes import as_boxes, box_rotations
from ..runtime.engine_cache import sha256_file

log = logging.getLogger(__name__)

FORMAT = "embodied_ros/size_calibration"
SUFFIX = ".sizes.json"
MIN_SAMPLES = 10  # matched detections a class needs before it gets factors
FACTOR_RANGE = (0.25, 4.0)  # factors are clipped to this: a correction, never a replacement


def vertical_axes(boxes: np.ndarray) -> np.ndarray:
    """(N,) index (0, 1, 2) of each box's own axis nearest world z."""
    R = box_rotations(as_boxes(boxes))  # (N, 3, 3), columns = box axes
    return np.argmax(np.abs(R[:, 2, :]), axis=1)


def height_and_footprint(boxes: np.ndarray) -> np.ndarray:
    """(N, 2) extent along the vertical axis and the product of the two others (m, m^2)."""
    b = as_boxes(boxes)
    k = vertical_axes(b)
    height = b[np.arange(len(b)), 3 + k]
    return np.stack([height, np.prod(b[:, 3:6], axis=1) / np.maximum(height, 1e-9)], axis=1)


def calibration_path(weights: str | os.PathLike[str]) -> Path:
    """Where the size calibration of a weights file lives: beside it, ``<stem>.sizes.json``."""
    weights = Path(weights)
    return weights.with_name(weights.stem + SUFFIX)


def calibration_for(weights: str | os.PathLike[str]) -> SizeCalibration | None:
    """The calibration beside ``weights`` when there is one fitted for them; None otherwise.

    A file fitted for other weights (its ``weights_sha256`` differs) is ignored with a warning, so a
    stale file never rescales boxes. Raises ModelError for a file that is not a size calibration.
    """
    weights = Path(weights)
    path = calibration_path(weights)
    sizes = SizeCalibration.load(path) if path.is_file() else None
    if sizes is not None and sizes.weights_sha256 and sizes.weights_sha256 != sha256_file(weights):
        log.warning("%s was fitted for other weights than %s: ignored (run `embodied-ros calibrate --weights %s`)",
                    path, weights.name, weights)
        sizes = None
    if sizes is None:
        log.info("no size calibration for %s: box sizes as the network gives them", weights)
    return sizes


@dataclass(frozen=True)
class SizeCalibration:
    """Per-class (height factor, footprint-area factor); classes without an entry are unchanged.

    Attributes:
        factors: class name -> (height factor, footprint factor).
        samples: class name -> matched detections the factors came from.
        source: how it was fitted (weights, seeds, frames), for the model card.
        weights_sha256: sha256 of the weights it was fitted for ("" = not recorded); the registry
            ignores a calibration made for other weights.
    """

    factors: dict[str, tuple[float, float]]
    samples: dict[str, int] = field(default_factory=dict)
    source: str = ""
    weights_sha256: str = ""

    def apply(self, boxes: np.ndarray, labels: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
        """(N, 9) boxes with their classes' factors applied (centres and rotations unchanged)."""
        out = as_boxes(boxes).copy()
        if len(out) == 0 or not self.factors:
            return out
        table = np.array([self.factors.get(name, (1.0, 1.0)) for name in class_names], dtype=np.float64)
        f = table[np.asarray(labels, dtype=np.int64)]  # (N, 2)
        scale = np.repeat(np.sqrt(f[:, 1:2]), 3, axis=1)
        rows = np.arange(len(out))
        scale[rows, vertical_axes(out)] = f[:, 0]
        out[:, 3:6] *= scale
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        doc = {"format": FORMAT, "source": self.source, "weights_sha256": self.weights_sha256,
               "classes": {name: {"height": h, "footprint": a, "samples": self.samples.get(name, 0)}
                           for name, (h, a) in sorted(self.factors.items())}}
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SizeCalibration:
        """Read a file written by ``save``.

        Raises:
            ModelError: missing, unreadable or not a size calibration.
        """
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise ModelError(f"{path}: cannot read the size calibration: {err}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("classes"), dict):
            raise ModelError(f"{path}: not a size calibration (expected format '{FORMAT}')")
        factors, samples = {}, {}
        try:
            for name, entry in doc["classes"].items():
                h, a = float(entry["height"]), float(entry["footprint"])
                if not (np.isfinite(h) and np.isfinite(a) and h > 0 and a > 0):
                    raise ValueError(f"class {name}: factors must be positive, got {h}, {a}")
                factors[str(name)] = (h, a)
                samples[str(name)] = int(entry.get("samples", 0))
        except (KeyError, TypeError, ValueError) as err:
            raise ModelError(f"{path}: malformed size calibration: {err}") from None
        return cls(factors, samples, str(doc.get("source", "")), str(doc.get("weights_sha256", "")))


def fit_size_calibration(predicted: np.ndarray, truth: np.ndarray, names: Sequence[str],
                         min_samples: int = MIN_SAMPLES, source: str = "") -> SizeCalibration:
    """Factors from matched pairs: row i of ``predicted`` is a detection of ``truth[i]``, class ``names[i]``.

    Per class with at least ``min_samples`` pairs: exp(median(log(truth / predicted))) of height
    and of footprint area (a geometric median: robust to the odd bad match), clipped to
    ``FACTOR_RANGE``.
    """
    p, t = height_and_footprint(predicted), height_and_footprint(truth)
    ratios = np.log(np.maximum(t, 1e-9) / np.maximum(p, 1e-9))
    names_arr = np.array(list(names), dtype=object)
    factors, samples = {}, {}
    for name in sorted(set(names_arr.tolist())):
        rows = names_arr == name
        if rows.sum() < min_samples:
            continue
        h, a = np.clip(np.exp(np.median(ratios[rows], axis=0)), *FACTOR_RANGE)
        factors[str(name)] = (round(float(h), 4), round(float(a), 4))
        samples[str(name)] = int(rows.sum())
    return SizeCalibration(factors, samples, source)
