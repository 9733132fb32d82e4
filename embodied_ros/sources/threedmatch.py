"""3DMatch / SUN3D / 7-Scenes scenes: ``seq-XX`` folders of frames, intrinsics in the scene folder."""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from pathlib import Path

from ..errors import InputError
from ..frame import Frame
from .base import FrameSource
from .folders import SevenScenesFolder
from .registration import Registration

_GAP_NS = 1_000_000_000  # stamps of one sequence start this long after the previous one ends


def sequence_folders(scene: Path) -> list[Path]:
    """Sub-folders of ``scene`` that hold frame-NNNNNN.color.* files (seq-01, seq-02, ...), in name order."""
    if not scene.is_dir():
        return []
    return sorted(d for d in scene.iterdir() if d.is_dir() and any(d.glob("frame-*.color.*")))


class ThreeDMatchScene(FrameSource):
    """All sequences of a scene, one after the other, as one recording.

    Layout: ``scene/camera-intrinsics.txt`` and ``scene/seq-XX/frame-NNNNNN.{color.png|jpg,
    depth.png, pose.txt}`` (each sequence read as a SevenScenesFolder, which finds the scene's
    intrinsics and gravity file one folder up). The sequences' poses share the scene's world
    (as in 7-Scenes and 3DMatch). To read one sequence, give its folder instead of the scene's.

    Index: position over all sequences. Stamps: each sequence's own (frame number / 30 fps),
    shifted so that a sequence starts one second after the previous one ended.

    Raises:
        InputError: no sequence folder, or a sequence the SevenScenesFolder refuses.
    """

    layout = "3DMatch / SUN3D scene (seq-XX folders)"

    def __init__(self, path: str | Path, gravity_align: bool = True,
                 registration: Registration | str = Registration.AUTO) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        folders = sequence_folders(self.path)
        if not folders:
            raise InputError(f"3DMatch scene {self.path} has no seq-XX folders with frame-NNNNNN.color.* files")
        self.sequences = [SevenScenesFolder(f, gravity_align=gravity_align, registration=registration) for f in folders]
        self._starts = [0]
        self._stamp_offsets = [0]
        for seq in self.sequences:
            self._starts.append(self._starts[-1] + len(seq))
            last = seq.stamp_ns(seq.frame_numbers[-1])
            self._stamp_offsets.append(self._stamp_offsets[-1] + last + _GAP_NS)
        first = self.sequences[0]
        self.K, self.T_align, self.registration = first.K, first.T_align, first.registration
        self.gravity_aligned = all(s.gravity_aligned for s in self.sequences)
        self.gravity_note, self.registration_note = first.gravity_note, first.registration_note
        self.details = f"{len(folders)} sequences: " + ", ".join(f"{f.name} ({len(s)})"
                                                                  for f, s in zip(folders, self.sequences, strict=True))

    def __len__(self) -> int:
        return self._starts[-1]

    def read(self, index: int) -> Frame:
        """Frame ``index`` over all sequences (FrameError messages name the sequence's file)."""
        if not 0 <= index < len(self):
            raise IndexError(f"frame index {index} out of range (0..{len(self) - 1})")
        k = bisect_right(self._starts, index) - 1
        frame = self.sequences[k].read(index - self._starts[k])
        return dataclasses.replace(frame, index=index, stamp_ns=frame.stamp_ns + self._stamp_offsets[k],
                                   extras={**frame.extras, "sequence": self.sequences[k].path.name})
