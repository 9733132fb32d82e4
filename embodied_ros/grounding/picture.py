"""Pictures of a grounding answer: a top-down map with the answer emphasised, and the answer drawn
on the recorded frame in which it was last seen."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..display_text import for_picture
from ..errors import EmbodiedError
from ..frame import Frame
from ..geometry.boxes import box_corners
from ..memory.scene_object import MemorySnapshot, SceneObject
from ..outputs.class_palette import class_colour_float
from ..outputs.pictures import draw_boxes_on_frame
from .results import GroundingResult

__all__ = ["save_grounding_map", "answer_on_recorded_frame"]

_ANSWER_RGB = (1.0, 0.05, 0.05)


def save_grounding_map(path: Path, snapshot: MemorySnapshot, result: GroundingResult,
                       min_observations: int = 1) -> None:
    """Top-down (x-y, world z up) map: every object faint, the anchors in their class colours,
    the alternatives dashed, the answer thick red; the phrase and the message as the title.

    Args:
        path: PNG file to write.
        snapshot: the memory the phrase was grounded in.
        result: the grounding result.
        min_observations: objects seen fewer times are left out of the faint background.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    fig, ax = plt.subplots(figsize=(9, 9), dpi=110)
    seen = [o.n_observations >= min_observations for o in snapshot.objects]
    if any(seen):
        footprints = box_corners(snapshot.boxes[seen])[:, :4, :2]  # (N, 4, 2) bottom faces seen from above
        for fp in footprints:
            ax.add_patch(Polygon(fp, closed=True, fill=False, edgecolor="0.75", lw=0.8))
        lo, hi = footprints.reshape(-1, 2).min(axis=0), footprints.reshape(-1, 2).max(axis=0)
        ax.set_xlim(lo[0] - 0.3, hi[0] + 0.3)
        ax.set_ylim(lo[1] - 0.3, hi[1] + 0.3)
    by_id = {o.id: o for o in snapshot.objects}

    def outline(obj: SceneObject, color: tuple[float, float, float], lw: float, ls: str, label: str) -> None:
        fp = box_corners(obj.box)[0, :4, :2]
        ax.add_patch(Polygon(fp, closed=True, fill=False, edgecolor=color, lw=lw, ls=ls))
        ax.text(obj.box[0], obj.box[1], for_picture(label), fontsize=8, ha="center", va="center", color=color,
                bbox=dict(facecolor="white", alpha=0.7, lw=0, pad=1))

    if result.best is not None:
        for alt in result.alternatives:
            outline(alt.object, (0.95, 0.55, 0.1), 1.2, "--", f"{alt.object.class_name} #{alt.object.id}")
        for anchor_id in result.best.anchor_ids:
            if anchor_id in by_id:
                a = by_id[anchor_id]
                outline(a, class_colour_float(a.class_name), 2.0, "-", f"{a.class_name} #{a.id}")
        b = result.best.object
        outline(b, _ANSWER_RGB, 3.5, "-", f"ANSWER: {b.class_name} #{b.id}")
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.grid(True, lw=0.3)
    title = f'"{result.phrase[:120]}"\n' + "\n".join(textwrap.wrap(result.message, 90)[:3])
    ax.set_title(for_picture(title), fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def answer_on_recorded_frame(bag: Path, snapshot: MemorySnapshot, result: GroundingResult) -> np.ndarray | None:
    """The answer (and its anchors) drawn on the input frame of a run's bag nearest to the moment
    the answer was last seen.

    Args:
        bag: the run's ``scene.mcap`` (written with its inputs; ``--no-inputs`` runs have none).
        snapshot: the memory the phrase was grounded in.
        result: a successful grounding result.

    Returns:
        (H, W, 3) uint8 RGB image, or None when there is no answer or the bag holds no usable frame.
    """
    if result.best is None or not bag.is_file():
        return None
    from ..sources.rosbag_source import RosbagSource

    target_ns = result.best.object.last_seen_ns
    best_frame: Frame | None = None
    try:
        with RosbagSource(bag, world_frame=snapshot.frame_id or "world") as source:
            for frame in source.frames():
                if not isinstance(frame, Frame):
                    continue
                if best_frame is None or abs(frame.stamp_ns - target_ns) < abs(best_frame.stamp_ns - target_ns):
                    best_frame = frame
                if frame.stamp_ns >= target_ns:
                    break
    except EmbodiedError:
        return None
    if best_frame is None:
        return None
    by_id = {o.id: o for o in snapshot.objects}
    anchors = [by_id[i] for i in result.best.anchor_ids if i in by_id]
    image = draw_boxes_on_frame(best_frame, anchors, thickness=2, visible_only=False)
    return draw_boxes_on_frame(replace(best_frame, color=image), [result.best.object], thickness=5, visible_only=False)
