"""A generated scene as a FrameSource, so ``embodied-ros run synthetic:SEED`` works like a recording."""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..frame import Frame
from ..sources.base import FrameSource
from .scene import KINECT_720P, SceneConfig, SyntheticScene, generate_scene
from .trajectory import TrajectoryKind

SPEC_PREFIX = "synthetic"
"""Source specs starting with this word name a generated scene (see ``parse_synthetic_spec``)."""


def parse_synthetic_spec(spec: str) -> tuple[int, SceneConfig]:
    """Seed and config from ``synthetic[:SEED | :key=value,...]``.

    Keys: ``seed`` (int), ``frames`` (int), ``size`` (``480x480`` or ``1280x720``; 1280x720
    uses the Azure Kinect's colour intrinsics), ``trajectory`` (``loop`` or ``spin``),
    ``noise`` (``on`` / ``off``). Example: ``synthetic:seed=7,frames=80,size=1280x720``.

    Raises:
        InputError: on an unknown key or a bad value.
    """
    head, _, rest = spec.partition(":")
    if head != SPEC_PREFIX:
        raise InputError(f"{spec}: not a synthetic scene spec (expected synthetic[:SEED|:key=value,...])")
    seed, config = 0, SceneConfig()
    try:
        items = [p for p in rest.split(",") if p]
        for item in items:
            key, eq, value = item.partition("=")
            if not eq:
                key, value = "seed", key
            if key == "seed":
                seed = int(value)
            elif key == "frames":
                config = replace(config, trajectory=replace(config.trajectory, n_frames=int(value)))
            elif key == "size":
                w, h = (int(x) for x in value.lower().split("x"))
                base = KINECT_720P if (w, h) == (1280, 720) else config
                config = replace(config, width=w, height=h, focal=base.focal)
            elif key == "trajectory":
                config = replace(config, trajectory=replace(config.trajectory, kind=TrajectoryKind(value)))
            elif key == "noise":
                if value not in ("on", "off"):
                    raise ValueError(value)
                config = replace(config, noise=None if value == "off" else SceneConfig().noise)
            else:
                raise InputError(f"{spec}: unknown synthetic scene option {key!r} "
                                 "(known: seed, frames, size, trajectory, noise)")
    except ValueError as err:
        raise InputError(f"{spec}: bad synthetic scene option ({err})") from None
    if config.trajectory.n_frames < 1 or config.width < 16 or config.height < 16:
        raise InputError(f"{spec}: a synthetic scene needs >= 1 frame and images of at least 16x16 pixels")
    return seed, config


class SyntheticSource(FrameSource):
    """Frames of a generated scene, rendered on demand (random access, any order).

    Args:
        scene: a generated scene; or leave it None and give ``seed`` and ``config``.
        seed: scene seed when ``scene`` is None.
        config: scene config when ``scene`` is None.

    Attributes:
        scene: the SyntheticScene, with its ground truth (boxes, visibility, occupancy, prompts).
    """

    gravity_aligned = True  # the generator's world is z-up with the floor at z = 0
    gravity_note = "the generator's world is z-up"
    layout = "synthetic scene"
    poses_need_check = False  # exact by construction

    def __init__(self, scene: SyntheticScene | None = None, *, seed: int = 0,
                 config: SceneConfig | None = None) -> None:
        self.scene = scene if scene is not None else generate_scene(seed, config or SceneConfig())
        self.name = f"synthetic:seed={self.scene.seed}"

    @classmethod
    def from_spec(cls, spec: str) -> SyntheticSource:
        """A source from a ``synthetic[:...]`` spec (see ``parse_synthetic_spec``)."""
        seed, config = parse_synthetic_spec(spec)
        return cls(seed=seed, config=config)

    def __len__(self) -> int:
        return len(self.scene)

    def read(self, index: int) -> Frame:
        """Render frame ``index`` (colour, noisy depth, pose, intrinsics)."""
        if not 0 <= index < len(self.scene):
            raise IndexError(f"frame {index} outside 0..{len(self.scene) - 1}")
        return self.scene.frame(index)
