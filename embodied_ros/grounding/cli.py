"""`embodied-ros ground RUN_DIR "phrase"`: answer a phrase from a finished run's saved memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import EmbodiedError
from ..memory.scene_memory import SceneMemory
from .engine import Grounder
from .results import GroundingResult

__all__ = ["ground_command"]


def _box_text(box) -> str:
    x, y, z, dx, dy, dz, a, b, c = (float(v) for v in box)
    return (f"centre ({x:.2f}, {y:.2f}, {z:.2f}) m, size ({dx:.2f}, {dy:.2f}, {dz:.2f}) m, "
            f"angles ({a:.2f}, {b:.2f}, {c:.2f}) rad")


def _print_text(result: GroundingResult) -> None:
    print(result.message)
    if result.best is None:
        return
    o = result.best.object
    print(f"  answer: {o.class_name} #{o.id} (grounding score {result.best.score:.2f}, detection score "
          f"{o.score:.2f}): {_box_text(o.box)}")
    for alt in result.alternatives:
        print(f"  alternative: {alt.explanation} (score {alt.score:.2f})")


def ground_command(run_dir: Path, phrase: str, json_out: bool = False, picture: Path | None = None) -> int:
    """Ground ``phrase`` in ``run_dir/memory.json`` and print the answer.

    Args:
        run_dir: output folder of ``embodied-ros run`` (holds memory.json, and scene.mcap for the picture).
        phrase: the referring phrase.
        json_out: print the result as JSON instead of text.
        picture: PNG to write: a top-down map with the answer emphasised; when the run's bag holds
            its input frames, also ``<picture stem>_frame.png``: the answer drawn on the frame where
            it was last seen.

    Returns:
        0 when an object was found, 1 when the phrase has no answer, 2 for an unusable run folder.
    """
    run_dir = Path(run_dir)
    path = run_dir / "memory.json" if run_dir.is_dir() else run_dir
    try:
        memory = SceneMemory.load(path)
    except (EmbodiedError, OSError) as exc:
        print(f"embodied-ros: error: {exc}", file=sys.stderr)
        return 2
    snapshot = memory.snapshot()
    # Ground among the objects the run published (seen often enough), as RViz showed them.
    result = Grounder(min_observations=memory.config.min_observations).ground(phrase, snapshot)
    written: list[str] = []
    if picture is not None:
        from ..outputs.pictures import save_rgb
        from .picture import answer_on_recorded_frame, save_grounding_map

        picture = Path(picture)
        try:
            picture.parent.mkdir(parents=True, exist_ok=True)
            save_grounding_map(picture, snapshot, result, memory.config.min_observations)
            written.append(str(picture))
            image = answer_on_recorded_frame(path.parent / "scene.mcap", snapshot, result)
            if image is not None:
                frame_path = picture.with_name(picture.stem + "_frame.png")
                save_rgb(frame_path, image)
                written.append(str(frame_path))
        except OSError as exc:
            print(f"embodied-ros: error: cannot write the picture {picture}: {exc}", file=sys.stderr)
            return 2
    if json_out:
        print(json.dumps({**result.to_dict(), "pictures": written}, indent=2))
    else:
        _print_text(result)
        if written:
            print("  pictures: " + ", ".join(written))
    return 0 if result.success else 1
