"""What changed on real data: a saved kitchen map and a later run of its frames (nothing changed), and the
same frames with one object erased from their depth and colour (a constructed change): it is removed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DETECTOR, KITCHEN, KITCHEN_RUN_STRIDE
from erase_object import write_erased_kitchen

from embodied_ros.cli import main

NUMBERS = list(range(0, 1000, 10 * KITCHEN_RUN_STRIDE))  # the frames of kitchen_run (every 4th of the 100)


def _changes(capsys: pytest.CaptureFixture[str], map_dir: Path, recording: Path) -> list[dict]:
    assert main(["changes", str(map_dir), str(recording), "--weights", str(DETECTOR), "--backend", "onnxruntime",
                 "--stride", str(KITCHEN_RUN_STRIDE if recording == KITCHEN else 1), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "no re-localisation" in err
    return json.loads(out)


def test_a_saved_map_and_a_later_run_of_the_same_frames_change_nothing(kitchen_run: Path, capsys) -> None:
    assert _changes(capsys, kitchen_run, KITCHEN) == []
    assert main(["changes", str(kitchen_run)]) == 0  # the map's own run: nothing changed in it either
    assert capsys.readouterr().out.startswith("0 changes in")


def test_an_object_erased_from_a_later_run_is_reported_removed(kitchen_run: Path, tmp_path: Path, capsys) -> None:
    from embodied_ros.recordings import open_source

    objects = json.loads((kitchen_run / "objects.json").read_text())["objects"]
    cups = sorted((o for o in objects if o["class"] == "cup"), key=lambda o: -o["n_looks"])
    assert cups, "the map of the kitchen holds no cup to take away"
    cup = cups[0]
    T_align = open_source(KITCHEN).T_align
    erased = write_erased_kitchen(tmp_path / "later", NUMBERS, np.array(cup["box"]), T_align)
    assert erased > 500  # the cup was in view, and is gone from those frames
    events = _changes(capsys, kitchen_run, tmp_path / "later")
    assert [(e["kind"], e["id"], e["class"]) for e in events] == [("removed", cup["id"], "cup")]
    np.testing.assert_allclose(events[0]["old_box"], cup["box"], atol=0.05)
