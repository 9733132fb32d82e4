"""Grounding on real data: the team's phrases about redkitchen (tests/data/redkitchen_phrases.json)
against a memory built here from every 4th frame (scored by tests/redkitchen_phrases.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import KITCHEN
from redkitchen_phrases import PHRASES, evaluate, ground_truth_boxes

from embodied_ros.grounding import Grounder
from embodied_ros.grounding.map_view import published_snapshot
from embodied_ros.grounding.viewpoint import Viewpoint
from embodied_ros.memory import SceneMemory

# Every phrase's answer is a ground-truth object (or none). An answer is right, false (success with the wrong
# object, or with one where nothing fits) or not found. Bounds measured on this test's map (every 4th frame,
# the default detector and memory; issue 31: 79 right, 3 false, 59 not found of 141; issue 45, with its 76
# phrases: see the test's printout): most not-founds are the map's (objects the COCO detector does not see: the
# sink, the keyboard, the gamepad), and a false answer is what a robot must never act on. Better maps should
# raise MIN_RIGHT.
MAX_FALSE = 0.02
MIN_RIGHT = 0.45


def test_phrase_file_is_well_formed() -> None:
    doc = json.loads(PHRASES.read_text())
    assert "written by the embodied_ros team" in doc["note"]
    phrases = doc["phrases"]
    assert sum(p.get("first_set", False) for p in phrases) >= 20
    assert {p["kind"] for p in phrases} == {"relation", "class", "viewer", "colour", "material", "negation", "absent",
                                            "compound", "missing anchor", "weak relation", "colour contradiction",
                                            "unknown words", "with", "from", "count", "half-mapped superlative",
                                            "ordinal"}
    assert sum(p.get("set") == "issue31" for p in phrases) >= 50
    assert sum(p.get("set") == "issue45" for p in phrases) >= 70
    assert sum(p.get("set") == "issue39" for p in phrases) >= 30  # counters, shelves, cabinets, walls
    assert all(isinstance(p["expected_gt"], list) for p in phrases)
    if KITCHEN.is_dir():
        gt = ground_truth_boxes(KITCHEN)
        assert all(set(p["expected_gt"]) <= set(gt) for p in phrases)
        assert all((KITCHEN / f"frame-{p['viewpoint_frame']:06d}.pose.txt").is_file()
                   for p in phrases if p.get("viewpoint_frame") is not None)


def test_team_phrases_on_redkitchen(kitchen_run: Path) -> None:
    memory = SceneMemory.load(kitchen_run / "memory.json")
    snapshot = published_snapshot(memory)  # what RViz shows, and what the CLI and the service ground in
    grounder = Grounder(min_observations=memory.config.min_observations)

    def ground(phrase: str, viewpoint: Viewpoint | None):
        return grounder.ground(phrase, snapshot, viewpoint=viewpoint, vocabulary=memory.vocabulary)

    def viewpoint(T: np.ndarray, K: np.ndarray, width: int, number: int) -> Viewpoint:
        return Viewpoint(T, f"the camera of frame-{number:06d}", math.atan2(0.5 * width, float(K[0, 0])))

    outcomes = evaluate(ground, KITCHEN, viewpoint)
    print("\n".join(o.line for o in outcomes))
    verdicts = [o.verdict for o in outcomes]
    print({v: verdicts.count(v) for v in ("right", "false", "not found")})
    assert verdicts.count("false") <= MAX_FALSE * len(outcomes), [o.line for o in outcomes if o.verdict == "false"]
    assert verdicts.count("right") >= MIN_RIGHT * len(outcomes)
    # Things that are not in the kitchen: no answer, unless the map holds a (false) object of exactly that
    # class; never one read into another class by word similarity.
    absent = [o for o in outcomes if o.kind == "absent"]
    answered = [o.line for o in absent if o.success]
    assert len(answered) <= 2 and not any("read '" in line for line in answered), answered


@pytest.mark.parametrize("phrase", ["the chair on the left", "the nearest chair", "the white mug"])
def test_viewer_and_colour_phrases_are_understood(kitchen_run: Path, phrase: str) -> None:
    """With the run's last camera as the viewpoint and its colours, these phrases are parsed and evaluated
    (whether the answer is right depends on the map; the engine must not ignore the words; a pick by rank may be
    "not sure" where the memory holds unpublished chairs)."""
    memory = SceneMemory.load(kitchen_run / "memory.json")
    from embodied_ros.outputs.camera_poses import read_camera_poses

    last = read_camera_poses(kitchen_run / "camera_poses.json")[-1]
    grounder = Grounder(min_confidence=0.0)  # the words, not the map's confidence, are under test
    r = grounder.ground(phrase, published_snapshot(memory), viewpoint=Viewpoint.from_camera_pose(last),
                        vocabulary=memory.vocabulary)
    # Answered, or "not sure" for a pick among chairs the memory holds in part (the chair pushed under the table):
    # either way the words were evaluated.
    assert (r.success or r.message.startswith("not sure")) and "note" not in r.message, r.message
