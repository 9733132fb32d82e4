"""`embodied-ros ground|describe|scene-graph RUN_DIR`: phrases, descriptions and the scene graph of a finished run.

Each call is a new process, so it imports only what grounding needs and embeds text through
:class:`CachedTextEncoder` (the model loads only for words it has never seen). The phrase is parsed by
spaCy where it is installed (about 1.5 s to import and load; ``--timings`` prints where a call's time
goes). All three speak about the run's published objects, the ones RViz showed (``grounding/map_view.py``;
``--all-objects``: every object of the memory). Grounding is imported when a command runs, not when the
parser is built: `run` and the other commands do not load it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EmbodiedError, InputError, ModelError

if TYPE_CHECKING:
    from ..grounding.engine import Grounder
    from ..grounding.results import GroundingResult
    from ..grounding.text_encoder import CachedTextEncoder
    from ..grounding.viewpoint import Viewpoint
    from ..memory.scene_memory import SceneMemory
    from ..memory.scene_object import MemorySnapshot

__all__ = ["add_describe_parser", "add_ground_parser", "add_scene_graph_parser", "describe_command",
           "ground_command", "scene_graph_command"]

FRAME_HELP = "frame index whose camera 'left', 'nearest', 'behind me' refer to (default: the run's last frame)"
ALL_HELP = "speak about every object of the memory, not only the published ones RViz shows (debugging)"


def add_ground_parser(sub: Any) -> None:
    """The ``ground`` subcommand."""
    p_ground = sub.add_parser("ground", help="answer a phrase with the 3D box of an object of a finished run")
    p_ground.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_ground.add_argument("phrase", help='e.g. "the cup on the table next to the monitor"')
    p_ground.add_argument("--json", action="store_true", help="print the answer as JSON")
    p_ground.add_argument("--picture", type=Path, default=None, help="also draw the answer into this PNG")
    p_ground.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_ground.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_ground.add_argument("--timings", action="store_true", help="print where the call's time went (stderr)")
    p_ground.add_argument("--parser", choices=("auto", "spacy", "rules"), default="auto",
                          help="phrase parser: spaCy where installed (auto), or the rule-based fallback")
    p_ground.set_defaults(func=cmd_ground)


def add_describe_parser(sub: Any) -> None:
    """The ``describe`` subcommand."""
    p_desc = sub.add_parser("describe", help="a referring expression for each object of a finished run "
                                             "(checked by grounding it)")
    p_desc.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_desc.add_argument("--id", type=int, default=None, help="describe only this object")
    p_desc.add_argument("--json", action="store_true", help="print the descriptions as JSON")
    p_desc.add_argument("--dense-captions", type=Path, default=None, metavar="FILE",
                        help="also write them in Scan2Cap's dense-captioning submission form (caption, box as "
                             "8x3 corners, sem_prob, obj_prob)")
    p_desc.add_argument("--scene-id", default="", help="scene id in that file (default: the run folder's name)")
    p_desc.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_desc.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_desc.set_defaults(func=cmd_describe)


def add_scene_graph_parser(sub: Any) -> None:
    """The ``scene-graph`` subcommand."""
    p_graph = sub.add_parser("scene-graph", help="a finished run's objects and their relations as JSON")
    p_graph.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_graph.add_argument("--out", type=Path, default=None, help="write the JSON here (default: print it)")
    p_graph.add_argument("--descriptions", action="store_true", help="add each object's referring expression")
    p_graph.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_graph.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_graph.set_defaults(func=cmd_scene_graph)


def cmd_ground(args: argparse.Namespace) -> int:
    return ground_command(args.run_dir, args.phrase, json_out=args.json, picture=args.picture,
                          from_frame=args.from_frame, all_objects=args.all_objects, timings=args.timings,
                          parser=args.parser)


def cmd_describe(args: argparse.Namespace) -> int:
    return describe_command(args.run_dir, args.id, json_out=args.json, dense_captions=args.dense_captions,
                            scene_id=args.scene_id, from_frame=args.from_frame, all_objects=args.all_objects)


def cmd_scene_graph(args: argparse.Namespace) -> int:
    return scene_graph_command(args.run_dir, args.out, from_frame=args.from_frame,
                               with_descriptions=args.descriptions, all_objects=args.all_objects)


CAMERA_POSES_FILE = "camera_poses.json"  # outputs.camera_poses.CAMERA_POSES_FILE (not imported: outputs/ is slow)
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg")  # what --picture writes (the map and the frame alike)
PICTURE_IN_FOLDER = "answer.png"  # the name --picture FOLDER writes in that folder


def picture_path(picture: Path) -> Path:
    """The file ``--picture`` writes: the name given, or ``answer.png`` in a folder given; InputError when
    the name has no suffix a picture is written in (saying which it has)."""
    picture = Path(picture)
    if picture.is_dir():
        return picture / PICTURE_IN_FOLDER
    if picture.suffix.lower() not in PICTURE_SUFFIXES:
        raise InputError(f"--picture {picture}: a picture is written as {', '.join(PICTURE_SUFFIXES)}: give a file "
                         f"name ending in one of them (or a folder, to write {PICTURE_IN_FOLDER} in it)")
    return picture


@dataclass(frozen=True)
class _Run:
    """A finished run, loaded for language."""

    path: Path  # its memory.json
    memory: SceneMemory
    snapshot: MemorySnapshot
    viewpoint: Viewpoint | None
    grounder: Grounder
    encoder: CachedTextEncoder | None
    seconds: dict[str, float]  # where loading went: memory, encoder cache, grounder (parser, label embeddings)


def _load_run(run_dir: Path, from_frame: int | None, all_objects: bool = False, parser: str = "auto") -> _Run:
    """Memory, viewpoint (the chosen frame's camera, else the last one's) and a grounder.

    Raises:
        InputError: no memory there, or ``from_frame`` is not a processed frame of the run.
    """
    from ..grounding.engine import Grounder
    from ..grounding.map_view import published_snapshot
    from ..grounding.text_encoder import CachedTextEncoder
    from ..grounding.viewpoint import Viewpoint
    from ..memory.scene_memory import SceneMemory

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    run_dir = Path(run_dir)
    path = run_dir / "memory.json" if run_dir.is_dir() else run_dir
    memory = SceneMemory.load(path)
    viewpoint = None
    poses_file = path.parent / CAMERA_POSES_FILE
    if poses_file.is_file():
        from ..outputs.camera_poses import read_camera_poses

        poses = read_camera_poses(poses_file)
        chosen = [p for p in poses if from_frame is None or p.index == from_frame]
        if not chosen and from_frame is not None:
            span = f"frames {poses[0].index}..{poses[-1].index}" if poses else "no frames"
            raise InputError(f"--from-frame {from_frame}: not a processed frame of {run_dir} ({span})")
        viewpoint = Viewpoint.from_camera_pose(chosen[-1]) if chosen else None
    elif from_frame is not None:
        raise InputError(f"--from-frame {from_frame}: {run_dir} has no {CAMERA_POSES_FILE} (a run before viewpoints)")
    seconds["memory and viewpoint"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        encoder = CachedTextEncoder()
    except ModelError:
        encoder = None  # the Grounder tries the plain encoder and says why it cannot
    seconds["text encoder cache"] = time.perf_counter() - start
    start = time.perf_counter()
    grounder = Grounder(encoder, min_observations=memory.config.min_observations, parser=parser)
    seconds["grounder (parser, label embeddings)"] = time.perf_counter() - start
    snapshot = published_snapshot(memory, all_objects)
    return _Run(path, memory, snapshot, viewpoint, grounder, encoder, seconds)


def _box_text(box) -> str:
    x, y, z, dx, dy, dz, a, b, c = (float(v) for v in box)
    return (f"centre ({x:.2f}, {y:.2f}, {z:.2f}) m, size ({dx:.2f}, {dy:.2f}, {dz:.2f}) m, "
            f"angles ({a:.2f}, {b:.2f}, {c:.2f}) rad")


def _print_text(result: GroundingResult) -> None:
    print(result.message)
    if result.best is None:
        for alt in result.alternatives:
            print(f"  best partial candidate: {alt.explanation} (score {alt.score:.2f})")
        print(f"  parser: {result.parsed.parser}")
        return
    o = result.best.object
    colour = f", {o.colour_name}" if o.colour_name else ""
    print(f"  answer: {o.class_name} #{o.id} (grounding score {result.best.score:.2f}, detection score "
          f"{o.score:.2f}, confidence {o.confidence:.2f}{colour}): {_box_text(o.box)}")
    for alt in result.alternatives:
        print(f"  alternative: {alt.explanation} (score {alt.score:.2f})")
    print(f"  parser: {result.parsed.parser}")


def ground_command(run_dir: Path, phrase: str, json_out: bool = False, picture: Path | None = None,
                   from_frame: int | None = None, all_objects: bool = False, timings: bool = False,
                   parser: str = "auto") -> int:
    """Ground ``phrase`` in ``run_dir/memory.json`` and print the answer.

    Args:
        run_dir: output folder of ``embodied-ros run`` (holds memory.json, and scene.mcap for the picture).
        phrase: the referring phrase.
        json_out: print the result as JSON instead of text.
        picture: picture to write (.png, .jpg or .jpeg; a folder: ``answer.png`` in it): a top-down map
            with the answer emphasised; when the run's bag holds its input frames, also
            ``<picture stem>_frame<suffix>``: the answer drawn on the frame where it was last seen.
        from_frame: the frame whose camera viewer-centred words ("on the left") refer to; None:
            the run's last frame.
        all_objects: ground among every object of the memory, not only the published ones.
        timings: print where the call's time went (to stderr).
        parser: "auto" (spaCy where installed), "spacy" or "rules".

    Returns:
        0 when an object was found, 1 when the phrase has no answer, 2 for an unusable run folder.
    """
    try:
        picture = picture_path(picture) if picture is not None else None
        run = _load_run(run_dir, from_frame, all_objects, parser)
    except (EmbodiedError, OSError) as exc:
        print(f"embodied-ros: error: {exc}", file=sys.stderr)
        return 2
    snapshot, memory = run.snapshot, run.memory
    # Ground among the objects the run published (seen often enough), as RViz showed them.
    result = run.grounder.ground(phrase, snapshot, viewpoint=run.viewpoint, vocabulary=memory.vocabulary,
                                 changes=memory.changes.log.current())
    if run.encoder is not None:
        run.encoder.save()
    if timings:
        stages = {**run.seconds, "grounding call": result.seconds}
        print("timings: " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in stages.items()), file=sys.stderr)
    written: list[str] = []
    if picture is not None:
        from ..grounding.picture import answer_on_recorded_frame, save_grounding_map
        from ..outputs.pictures import save_rgb

        try:
            picture.parent.mkdir(parents=True, exist_ok=True)
            save_grounding_map(picture, snapshot, result, memory.config.min_observations)
            written.append(str(picture))
            image = answer_on_recorded_frame(run.path.parent / "scene.mcap", snapshot, result)
            if image is not None:
                frame_path = picture.with_name(f"{picture.stem}_frame{picture.suffix}")
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


def describe_command(run_dir: Path, object_id: int | None = None, json_out: bool = False,
                     dense_captions: Path | None = None, scene_id: str = "", from_frame: int | None = None,
                     all_objects: bool = False) -> int:
    """Print a referring expression for every confident object of a run (or one), each checked by grounding it.

    Args:
        run_dir: output folder of ``embodied-ros run``.
        object_id: describe only this object.
        json_out: print JSON (id, class, text, unique, score) instead of text.
        dense_captions: also write the descriptions in Scan2Cap's dense-captioning submission form there.
        scene_id: the scene's id in that file (default: the run folder's name).
        from_frame: viewpoint for "leftmost"/"nearest" (default: the run's last frame).
        all_objects: describe every object of the memory, not only the published ones.

    Returns:
        0 when the descriptions were printed, whether or not each picks out its object (a result, not a
        failure: the summary line counts them, the JSON marks each); 1 when ``object_id`` is no object of
        the run (a line on stderr says so); 2 for an unusable run folder or an unwritable file.
    """
    from ..grounding.describe import describe_objects

    try:
        run = _load_run(run_dir, from_frame, all_objects)
    except (EmbodiedError, OSError) as exc:
        print(f"embodied-ros: error: {exc}", file=sys.stderr)
        return 2
    ids = None if object_id is None else [object_id]
    if object_id is not None and object_id not in {int(i) for i in run.snapshot.ids}:
        known = ", ".join(str(int(i)) for i in sorted(run.snapshot.ids)[:20]) or "none"
        print(f"embodied-ros: no object #{object_id} among the objects of {run.path} (ids: {known})", file=sys.stderr)
        return 1
    found = describe_objects(run.grounder, run.snapshot, ids, viewpoint=run.viewpoint,
                             vocabulary=run.memory.vocabulary, min_observations=run.memory.config.min_observations)
    if run.encoder is not None:
        run.encoder.save()
    by_id = {o.id: o for o in run.snapshot.objects}
    if dense_captions is not None:
        from ..outputs.scanrefer import write_dense_captions

        try:
            write_dense_captions(dense_captions, scene_id or Path(run_dir).resolve().name,
                                 [(d.text, by_id[d.object_id]) for d in found])
        except OSError as exc:
            print(f"embodied-ros: error: cannot write {dense_captions}: {exc}", file=sys.stderr)
            return 2
    if json_out:
        print(json.dumps([{"id": d.object_id, "class_name": by_id[d.object_id].class_name, "text": d.text,
                           "unique": d.unique, "true": d.true, "score": round(d.score, 4)} for d in found], indent=2))
    else:
        for d in found:
            flags = ("" if d.unique else "  (not unique)") + ("" if d.true else "  (NOT TRUE)")
            print(f"{by_id[d.object_id].class_name} #{d.object_id}: {d.text}{flags}")
        print(f"{sum(d.unique and d.true for d in found)} of {len(found)} descriptions pick out their object; "
              f"{sum(d.true for d in found)} of {len(found)} are true of it (checked by grounding each)"
              + (f"; dense captions written to {dense_captions}" if dense_captions else ""))
    return 0


def scene_graph_command(run_dir: Path, out: Path | None = None, from_frame: int | None = None,
                        with_descriptions: bool = False, all_objects: bool = False) -> int:
    """Print (or write) a run's scene graph as JSON: objects and their relations (``scene_graph.py``).

    Returns:
        0, or 2 for an unusable run folder or an unwritable file.
    """
    from ..grounding.scene_graph import scene_graph

    try:
        run = _load_run(run_dir, from_frame, all_objects)
    except (EmbodiedError, OSError) as exc:
        print(f"embodied-ros: error: {exc}", file=sys.stderr)
        return 2
    descriptions = None
    if with_descriptions:
        from ..grounding.describe import describe_objects

        descriptions = {d.object_id: d.text for d in describe_objects(
            run.grounder, run.snapshot, viewpoint=run.viewpoint, vocabulary=run.memory.vocabulary,
            min_observations=run.memory.config.min_observations)}
        if run.encoder is not None:
            run.encoder.save()
    doc = scene_graph(run.snapshot, viewpoint=run.viewpoint, min_observations=run.memory.config.min_observations,
                      min_confidence=run.grounder.config.min_confidence, descriptions=descriptions)
    text = json.dumps(doc, indent=1)
    if out is None:
        print(text)
        return 0
    try:
        Path(out).write_text(text)
    except OSError as exc:
        print(f"embodied-ros: error: cannot write {out}: {exc}", file=sys.stderr)
        return 2
    print(f"{len(doc['objects'])} objects and {len(doc['relations'])} relations written to {out}")
    return 0
