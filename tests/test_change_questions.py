"""Questions about what changed are answered from the change events; every other phrase is grounded as before."""

from __future__ import annotations

import numpy as np
import pytest
from grounding_scenes import kitchen

from embodied_ros.grounding import Grounder
from embodied_ros.grounding.change_questions import parse_change_question
from embodied_ros.memory.change_events import ChangeKind, ChangeLog

S = 1_000_000_000


@pytest.fixture(scope="module")
def grounder() -> Grounder:
    return Grounder(load_encoder=False)


def _history() -> list:
    """In the kitchen scene: cup #1 moved from the table's west end to where it is now; a book was taken from
    the table; a bottle is new by the sofa (ids as in grounding_scenes.kitchen, where the bottle stands farther)."""
    log = ChangeLog()
    scene = kitchen()
    cup, bottle = scene.objects[1].box, scene.objects[10].box.copy()
    bottle[1] = 2.4  # by the sofa
    was = cup.copy()
    was[:2] = [-0.2, 0.2]
    book = np.array([0.3, -0.2, 0.77, 0.2, 0.15, 0.04, 0.0, 0.0, 0.0])
    removed = log.add(ChangeKind.REMOVED, 1, "cup", "white", was, None, 10 * S, 100, 5 * S)
    log.add(ChangeKind.REMOVED, 12, "book", "red", book, None, 11 * S, 110, 6 * S)
    log.add(ChangeKind.MOVED, 1, "cup", "white", was, cup, 12 * S, 120, 5 * S, (removed.seq,))
    log.add(ChangeKind.NEW, 10, "bottle", None, None, bottle, 13 * S, 130)
    return log.current()


@pytest.mark.parametrize(("phrase", "kinds", "anchor", "thing"), [
    ("what changed on the table?", None, "the table", ""),
    ("What moved near the sofa", (ChangeKind.MOVED,), "the sofa", ""),
    ("what is missing from the table?", (ChangeKind.REMOVED, ChangeKind.MOVED), "the table", ""),
    ("what is new?", (ChangeKind.NEW, ChangeKind.MOVED), "", ""),
    ("where did the mug go?", None, "", "mug"),
    ("what happened to the chair", None, "", "chair"),
])
def test_change_questions_are_told_apart_from_referring_phrases(phrase, kinds, anchor, thing) -> None:
    q = parse_change_question(phrase)
    assert q is not None and (q.kinds, q.anchor, q.thing) == (kinds, anchor, thing)


@pytest.mark.parametrize("phrase", ["the cup on the table", "what is on the table", "where is the cup?",
                                    "the new cup", "the chair that moved"])
def test_referring_phrases_are_no_change_questions(phrase) -> None:
    assert parse_change_question(phrase) is None


def test_what_changed_on_the_table(grounder: Grounder) -> None:
    r = grounder.ground("what changed on the table?", kitchen(), changes=_history())
    assert r.success and r.message.startswith("2 changes on or near diningtable #0: ")
    assert "moved cup #1" in r.message and "removed book #12" in r.message and "bottle" not in r.message
    assert r.best.object.id == 1 and r.best.object.confidence == 1.0  # the newest: the cup, where it is now
    (book,) = r.alternatives
    assert book.object.id == 12 and book.object.confidence == 0.0 and book.object.box[0] == 0.3  # where it stood
    assert grounder.ground("what changed near the sofa?", kitchen(), changes=_history()).best.object.id == 10
    nothing = grounder.ground("what moved near the sofa?", kitchen(), changes=_history())
    assert not nothing.success and nothing.message == "nothing moves on or near sofa #7 (no change events)"


def test_where_did_the_mug_go(grounder: Grounder) -> None:
    r = grounder.ground("where did the mug go?", kitchen(), changes=_history())  # "mug" is a cup
    assert r.success and r.best.object.id == 1 and r.message.startswith("moved cup #1 (white)")
    assert r.message.endswith("now on diningtable #0")
    gone = grounder.ground("where did the book go?", kitchen(), changes=_history())
    assert not gone.success and gone.best is None  # taken away: nowhere to send the robot
    assert "removed book #12 (red)" in gone.message and "where it went was not seen" in gone.message
    new = grounder.ground("where did the bottle go?", kitchen(), changes=_history())
    assert not new.success and "no bottle was seen to move" in new.message and new.alternatives[0].object.id == 10
    same = grounder.ground("where is the sofa now?", kitchen(), changes=_history())
    assert same.success and same.best.object.id == 7 and same.message.startswith("no change of a sofa was seen")


def test_without_changes_every_phrase_is_a_referring_phrase(grounder: Grounder) -> None:
    assert not grounder.ground("what changed on the table?", kitchen()).message.startswith("2 changes")
    assert grounder.ground("the cup on the table", kitchen(), changes=_history()).best.object.id in (1, 2)
