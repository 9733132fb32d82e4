"""The offline run: source -> SceneMapper (perceptor -> scene memory + occupancy) -> bag, objects.json, pictures."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import FrameError, InputError
from .frame import Frame
from .frame_detections import with_detections
from .mapper import MEMORY_FILE, SceneMapper
from .memory.scene_memory import SceneObject
from .outputs.background_writer import BackgroundBagWriter
from .outputs.bag_writer import SceneBagWriter
from .outputs.camera_poses import CAMERA_POSES_FILE, CameraPose, write_camera_poses
from .outputs.change_messages import RecentChanges
from .outputs.contact_sheet import ObjectViews, save_contact_sheet
from .outputs.objects_json import write_objects_json
from .outputs.pictures import draw_boxes_on_frame, save_rgb, save_top_down_map
from .sources.base import FrameSource

log = logging.getLogger(__name__)


@dataclass
class StageTimer:
    """Wall-clock seconds per named stage, one entry per frame."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name].append(time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name].append(seconds)

    def mean_ms(self) -> dict[str, float]:
        return {k: 1000.0 * float(np.mean(v)) for k, v in self.seconds.items() if v}


@dataclass(frozen=True)
class RunSummary:
    """What a run did, for the CLI's report and the tests.

    Attributes:
        frames_read: frames the source yielded (good and bad).
        frames_processed: frames that went through the network.
        skipped: one message per skipped bad frame.
        objects: the published objects at the end (at most N per class).
        all_objects: every object in memory at the end.
        stage_ms: mean milliseconds per frame for each stage (on the perception thread; "writing"
            is handing the frame to the bag's thread).
        outputs: files written.
        stopped: ``should_stop`` ended the run before the source's end; the outputs hold the
            frames up to there.
        seconds: wall time from the first frame read to the bag closed (pictures and files after
            it not included).
        writer_ms: mean milliseconds per frame the bag's own thread spent writing.
    """

    frames_read: int
    frames_processed: int
    skipped: tuple[str, ...]
    objects: tuple[SceneObject, ...]
    all_objects: tuple[SceneObject, ...]
    stage_ms: dict[str, float]
    outputs: tuple[Path, ...]
    stopped: bool = False
    seconds: float = 0.0
    writer_ms: float = 0.0

    @property
    def fps(self) -> float:
        """Frames processed per second of ``seconds``: the rate the run sustained."""
        return self.frames_processed / self.seconds if self.seconds > 0 else 0.0

    def class_counts(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for o in self.objects:
            counts[o.class_name] += 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _picture_indices(n_frames: int, count: int) -> set[int]:
    """Which processed frames to keep for pictures: ``count`` spread evenly."""
    if n_frames <= 0:
        return {0}
    return {int(i) for i in np.linspace(0, n_frames - 1, num=min(count, n_frames)).round()}


def run(
    source: FrameSource,
    mapper: SceneMapper,
    out_dir: Path,
    stride: int = 1,
    max_frames: int | None = None,
    n_pictures: int = 4,
    write_inputs: bool = True,
    progress: Callable[[Iterator], Iterator] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RunSummary:
    """Run the whole pipeline over a recording and write every output into ``out_dir``.

    Args:
        source: frames to read.
        mapper: perceptor, scene memory (may already hold objects) and occupancy map; each frame
            is its ``step``.
        out_dir: folder for scene.mcap, metadata.yaml, objects.json, memory.json and pictures
            (created).
        stride: use every stride-th frame.
        max_frames: stop after this many frames (None: all).
        n_pictures: frames on which the final boxes are drawn.
        write_inputs: also write colour, depth, camera_info and /tf into the bag.
        progress: wraps the frame iterator (e.g. tqdm); identity when None.
        should_stop: asked before each frame; True ends the run there and the outputs are
            written for the frames so far (interrupts.StopRequest: Ctrl-C, SIGTERM).

    Raises:
        InputError: when no frame at all could be used (and no stop was asked for).
        KeyboardInterrupt: passed on after closing the bag, which stays readable.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    timer = StageTimer()
    expected = len(source)
    n_expected = (expected + stride - 1) // stride if expected else 0
    if max_frames is not None:
        n_expected = min(n_expected, max_frames) if n_expected else max_frames
    keep_for_pictures = _picture_indices(n_expected, n_pictures)
    kept: list[Frame] = []
    skipped: list[str] = []
    camera_poses: list[CameraPose] = []
    frames_read = processed = 0
    last_frame_id = "world"
    stopped = False

    views = ObjectViews()
    recent_changes = RecentChanges(mapper.config.changes.marker_window_s)
    writer = BackgroundBagWriter(SceneBagWriter(out_dir, write_inputs=write_inputs))
    started = time.perf_counter()
    try:
        frames = source.frames(stride=stride, max_frames=max_frames)
        if progress is not None:
            frames = progress(frames)
        t_decode = time.perf_counter()
        for item in frames:
            if should_stop is not None and should_stop():
                stopped = True
                break
            timer.add("decode", time.perf_counter() - t_decode)
            frames_read += 1
            if isinstance(item, FrameError):
                skipped.append(str(item))
                log.warning("skipped: %s", item)
                t_decode = time.perf_counter()
                continue
            frame = item
            last_frame_id = frame.world_frame
            step = mapper.step(frame)
            result, stages = step.update, step.stages_s
            for stage in ("network", "lifting"):
                timer.add(stage, stages.get(stage, 0.0))
            timer.add("memory", stages["memory"] - result.discovery_s - result.structure_s)
            timer.add("discovery", result.discovery_s)  # the unknown objects' part of the update
            timer.add("structure", result.structure_s)  # the room's structure (memory/structure.py)
            timer.add("occupancy", stages["occupancy"])
            memory = mapper.memory
            views.merged(result.merged)
            touched = (memory.get(i) for i in (*result.created, *result.updated))
            views.observe(frame, ((o.id, o.box, memory.geometry_points(o.id)) for o in touched if o is not None))
            structure = memory.published_structure()
            if result.structure_s > 0:  # a keyframe the structure looked at: a view of its parts for objects.png
                views.observe(frame, ((o.id, o.box, np.zeros((0, 3))) for o in structure))
            with timer.stage("writing"):  # the detector's image detections go into the bag with the inputs
                found = step.perception.detections_2d
                shown = recent_changes.to_draw(memory.changes.log.current(), frame.stamp_ns)
                changes = (result.changes, shown) if result.changes or shown is not None else None
                writer.write(frame if found is None else with_detections(frame, found),
                             [*memory.published_objects(), *memory.current_movers()],
                             mapper.occupancy.occupied_voxels(), structure, changes)
            if processed in keep_for_pictures:
                kept.append(frame)
            camera_poses.append(CameraPose(frame.index, frame.stamp_ns, frame.T_world_camera.copy(), frame.K.copy(),
                                           frame.width, frame.height))
            processed += 1
            t_decode = time.perf_counter()
    except KeyboardInterrupt:
        writer.close()  # stopped at once: what was written stays a readable bag
        raise
    except BaseException:
        writer.abort()  # failed (an OS error, a full disk): no second error from closing
        raise
    bag_path = writer.close()
    seconds = time.perf_counter() - started
    writer_ms = 1000.0 * writer.busy_s / max(processed, 1)

    if processed == 0 and stopped:
        return RunSummary(frames_read, 0, tuple(skipped), (), (), timer.mean_ms(), (), stopped=True, seconds=seconds)
    if processed == 0:
        reason = skipped[0] if skipped else "the source yielded no frames"
        raise InputError(f"{source.name}: no usable frame ({len(skipped)} skipped; first: {reason})")

    memory = mapper.memory
    objects = tuple(memory.published_objects())
    voxels = mapper.occupancy.occupied_voxels()
    outputs = [bag_path, out_dir / "metadata.yaml", out_dir / "objects.json", out_dir / MEMORY_FILE]
    structure = tuple(memory.published_structure())
    write_objects_json(outputs[2], objects, last_frame_id,
                       extra={"source": source.name, "frames_processed": processed, "frames_skipped": len(skipped),
                              "changes": [e.to_dict() for e in memory.changes.log.current()]},
                       structure=structure)
    memory.save(outputs[3])
    outputs.append(out_dir / CAMERA_POSES_FILE)  # where viewer-centred words ("on the left") look from
    write_camera_poses(outputs[-1], last_frame_id, camera_poses)
    for frame in kept:
        path = out_dir / f"boxes_frame_{frame.index:06d}.png"
        save_rgb(path, draw_boxes_on_frame(frame, objects))
        outputs.append(path)
    top = out_dir / "top_down.png"
    save_top_down_map(top, objects + structure, voxels, np.array([p.T_world_camera[:3, 3] for p in camera_poses]),
                      title=f"{source.name}: {len(objects)} objects, {len(structure)} parts of the room, "
                            f"{processed} frames")
    sheet = out_dir / "objects.png"
    save_contact_sheet(sheet, objects + structure, views,
                       title=f"{source.name}: the {len(objects)} published objects and {len(structure)} parts of the "
                             "room, each on a frame where it was seen")
    outputs += [top, sheet]
    return RunSummary(frames_read, processed, tuple(skipped), objects, tuple(memory.objects()),
                      timer.mean_ms(), tuple(outputs), stopped, seconds, writer_ms)
