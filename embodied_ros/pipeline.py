"""The offline run: source -> SceneMapper (perceptor -> scene memory + occupancy) -> bag, objects.json, pictures."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import FrameError, InputError
from .frame import Frame
from .frame_detections import with_detections
from .mapper import MEMORY_FILE, PublishedScene, SceneMapper, StepResult
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


@dataclass
class _RunRecord:
    """The run's per-frame bookkeeping, from which the files at the end are written."""

    picture_indices: set[int]
    recent_changes: RecentChanges
    timer: StageTimer = field(default_factory=StageTimer)
    views: ObjectViews = field(default_factory=ObjectViews)
    kept: list[Frame] = field(default_factory=list)  # the frames the final boxes are drawn on
    skipped: list[str] = field(default_factory=list)
    camera_poses: list[CameraPose] = field(default_factory=list)
    frames_read: int = 0
    processed: int = 0
    last_frame_id: str = "world"

    def skip(self, error: FrameError) -> None:
        self.skipped.append(str(error))
        log.warning("skipped: %s", error)

    def took(self, frame: Frame, step: StepResult, seen: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """A keyframe went through the mapper: its stage times, its views of the objects it saw, its pose."""
        self.last_frame_id = frame.world_frame
        for stage, seconds in step.stage_split_s().items():
            self.timer.add(stage, seconds)
        self.views.merged(step.update.merged)
        self.views.observe(frame, seen)
        if self.processed in self.picture_indices:
            self.kept.append(frame)
        self.camera_poses.append(CameraPose(frame.index, frame.stamp_ns, frame.T_world_camera.copy(), frame.K.copy(),
                                            frame.width, frame.height))
        self.processed += 1


def _write_keyframe(writer: BackgroundBagWriter, record: _RunRecord, mapper: SceneMapper, frame: Frame,
                    step: StepResult, scene: PublishedScene) -> None:
    """Hand the keyframe's inputs, image detections, map and changes to the bag's thread."""
    found = step.perception.detections_2d  # the detector's image detections go into the bag with the inputs
    shown = record.recent_changes.to_draw(mapper.memory.changes.log.current(), frame.stamp_ns)
    changes = (step.update.changes, shown) if step.update.changes or shown is not None else None
    writer.write(frame if found is None else with_detections(frame, found), [*scene.objects, *scene.movers],
                 scene.voxels, scene.structure, changes)


def _map_frames(frames: Iterable[Frame | FrameError], mapper: SceneMapper, writer: BackgroundBagWriter,
                record: _RunRecord, should_stop: Callable[[], bool] | None) -> bool:
    """Step the mapper over the frames, writing each into the bag; True when ``should_stop`` ended it early."""
    timer = record.timer
    t_decode = time.perf_counter()
    for item in frames:
        if should_stop is not None and should_stop():
            return True
        timer.add("decode", time.perf_counter() - t_decode)
        record.frames_read += 1
        if isinstance(item, FrameError):
            record.skip(item)
        else:
            step = mapper.step(item)
            record.took(item, step, mapper.seen_in(step.update))
            with timer.stage("writing"):
                scene = mapper.published_scene()
                if step.update.structure_s > 0:  # the structure looked at this keyframe: a view of its parts
                    record.views.observe(item, ((o.id, o.box, np.zeros((0, 3))) for o in scene.structure))
                _write_keyframe(writer, record, mapper, item, step, scene)
        t_decode = time.perf_counter()
    return False


def _write_results(out_dir: Path, source: FrameSource, mapper: SceneMapper, record: _RunRecord) -> list[Path]:
    """The end-of-run files beside the bag: objects.json, the memory, camera poses and the pictures."""
    memory, processed = mapper.memory, record.processed
    objects = tuple(memory.published_objects())
    structure = tuple(memory.published_structure())
    objects_json, memory_json = out_dir / "objects.json", out_dir / MEMORY_FILE
    write_objects_json(objects_json, objects, record.last_frame_id,
                       extra={"source": source.name, "frames_processed": processed,
                              "frames_skipped": len(record.skipped),
                              "changes": [e.to_dict() for e in memory.changes.log.current()]},
                       structure=structure)
    memory.save(memory_json)
    outputs = [out_dir / "metadata.yaml", objects_json, memory_json, out_dir / CAMERA_POSES_FILE]
    write_camera_poses(outputs[-1], record.last_frame_id, record.camera_poses)  # where "on the left" looks from
    for frame in record.kept:
        path = out_dir / f"boxes_frame_{frame.index:06d}.png"
        save_rgb(path, draw_boxes_on_frame(frame, objects))
        outputs.append(path)
    top = out_dir / "top_down.png"
    camera_path = np.array([p.T_world_camera[:3, 3] for p in record.camera_poses])
    save_top_down_map(top, objects + structure, mapper.occupancy.occupied_voxels(), camera_path,
                      title=f"{source.name}: {len(objects)} objects, {len(structure)} parts of the room, "
                            f"{processed} frames")
    sheet = out_dir / "objects.png"
    save_contact_sheet(sheet, objects + structure, record.views,
                       title=f"{source.name}: the {len(objects)} published objects and {len(structure)} parts of the "
                             "room, each on a frame where it was seen")
    return [*outputs, top, sheet]


def _frames_expected(source: FrameSource, stride: int, max_frames: int | None) -> int:
    """How many frames the run will read (0: unknown), for spreading the pictures over them."""
    expected = len(source)
    n_expected = (expected + stride - 1) // stride if expected else 0
    if max_frames is not None:
        n_expected = min(n_expected, max_frames) if n_expected else max_frames
    return n_expected


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
    record = _RunRecord(_picture_indices(_frames_expected(source, stride, max_frames), n_pictures),
                        RecentChanges(mapper.config.changes.marker_window_s))
    writer = BackgroundBagWriter(SceneBagWriter(out_dir, write_inputs=write_inputs))
    started = time.perf_counter()
    try:
        frames = source.frames(stride=stride, max_frames=max_frames)
        stopped = _map_frames(frames if progress is None else progress(frames), mapper, writer, record, should_stop)
    except KeyboardInterrupt:
        writer.close()  # stopped at once: what was written stays a readable bag
        raise
    except BaseException:
        writer.abort()  # failed (an OS error, a full disk): no second error from closing
        raise
    bag_path = writer.close()
    seconds = time.perf_counter() - started
    processed, skipped = record.processed, tuple(record.skipped)
    if processed == 0 and stopped:
        return RunSummary(record.frames_read, 0, skipped, (), (), record.timer.mean_ms(), (), stopped=True,
                          seconds=seconds)
    if processed == 0:
        reason = skipped[0] if skipped else "the source yielded no frames"
        raise InputError(f"{source.name}: no usable frame ({len(skipped)} skipped; first: {reason})")
    outputs = [bag_path, *_write_results(out_dir, source, mapper, record)]
    return RunSummary(record.frames_read, processed, skipped, tuple(mapper.memory.published_objects()),
                      tuple(mapper.memory.objects()), record.timer.mean_ms(), tuple(outputs), stopped, seconds,
                      1000.0 * writer.busy_s / max(processed, 1))
