"""SceneMapper: the one home of the per-frame step (perceive -> memory -> occupancy) and the map files.

The offline run (pipeline.py), the node (ros/node.py), the demo and the held-out evaluation all
call :meth:`SceneMapper.step`, as nvblox's ROS node calls its ``Mapper``. ROS-free. A lock
serialises updates against reset/load; readers use :meth:`snapshot`, which never waits for an
update to finish. The perceptor may arrive after the mapper is built (the node loads it on a
thread while its services already answer).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .detections import FramePerception
from .errors import InputError
from .frame import Frame
from .grounding.engine import GrounderConfig
from .keyframe_policy import KeyframePolicy
from .map_files import MEMORY_FILE, OCCUPANCY_FILE, recover, save_atomically
from .memory.changes import ChangeConfig
from .memory.config import MemoryConfig
from .memory.scene_memory import SceneMemory
from .memory.scene_object import MemorySnapshot, SceneObject, UpdateResult
from .network.lifting import LiftingParams
from .network.perceptor import Perceptor
from .network.weights import DEFAULT_MODEL
from .occupancy.config import OccupancyConfig
from .occupancy.results import OccupiedVoxels
from .occupancy.voxel_map import OccupancyMap
from .runtime.contract import Backend


@dataclass(frozen=True)
class ModelChoice:
    """Which perceptor runs, and on what (``network.registry.build_perceptor``'s arguments)."""

    # Perceptor name (see `embodied-ros run --help`).
    model: str = DEFAULT_MODEL
    # Folder (or .weights file) with the model's files; empty: models/ and $EMBODIED_ROS_MODELS.
    weights: str = ""
    # Fetch missing model files from their pinned upstream URL (sha256-checked); never done silently.
    download_weights: bool = False
    # Network backend: "auto" (TensorRT when a GPU and tensorrt are present, else ONNX Runtime),
    # "tensorrt", "onnxruntime" or "torch".
    backend: str = Backend.AUTO.value
    # backend "tensorrt" but unusable here (no GPU, no tensorrt): run ONNX Runtime instead of stopping.
    allow_fallback: bool = False
    # Half-precision TensorRT engine (FP16 flag on TensorRT 10, fp16 ONNX types on TensorRT 11).
    fp16: bool = False


@dataclass(frozen=True)
class PipelineConfig:
    """Everything the per-frame step is built from; each part keeps its own defaults."""

    runtime: ModelChoice = field(default_factory=ModelChoice)
    lifting: LiftingParams = field(default_factory=LiftingParams)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    occupancy: OccupancyConfig = field(default_factory=OccupancyConfig)
    grounder: GrounderConfig = field(default_factory=GrounderConfig)
    keyframes: KeyframePolicy = field(default_factory=KeyframePolicy)
    changes: ChangeConfig = field(default_factory=ChangeConfig)

    def build_perceptor(self) -> Perceptor:
        """The network (+ lifting) named by ``runtime`` (loads weights: seconds)."""
        from .network.registry import build_perceptor

        r = self.runtime
        return build_perceptor(r.model, weights=Path(r.weights) if r.weights else None, download=r.download_weights,
                               backend=r.backend, allow_fallback=r.allow_fallback, fp16=r.fp16,
                               lifting=self.lifting)


@dataclass(frozen=True)
class StepResult:
    """What one keyframe did.

    Attributes:
        perception: the perceptor's world detections (and occupancy grid) of the frame.
        update: what ``SceneMemory.update`` did (created, updated, merged ids; discovery seconds).
        stages_s: seconds per stage: the perceptor's own ("network", "lifting"), "memory" (the
            whole update, discovery included) and "occupancy".
    """

    perception: FramePerception
    update: UpdateResult
    stages_s: dict[str, float]

    def stage_split_s(self) -> dict[str, float]:
        """Seconds per stage with the memory's update split: "memory" (association and fusion), "discovery"
        (unknown objects) and "structure" (the room's parts) apart; the offline run reports these."""
        stages, u = self.stages_s, self.update
        return {"network": stages.get("network", 0.0), "lifting": stages.get("lifting", 0.0),
                "memory": stages["memory"] - (u.discovery_s - u.discovery_ahead_s) - u.structure_s,
                "discovery": u.discovery_s,
                "structure": u.structure_s, "occupancy": stages["occupancy"]}


@dataclass(frozen=True)
class PublishedScene:
    """What the map shows after a keyframe: the outputs write and publish exactly this."""

    objects: list[SceneObject]  # the published objects (confident, at most N per class)
    movers: list[SceneObject]  # the people and animals seen now, never among the objects
    structure: list[SceneObject]  # the room's published parts (floor, walls, counters, ...)
    voxels: OccupiedVoxels  # the occupancy map's occupied voxels


class SceneMapper:
    """Perceptor, scene memory, occupancy map and grounder behind one lock.

    Args:
        config: the parts' settings; a fresh memory and map are built from it.
        perceptor: the network (+ lifting); None until it is set (``mapper.perceptor = ...``).
        memory, occupancy: start from these instead of fresh ones (e.g. a memory that already
            holds objects).
        grounder: the grounding engine; None builds one from ``config.grounder`` on first use.
        discover_alongside: run discovery on a thread of its own while the network looks at the frame.
    """

    def __init__(self, config: PipelineConfig | None = None, perceptor: Perceptor | None = None, *,
                 memory: SceneMemory | None = None, occupancy: OccupancyMap | None = None,
                 grounder: Any = None, discover_alongside: bool = True) -> None:
        self.config = config = config if config is not None else PipelineConfig()
        self.perceptor = perceptor
        self.memory = memory if memory is not None else SceneMemory.from_config(config.memory, config.changes)
        self.occupancy = occupancy if occupancy is not None else OccupancyMap.from_config(config.occupancy)
        self._grounder = grounder
        self.lock = threading.Lock()
        self.frames_processed = 0
        self.last_frame: Frame | None = None  # the latest keyframe: viewer-centred words are meant from its camera
        # Discovery runs on a thread of its own while the network looks at the frame (same answers: it needs
        # the frame alone); off: one after the other.
        self.discover_alongside = discover_alongside
        self._alongside: ThreadPoolExecutor | None = None
        self._pending: Future | None = None  # discovery started by prepare, not yet waited for

    # ---- the per-frame step ------------------------------------------------------------------

    def step(self, frame: Frame, before_occupancy: Callable[[FramePerception], None] | None = None) -> StepResult:
        """Perceive ``frame``, update the memory, fuse the occupancy map.

        Args:
            frame: a posed keyframe.
            before_occupancy: called with the perception once the memory holds the frame's objects
                and before the (slower) occupancy fusion, e.g. to publish the objects first.
        """
        perception, update, stages = self._remember(frame)
        if before_occupancy is not None:
            before_occupancy(perception)
        stages["occupancy"] = self._integrate(frame, perception)
        return StepResult(perception, update, stages)

    def _remember(self, frame: Frame) -> tuple[FramePerception, UpdateResult, dict[str, float]]:
        """Network and memory for one keyframe: (perception, the memory's update result, seconds per stage)."""
        if self.perceptor is None:
            raise RuntimeError("the network is not loaded yet")
        # Discovery under way (this frame's, or a skipped frame's: then the update does this frame's itself).
        pending, self._pending = self._pending, None
        if pending is None and self.discover_alongside and getattr(self.perceptor, "carries_frame", True):
            pending = self._discovery_thread().submit(self._prepare_now, frame)
        try:
            perception = self.perceptor.perceive(frame)
        finally:
            if pending is not None:
                pending.result()
        stages = {k: float(v) for k, v in perception.timings_s.items()}
        with self.lock:
            start = time.perf_counter()
            update = self.memory.update(perception)
            self.frames_processed += 1
            self.last_frame = frame
        stages["memory"] = time.perf_counter() - start
        return perception, update, stages

    def prepare(self, frame: Frame) -> Future:
        """Start the part of ``frame``'s step that needs the frame alone (SceneMemory.prepare: discovery) on
        discovery's own thread, e.g. while its detections are on their way; ``step(frame)`` takes it as done
        (the next ``step`` waits for it in any case). The future's result: False when there was nothing to do."""
        self._pending = self._discovery_thread().submit(self._prepare_now, frame)
        return self._pending

    def _prepare_now(self, frame: Frame) -> bool:
        with self.lock:
            return self.memory.prepare(frame)

    def _discovery_thread(self) -> ThreadPoolExecutor:
        if self._alongside is None:
            self._alongside = ThreadPoolExecutor(1, thread_name_prefix="embodied-discovery")
        return self._alongside

    def _integrate(self, frame: Frame, perception: FramePerception) -> float:
        """Fuse the keyframe into the occupancy map; seconds taken."""
        with self.lock:
            start = time.perf_counter()
            self.occupancy.integrate_frame(frame, perception)
            return time.perf_counter() - start

    def integrate_depth(self, frame: Frame) -> float:
        """Fuse a frame the network skipped into the occupancy map, its depth only; seconds taken."""
        with self.lock:
            start = time.perf_counter()
            self.occupancy.integrate_depth(frame)
            return time.perf_counter() - start

    # ---- reading -----------------------------------------------------------------------------

    def published_scene(self) -> PublishedScene:
        """The published objects, the movers seen now, the room's structure and the occupied voxels."""
        memory = self.memory
        structure = memory.published_structure()
        return PublishedScene(memory.published_objects(), memory.current_movers(), structure,
                              self.occupancy.occupied_voxels())

    def seen_in(self, update: UpdateResult) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(id, box, geometry points) of the objects ``update`` created or took a detection into: what was
        seen of them on that keyframe (the contact sheet keeps a view of each)."""
        touched = (self.memory.get(i) for i in (*update.created, *update.updated))
        return [(o.id, o.box, self.memory.geometry_points(o.id)) for o in touched if o is not None]

    def snapshot(self) -> MemorySnapshot:
        """Every object the memory holds, immutable (never waits for an update)."""
        return self.memory.snapshot()

    def published_snapshot(self) -> MemorySnapshot:
        """The published objects (what RViz shows and language speaks about), as a snapshot."""
        from .grounding.map_view import published_snapshot

        return published_snapshot(self.memory)

    def viewpoint(self) -> Any:
        """The latest keyframe's camera, which "on the left" and "the nearest" refer to (None before any)."""
        from .grounding.viewpoint import Viewpoint

        frame = self.last_frame
        return None if frame is None else Viewpoint.from_frame(frame)

    @property
    def grounder(self) -> Any:
        """The grounding engine (built from ``config.grounder`` on first use: loads its text encoder)."""
        if self._grounder is None:
            from .grounding import Grounder

            self._grounder = Grounder.from_config(self.config.grounder)
        return self._grounder

    def ground(self, phrase: str, snapshot: MemorySnapshot | None = None, grounder: Any = None) -> Any:
        """The object ``phrase`` means among the published objects, seen from the latest keyframe.

        Args:
            snapshot: the published snapshot to ground in (None: the current one).
            grounder: an engine to use instead of the mapper's own.
        """
        engine = grounder if grounder is not None else self.grounder
        return engine.ground(phrase, snapshot if snapshot is not None else self.published_snapshot(),
                             viewpoint=self.viewpoint(), vocabulary=self.memory.vocabulary,
                             changes=self.memory.changes.log.current())

    # ---- the map's files ---------------------------------------------------------------------

    def reset(self) -> str:
        with self.lock:
            n = len(self.memory)
            self.memory.reset()
            self.occupancy.reset()
        return f"scene memory cleared ({n} objects forgotten)"

    def save(self, directory: Path) -> str:
        """Write memory.json and occupancy.npz as the folder ``directory``, atomically; returns what was written."""
        with self.lock:
            n, v = len(self.memory), len(self.occupancy.occupied_voxels())

            def write(tmp: Path) -> None:
                self.memory.save(tmp / MEMORY_FILE)
                self.occupancy.save(tmp / OCCUPANCY_FILE)

            save_atomically(directory, write)
        return f"saved {n} objects and {v} occupied voxels to {directory}"

    def load(self, directory: Path) -> str:
        """Replace memory and occupancy by those saved in ``directory`` (InputError when unreadable)."""
        recover(directory)
        if not (directory / MEMORY_FILE).is_file():
            raise InputError(f"no saved map {directory.name!r} in {directory.parent} (save one first)")
        memory = SceneMemory.load(directory / MEMORY_FILE, self.config.changes)
        occ_path = directory / OCCUPANCY_FILE
        occupancy = OccupancyMap.load(occ_path) if occ_path.is_file() else OccupancyMap.from_config(
            self.config.occupancy)
        with self.lock:
            self.memory, self.occupancy = memory, occupancy
        return (f"loaded {len(memory)} objects and {len(occupancy.occupied_voxels())} occupied voxels "
                f"from {directory}")
