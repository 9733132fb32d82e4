"""Before a run: the recording options, the camera, the pose check, gravity, and the source wrapped with their fixes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from ..geometry.transforms import gravity_alignment, invert_transform
from .base import FrameSource
from .camera_checks import CameraCheck, check_camera
from .gravity import GravityEstimate, estimate_gravity
from .pose_check import PoseCheck, PoseConvention, PoseUnits, check_poses, correct_pose
from .registration import Registration

log = logging.getLogger(__name__)

SAMPLE_POSITIONS = (0, 1, 2, 4, 8, 16, 32, 64, 128)
"""Frames read for the checks: short and long gaps from the start, so some pairs see motion."""


@dataclass(frozen=True)
class RecordingOptions:
    """What a recording's files may not say; each field is a `run`/`inspect` option."""

    registration: Registration = Registration.AUTO  # --registration: colour/depth registration model
    intrinsics: tuple[float, float, float, float] | None = None  # --intrinsics FX FY CX CY (TUM, image folders)
    depth_factor: float | None = None  # --depth-factor: depth image value of one metre (TUM 5000, else 1000)
    poses: Path | None = None  # --poses: trajectory file (image folders, TUM, Azure Kinect .mkv)
    pose_convention: PoseConvention = PoseConvention.CAMERA_TO_WORLD  # --pose-convention
    pose_units: PoseUnits = PoseUnits.METRES  # --pose-units: unit of the recorded translations
    pose_check: bool = True  # --pose-check on|off: stop when the poses do not fit the depth
    gravity: tuple[float, float, float] | None = None  # --gravity X,Y,Z: gravity in the recording's world
    estimate_gravity: bool = True  # --gravity auto|off: estimate it when the recording gives none


@dataclass(frozen=True)
class Preflight:
    """What the checks found, and the source to run.

    Attributes:
        source: the recording with the pose fixes and the gravity alignment applied.
        pose_check: the check's result (None when not checked).
        gravity: one line on the world's "up": given, estimated (and how sure) or unknown.
        estimate: the gravity estimate, when one was made (also for a given gravity, to compare).
        problem: the line `run` stops with when the camera cannot be a camera or the poses do not
            fit, else None.
        camera: the camera check of the first readable frame (None when no frame could be read).
    """

    source: FrameSource
    pose_check: PoseCheck | None
    gravity: str
    estimate: GravityEstimate | None
    problem: str | None
    camera: CameraCheck | None = None


def sample_frames(source: FrameSource, positions: tuple[int, ...] = SAMPLE_POSITIONS) -> list[Frame]:
    """The readable frames at ``positions`` (random access, else by streaming the first ones)."""
    n = len(source)
    wanted = [p for p in positions if p < n]
    if not wanted:
        return []
    try:
        frames = []
        for p in wanted:
            try:
                frames.append(source.read(p))
            except FrameError:
                continue
        return frames
    except NotImplementedError:
        keep = set(wanted)
        return [f for f in source.frames(max_frames=max(wanted) + 1) if isinstance(f, Frame) and f.index in keep]


def _option_fix(problem: str, options: RecordingOptions) -> str:
    """The options that turn the poses as given into the convention the check found."""
    invert, millimetres = "inverted" in problem, "millimetres" in problem
    fixes = []
    if invert:
        other = (PoseConvention.CAMERA_TO_WORLD if options.pose_convention is PoseConvention.WORLD_TO_CAMERA
                 else PoseConvention.WORLD_TO_CAMERA)
        fixes.append(f"--pose-convention {other.value}")
    if millimetres:
        fixes.append(f"--pose-units {'m' if options.pose_units is PoseUnits.MILLIMETRES else 'mm'}")
    return " ".join(fixes)


class PreparedSource(FrameSource):
    """A source whose poses get the pose-option fixes and a world rotation (gravity) on the way out.

    ``T = world @ A @ correct(A^-1 @ T_source)``, A the source's own alignment (T_align), so the
    fixes act on the poses as recorded.
    """

    def __init__(self, inner: FrameSource, options: RecordingOptions, world: np.ndarray) -> None:
        self.inner, self.options, self.world = inner, options, world
        self.name, self.layout = inner.name, inner.layout
        self.registration_note, self.intrinsics_note, self.details = (
            inner.registration_note, inner.intrinsics_note, inner.details)
        self.gravity_aligned, self.gravity_note = inner.gravity_aligned, inner.gravity_note
        self.T_align = world @ inner.T_align
        self._A, self._A_inv = inner.T_align, invert_transform(inner.T_align)
        self._camera: tuple[bytes, int, int, str] | None = None  # the last camera checked, and its problem

    def pose(self, T: np.ndarray) -> np.ndarray:
        fixed = correct_pose(self._A_inv @ T, self.options.pose_convention, self.options.pose_units)
        return self.world @ self._A @ fixed

    def _camera_problem(self, frame: Frame) -> str:
        """Why the frame's camera cannot be a camera ("" when it can); checked again only when K or the size change."""
        key = (frame.K.tobytes(), frame.width, frame.height)
        if self._camera is None or self._camera[:3] != key:
            self._camera = (*key, check_camera(frame.K, frame.width, frame.height).problem)
        return self._camera[3]

    def _fix(self, item: Frame | FrameError) -> Frame | FrameError:
        if isinstance(item, FrameError):
            return item
        problem = self._camera_problem(item)
        if problem:  # a camera_info of a bag that changes mid-way: that frame is skipped, never run
            return FrameError(f"frame {item.index} ({item.source_name or self.name}): its intrinsics cannot be a "
                              f"camera's: {problem}")
        try:
            return replace(item, T_world_camera=self.pose(item.T_world_camera))
        except FrameError as err:
            return err

    def __len__(self) -> int:
        return len(self.inner)

    def read(self, index: int) -> Frame:
        fixed = self._fix(self.inner.read(index))
        if isinstance(fixed, FrameError):
            raise fixed
        return fixed

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        for item in self.inner.frames(stride=stride, max_frames=max_frames):
            yield self._fix(item)

    def close(self) -> None:
        self.inner.close()


def prepare(source: FrameSource, options: RecordingOptions, frames: list[Frame] | None = None) -> Preflight:
    """Check the poses and settle gravity (module docstring); the run's source comes back wrapped.

    Args:
        source: the opened recording.
        options: the user's recording options.
        frames: frames to check on (default: sample_frames(source)).

    Returns:
        Preflight; ``problem`` is set when the pose check (if on) finds the poses in another
        convention than the options say: the caller stops with it.
    """
    identity = PreparedSource(source, options, np.eye(4))
    wanted = source.poses_need_check or (options.gravity is None and options.estimate_gravity
                                         and not source.gravity_aligned)
    if frames is None:
        frames = sample_frames(source) if wanted else []
    first = frames[:1] or sample_frames(source, (0,))  # a source that needs no other check: its first frame
    camera = check_camera(first[0].K, first[0].width, first[0].height) if first else None
    if camera is not None and camera.problem:  # nothing else is worth checking on such frames
        return Preflight(identity, None, "not estimated: the camera cannot be a camera's", None,
                         f"{source.name}: the intrinsics ({source.intrinsics_note}) cannot be a camera's: "
                         f"{camera.problem}", camera)
    checked = [identity._fix(f) for f in frames]
    checked = [f for f in checked if isinstance(f, Frame)]
    pose_check = check_poses(checked, source.T_align) if source.poses_need_check else None
    problem = None
    if pose_check is not None and pose_check.mismatch and options.pose_check:
        problem = (f"{source.name}: the poses look {pose_check.mismatch} ({pose_check.summary()}); pass "
                   f"{_option_fix(pose_check.mismatch, options)} (or --pose-check off to run them as they are)")
    elif pose_check is not None and not pose_check.fits:
        log.warning("%s: poses: %s", source.name, pose_check.summary())

    estimate = estimate_gravity(checked) if checked else None
    world, aligned = np.eye(4), source.gravity_aligned
    if options.gravity is not None:
        world, aligned = gravity_alignment(np.asarray(options.gravity)) @ invert_transform(source.T_align), True
        line = f"given (--gravity {','.join(f'{c:g}' for c in options.gravity)})"
    elif source.gravity_aligned:
        line = source.gravity_note
        if estimate is not None and estimate.method == "horizontal surfaces":
            angle = np.degrees(np.arccos(np.clip(-estimate.down[2], -1.0, 1.0)))
            line += f"; the upward-facing surfaces in the depth agree within {angle:.1f} deg"
    elif options.estimate_gravity and estimate is not None:
        world, aligned = gravity_alignment(estimate.down), True
        line = f"{source.gravity_note}; {estimate.summary()}"
    else:
        why = "--gravity off" if not options.estimate_gravity else "no readable frame to estimate it from"
        line = f"{source.gravity_note}; not estimated ({why}): the world frame is not known to be z-up"
    prepared = PreparedSource(source, options, world)
    prepared.gravity_aligned, prepared.gravity_note = aligned, line
    return Preflight(prepared, pose_check, line, estimate, problem, camera)


def prepare_or_stop(source: FrameSource, options: RecordingOptions) -> FrameSource:
    """``prepare`` for a run: log what was found, raise InputError on a camera or pose problem.

    Raises:
        InputError: the camera check's or the pose check's one-line problem.
    """
    found = prepare(source, options)
    if found.problem:
        raise InputError(found.problem)
    if found.camera is not None and found.camera.unusual:
        log.warning("%s: an unusual camera (%s): %s; running anyway", source.name, source.intrinsics_note,
                    "; ".join(found.camera.unusual))
    if found.pose_check is not None and found.pose_check.fits:
        log.info("%s: poses: %s", source.name, found.pose_check.summary())
    log.info("%s: gravity: %s", source.name, found.gravity)
    return found.source
