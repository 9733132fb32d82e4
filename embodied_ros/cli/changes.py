"""`embodied-ros changes`: what changed in a room, from a finished run or from a saved map and a later recording.

``changes RUN`` lists a run's change events (objects.json's ``changes``, else memory.json's history).
``changes MAP_DIR RECORDING`` is a robot coming back: the saved map (memory.json, with the views it was made
from, and occupancy.npz when saved by the node) is loaded, the later recording runs through the pipeline
from it, and what changed since the map is listed. No re-localisation is done: the recording's poses must be
in the map's world frame (the same trajectory system, or one registered to it beforehand). A recording
whose clock starts before the map's last frame (a folder numbered from 0 again) is shifted to start a minute
after it: it was recorded later.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import FrameError, InputError, json_error_line, os_error_line
from ..frame import Frame
from ..map_files import MEMORY_FILE
from ..memory.change_events import ChangeEvent, ChangeLog
from ..sources.base import FrameSource
from .options import add_run_options
from .recording import frames_to_run, open_recording, run_into_folder

LATER_NS = 60 * 10**9  # a recording that restarts its clock is taken to start this long after the map's last frame
SAME_FRAME_NOTE = ("no re-localisation: the recording's poses are taken to be in the map's world frame; a recording "
                   "in another frame shows every object of the map removed and every object of the room new")


def add_changes_parser(sub: Any) -> None:
    """The ``changes`` subcommand, with `run`'s model and recording options (--out optional)."""
    p = sub.add_parser("changes", help="what changed: a run's change events, or a saved map against a later "
                                       "recording (objects removed, new, moved)")
    p.add_argument("target", type=Path, help="a finished run's folder, or a saved map's folder (with memory.json) "
                                             "when RECORDING follows")
    p.add_argument("recording", nargs="?", default=None,
                   help="a later recording of the same room, its poses in the map's world frame (as for `run`)")
    p.add_argument("--json", action="store_true", help="print the events as JSON")
    add_run_options(p, out_required=False)
    p.set_defaults(func=cmd_changes)


def read_changes(run_dir: Path) -> list[ChangeEvent]:
    """The change events of a finished run (objects.json's history, else memory.json's).

    Raises:
        InputError: the folder holds neither, or one cannot be read.
    """
    for name, pick in (("objects.json", lambda d: d.get("changes")),
                       (MEMORY_FILE, lambda d: (d.get("changes") or {}).get("log"))):
        path = run_dir / name
        if not path.is_file():
            continue
        try:
            found = pick(json.loads(path.read_text()))
        except OSError as err:
            raise InputError(f"cannot read {os_error_line(err, path)}") from None
        except ValueError as err:
            raise InputError(f"{path}: {json_error_line(err)}") from None
        if found is None:
            continue
        if isinstance(found, dict):
            return ChangeLog.from_dict(found).current()
        return [ChangeEvent.from_dict(o) for o in found]
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such folder (a finished run's folder, or a saved map with a recording)")
    raise InputError(f"{run_dir}: no change history (objects.json or {MEMORY_FILE} of a run with changes)")


def format_events(events: list[ChangeEvent], what: str) -> str:
    """The events as lines: a count per kind, then one line each."""
    counts = ", ".join(f"{sum(e.kind.value == k for e in events)} {k}" for k in ("moved", "removed", "new"))
    lines = [f"{len(events)} changes {what}" + (f": {counts}" if events else "")]
    lines += [f"  {e.seq:3d}  {e.summary()}  (t {e.stamp_ns / 1e9:.1f} s, frame {e.frame_index})" for e in events]
    return "\n".join(lines)


def cmd_changes(args: argparse.Namespace) -> int:
    if args.recording is None:
        events, what = read_changes(args.target), f"in {args.target}"
    else:
        events, what = _since_map(args), f"since the map {args.target}"
    if args.json:
        print(json.dumps([e.to_dict() for e in events], indent=1))
    else:
        print(format_events(events, what))
    return 0


class _Later(FrameSource):
    """A recording made after the map: stamps that start before ``after_ns`` are shifted to start a minute after."""

    def __init__(self, inner: FrameSource, after_ns: int) -> None:
        self.inner, self.after_ns, self.offset = inner, after_ns, None
        self.name, self.layout = inner.name, inner.layout

    def __len__(self) -> int:
        return len(self.inner)

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        for item in self.inner.frames(stride, max_frames):
            if isinstance(item, Frame):
                if self.offset is None:
                    self.offset = max(0, self.after_ns + LATER_NS - item.stamp_ns)
                    if self.offset:
                        print(f"embodied-ros: the recording's clock starts before the map's last frame: its stamps are "
                              f"shifted by {self.offset / 1e9:.1f} s", file=sys.stderr)
                item = replace(item, stamp_ns=item.stamp_ns + self.offset)
            yield item


def _since_map(args: argparse.Namespace) -> list[ChangeEvent]:
    """Load the map, run the recording from it, and return the changes since the load."""
    from tqdm import tqdm

    from ..config_fields import pipeline_config
    from ..mapper import SceneMapper
    from ..outputs.run_folder import check_output_folder
    from ..sources.preflight import prepare_or_stop

    if not (args.target / MEMORY_FILE).is_file():
        raise InputError(f"{args.target}: no {MEMORY_FILE}: not a saved map or a run's folder")
    if args.out is not None:
        check_output_folder(args.out, args.overwrite)
    args.source = args.recording
    recording, options = open_recording(args)
    with recording:
        source = prepare_or_stop(recording, options)
        config = pipeline_config(args)
        mapper = SceneMapper(config, config.build_perceptor())
        print(mapper.load(args.target), file=sys.stderr)
        believed = mapper.memory.changes.n_established
        source = _Later(source, mapper.memory.changes.latest_stamp_ns(mapper.memory.objects()))
        print(f"embodied-ros: {SAME_FRAME_NOTE}", file=sys.stderr)
        n = frames_to_run(len(source), args.stride, args.max_frames)
        if args.out is not None:
            code = run_into_folder(args, source, mapper, n)
            if code:
                raise SystemExit(code)
        else:
            for frame in tqdm(source.frames(stride=args.stride, max_frames=args.max_frames), total=n, unit="frame",
                              desc=Path(str(args.recording)).name):
                if not isinstance(frame, Exception):
                    mapper.step(frame)
    events = mapper.memory.changes.log.since(since_load=True)
    removed = sum(e.kind.value in ("removed", "moved") for e in events)
    if removed >= 3 and removed > 0.5 * believed:
        print(f"embodied-ros: warning: {removed} of the map's {believed} objects went or moved: is the recording in "
              "the map's world frame?", file=sys.stderr)
    return events
