"""`ground_command` (embodied-ros ground RUN_DIR "phrase") on a saved memory: text, JSON, picture, errors."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
from grounding_scenes import kitchen, write_memory

from embodied_ros.grounding.cli import ground_command


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    write_memory(tmp_path / "memory.json", kitchen())
    return tmp_path


def test_text_answer_and_picture(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picture = run_dir / "pics" / "answer.png"
    assert ground_command(run_dir, "the cup on the table next to the tv", False, picture) == 0
    out = capsys.readouterr().out
    assert out.startswith("cup #1: on diningtable #0, nearest to tvmonitor #4") and "centre (0.50, 0.10, 0.80)" in out
    image = cv2.imread(str(picture))
    assert image is not None and image.shape[0] > 500
    assert not (run_dir / "pics" / "answer_frame.png").exists()  # no scene.mcap: no frame picture


def test_json_answer(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ground_command(run_dir, "the lamp above the table", True, None) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["success"] and data["best"]["id"] == 8 and data["best"]["anchor_ids"] == [0]
    assert data["parsed"]["relations"] == [{"relation": "above", "type": "vertical", "anchors": ["table"],
                                            "negated": False}]
    assert len(data["best"]["box"]) == 9


def test_no_answer_and_bad_run_dir(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ground_command(run_dir, "", False, None) == 1
    assert "empty phrase" in capsys.readouterr().out
    assert ground_command(tmp_path / "nothing", "the cup", False, None) == 2
    err = capsys.readouterr().err
    assert err.startswith("embodied-ros: error:") and len(err.strip().splitlines()) == 1
