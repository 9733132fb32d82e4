"""Issue 45: the words that were dropped ("with", "hanging from", numbers in anchors, material words) and picks by
rank among things half seen. Each case the issue names gives the behaviour it asks for, with either parser where
both read the phrase. Hand-made scenes, z up, metres."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from grounding_scenes import snapshot

from embodied_ros.grounding import Grounder
from embodied_ros.grounding.dependency import load_pipeline
from embodied_ros.grounding.viewpoint import Viewpoint
from embodied_ros.memory import MemorySnapshot
from embodied_ros.memory.object_colour import colour_name

PARSERS = ["rules", *(["spacy"] if load_pipeline() is not None else [])]
WOOD, WHITE, GREY, RED = (33.0, 8.0, 8.0), (88.0, 0.0, 1.0), (60.0, 0.0, 1.0), (45.0, 60.0, 40.0)


@pytest.fixture(scope="module", params=PARSERS)
def g(request: pytest.FixtureRequest) -> Grounder:
    return Grounder(load_encoder=False, parser=request.param)


def coloured(scene: MemorySnapshot, labs: dict[int, tuple[float, float, float]]) -> MemorySnapshot:
    return replace(scene, objects=tuple(replace(o, colour_lab=labs[o.id], colour_name=colour_name(labs[o.id]))
                                        if o.id in labs else o for o in scene.objects))


def looking(position: tuple[float, float, float], towards: tuple[float, float]) -> Viewpoint:
    """A level camera at ``position`` looking horizontally along ``towards``."""
    f = np.array([*towards, 0.0]) / np.linalg.norm(towards)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = np.stack([[f[1], -f[0], 0.0], [0, 0, -1.0], f], axis=1), position
    return Viewpoint(T, "the test camera")


# -- "with": support, containment, a relation said the other way round, a part ------------------------------------

def shelves_and_cups() -> MemorySnapshot:
    """Two shelves (0 bare, 1 with two books on its top); a table (2) with a cup (3) holding a spoon (4) and an
    empty cup (5); a bin (6) under the table; two boxes on the floor (9 empty, 10 with a cup (11) at its bottom)."""
    return snapshot([
        ("shelf", [-2.0, 0.0, 0.5, 0.8, 0.3, 1.0]), ("shelf", [2.0, 0.0, 0.5, 0.8, 0.3, 1.0]),
        ("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75]),
        ("cup", [0.3, 0.0, 0.8, 0.09, 0.09, 0.1]), ("spoon", [0.3, 0.0, 0.84, 0.02, 0.02, 0.16]),
        ("cup", [-0.4, 0.1, 0.8, 0.09, 0.09, 0.1]), ("bin", [0.2, 0.1, 0.2, 0.3, 0.3, 0.4]),
        ("book", [1.8, 0.0, 1.04, 0.2, 0.15, 0.08]), ("book", [2.2, 0.0, 1.04, 0.2, 0.15, 0.08]),
        ("box", [0.0, 2.0, 0.2, 0.4, 0.4, 0.4]), ("box", [1.0, 2.0, 0.2, 0.4, 0.4, 0.4]),
        ("cup", [1.0, 2.0, 0.07, 0.09, 0.09, 0.1]),
    ])


@pytest.mark.parametrize(("phrase", "want"), [
    ("the shelf with the books on it", 1), ("the shelf with the book", 1),
    ("the cup with the spoon in it", 3), ("the table with a bin under it", 2), ("the box with the cup in it", 10),
])
def test_with_names_what_the_object_holds_or_contains(g: Grounder, phrase: str, want: int) -> None:
    """'with' was 'not understood'."""
    r = g.ground(phrase, shelves_and_cups())
    assert r.success and r.best.object.id == want, r.message


def test_with_a_part_cannot_be_checked(g: Grounder) -> None:
    """'the mug with the handle': the map holds whole objects, so the answer cannot be checked against it."""
    r = g.ground("the cup with the handle", shelves_and_cups())
    assert not r.success and "a part or look of an object" in r.message, r.message
    assert r.alternatives[0].object.class_name == "cup"


# -- "hanging from / on": held from above or from the side ---------------------------------------------------------

def hanging_scene() -> MemorySnapshot:
    """A shelf (0) with a lamp hanging under it (1), a lamp standing on the floor beside it (2); a tall cabinet
    (3) with a lamp hung on its side (4) and a floor lamp touching it (5)."""
    return snapshot([("shelf", [0.0, 0.0, 1.6, 1.0, 0.3, 0.3]), ("lamp", [0.0, 0.0, 1.3, 0.2, 0.2, 0.3]),
                     ("lamp", [0.7, 0.0, 0.4, 0.3, 0.3, 0.8]), ("cabinet", [3.0, 0.0, 1.0, 0.6, 0.5, 2.0]),
                     ("lamp", [3.4, 0.1, 1.3, 0.2, 0.2, 0.4]), ("lamp", [3.4, -0.2, 0.8, 0.2, 0.2, 1.6])])


def test_hanging_from_is_held_from_above(g: Grounder) -> None:
    """'the lamp hanging from the ceiling' was "'from' is not understood"; the ceiling is no object of the map."""
    r = g.ground("the lamp hanging from the ceiling", hanging_scene())
    assert not r.success and "ceiling" in r.message and "not understood" not in r.message, r.message
    r = g.ground("the lamp hanging from the shelf", hanging_scene())
    assert r.success and r.best.object.id == 1, r.message
    assert not [a for a in r.alternatives if a.object.id == 2], r.message  # standing on the floor: not hanging
    r = g.ground("the lamp hanging on the cabinet", hanging_scene())  # held from the side
    assert r.success and r.best.object.id == 4 and not [a for a in r.alternatives if a.object.id == 5], r.message


# -- numbers in anchors ---------------------------------------------------------------------------------------------

def plates(n: int) -> MemorySnapshot:
    """A table (0) with a cup (1) between two plates (2, 3: the second only when n == 2), a cup (last) at its end."""
    objects = [("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75]), ("cup", [0.0, 0.0, 0.8, 0.09, 0.09, 0.1]),
               ("plate", [-0.4, 0.0, 0.76, 0.25, 0.25, 0.02]), ("plate", [0.4, 0.0, 0.76, 0.25, 0.25, 0.02])]
    return snapshot([*objects[:2 + n], ("cup", [0.7, 0.3, 0.8, 0.09, 0.09, 0.1])])


def test_a_count_in_an_anchor_is_checked(g: Grounder) -> None:
    """'the cup between the two plates' was "between needs two objects" and "'two' is not understood"."""
    r = g.ground("the cup between the two plates", plates(2))
    assert r.success and r.best.object.id == 1 and "between plate #2 and plate #3" in r.message, r.message
    assert g.ground("the cup between the plates", plates(2)).best.object.id == 1
    r = g.ground("the cup between the two plates", plates(1))  # the map holds one plate
    assert not r.success and "needs 2" in r.message and "holds 1" in r.message, r.message
    two = g.ground("the table with two cups on it", plates(2))
    assert two.success and two.best.object.id == 0, two.message
    r = g.ground("the table with three cups on it", plates(2))
    assert not r.success and "needs 3" in r.message, r.message
    fallen = snapshot([*((n, list(o.box)) for n, o in zip(plates(2).class_names, plates(2).objects, strict=True)),
                       ("cup", [1.5, 1.0, 0.05, 0.09, 0.09, 0.1])])  # a third cup, on the floor
    r = g.ground("the table with three cups on it", fallen)  # three cups mapped, two on the table
    assert not r.success and "three cups" in r.message, r.message


# -- superlatives and ordinals only over what is known ----------------------------------------------------------------

CAMERA = looking((0.0, 0.0, 1.2), (0.0, 1.0))  # facing +y: +x is on the right


def chairs(hidden_x: float, hidden_y: float = 3.0, kind: str = "chair", seen: int = 2) -> tuple[MemorySnapshot,
                                                                                                 MemorySnapshot]:
    """Published: chairs at x = -1, 0 (ids 0, 1) 3 m ahead, a monitor (2) at x = -0.5; hidden: one object of
    class ``kind`` (id 3) at (``hidden_x``, ``hidden_y``), detected ``seen`` times, never published."""
    shown = snapshot([("chair", [-1.0, 3.0, 0.45, 0.5, 0.5, 0.9]), ("chair", [0.0, 3.0, 0.45, 0.5, 0.5, 0.9]),
                      ("tvmonitor", [-0.5, 3.5, 1.2, 0.8, 0.1, 0.5])])
    size = [0.5, 0.5, 0.9] if kind == "chair" else [0.7, 0.1, 0.45]
    hidden = snapshot([("diningtable", [9, 9, 0.4, 1, 1, 0.8]), ("chair", [9, 9, 0.4, 1, 1, 0.8]),
                       ("chair", [9, 9, 0.4, 1, 1, 0.8]), (kind, [hidden_x, hidden_y, 0.45, *size])], n_obs=seen)
    hidden = replace(hidden, objects=hidden.objects[3:], ids=hidden.ids[3:], boxes=hidden.boxes[3:],
                     scores=hidden.scores[3:], class_names=hidden.class_names[3:])
    return shown, hidden


@pytest.mark.parametrize(("phrase", "hidden_at", "kind"), [
    ("the closest chair", (0.3, 1.0), "chair"),  # nearer to the camera than either known chair
    ("the nearest chair", (0.3, 1.0), "chair"),
    ("the second chair from the right", (1.0, 3.0), "chair"),  # right of both: the count from the right changes
    ("the rightmost chair", (1.0, 3.0), "chair"),
    ("the monitor on my right", (0.8, 3.5), "tvmonitor"),  # a screen the map holds unpublished, on the right
])
def test_a_pick_by_rank_among_half_seen_instances_is_not_sure(g: Grounder, phrase: str,
                                                              hidden_at: tuple[float, float], kind: str) -> None:
    """'the nearest chair', 'the second chair from the right' and 'the monitor on my right' answered among the
    chairs and screens the map had, while ones it had not published stood in plain view."""
    shown, hidden = chairs(*hidden_at, kind=kind)
    r = g.ground(phrase, shown, viewpoint=CAMERA, hidden=hidden)
    assert not r.success and r.message.startswith("not sure") and f"{kind} #3" in r.message, r.message
    assert len(r.alternatives) == 1  # the candidate, for whoever wants to look
    sure = g.ground(phrase, shown, viewpoint=CAMERA)  # nothing else known: the pick stands
    assert sure.success and sure.best.object.id == r.alternatives[0].object.id, sure.message


def test_evidence_that_does_not_rank_before_the_answer_leaves_it_sure(g: Grounder) -> None:
    shown, far_left = chairs(-2.0)  # left of both chairs, farther than both
    assert g.ground("the rightmost chair", shown, viewpoint=CAMERA, hidden=far_left).best.object.id == 1
    assert g.ground("the nearest chair", shown, viewpoint=CAMERA, hidden=far_left).success
    shown, piece = chairs(0.2)  # inside the known chair's box: a piece of it
    assert g.ground("the rightmost chair", shown, viewpoint=CAMERA, hidden=piece).success
    shown, once = chairs(1.0, seen=1)  # one weak detection (0.8 here: a strong one counts)
    assert not g.ground("the rightmost chair", shown, viewpoint=CAMERA, hidden=once).success


def test_the_published_view_knows_what_the_memory_left_out(g: Grounder, tmp_path) -> None:
    """Through ``published_snapshot`` (the CLI, the node, the evaluation), the memory's unpublished objects are
    the evidence: nothing needs to be passed."""
    from grounding_scenes import write_memory

    from embodied_ros.grounding.map_view import published_snapshot, unpublished
    from embodied_ros.memory import SceneMemory

    shown, hidden = chairs(0.3, 1.0)
    write_memory(tmp_path / "memory.json", snapshot([*((n, list(o.box)) for n, o in zip(shown.class_names,
                                                                                        shown.objects, strict=True)),
                                                     ("chair", list(hidden.boxes[0]))]), log_odds={3: 0.0})
    view = published_snapshot(SceneMemory.load(tmp_path / "memory.json"))
    assert list(view.ids) == [0, 1, 2] and list(unpublished(view).ids) == [3]
    r = g.ground("the nearest chair", view, viewpoint=CAMERA)
    assert not r.success and "unpublished chair #3" in r.message, r.message
    assert unpublished(shown) is None  # a snapshot not cut by published_snapshot: nothing known beyond it


def test_closest_to_an_anchor_is_only_over_what_is_known(g: Grounder) -> None:
    """'the chair closest to the monitor' with an unpublished chair nearer to it is not sure; one farther is no
    doubt. No viewpoint is needed."""
    for hidden_at, sure in (((-0.5, 3.3), False), ((3.0, 3.0), True)):
        shown, hidden = chairs(*hidden_at)
        r = g.ground("the chair closest to the monitor", shown, hidden=hidden)
        assert r.success is sure and (sure or "chair #3" in r.message), r.message


def test_an_unnamed_object_of_the_class_size_is_evidence_too(g: Grounder) -> None:
    """Unexplained geometry of a chair's size, seen twice, right of the known chairs: 'the rightmost chair' is not
    sure; a thing of a cup's size there is no chair."""
    shown, _ = chairs(0.0)
    for size, sure in (([0.5, 0.5, 0.85], False), ([0.1, 0.08, 0.1], True)):
        thing = snapshot([("object", [1.0, 3.0, 0.45, *size])])
        thing = replace(thing, objects=(replace(thing.objects[0], id=7, n_looks=2),), ids=np.array([7]))
        r = g.ground("the rightmost chair", shown, viewpoint=CAMERA, hidden=thing)
        assert r.success is sure and (sure or "unnamed object #7" in r.message), r.message


# -- unnamed objects and material words -----------------------------------------------------------------------------

def unnamed_on_a_table(*things: list[float]) -> MemorySnapshot:
    return snapshot([("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75]), *(("object", t) for t in things)])


GAMEPAD = [0.4, 0.1, 0.77, 0.19, 0.15, 0.04]  # a game controller's size
COCO = ("person", "chair", "diningtable", "cup", "book", "remote", "tvmonitor", "bottle")  # no box, no plate
FOOD_BOX = [-0.3, 0.0, 0.8, 0.36, 0.29, 0.09]


def test_an_unnamed_object_answers_a_class_word_only_when_its_size_says_so(g: Grounder) -> None:
    """An unnamed object of about the right size answered 'the plastic container' although it was another thing."""
    r = g.ground("the plastic container on the table", unnamed_on_a_table(GAMEPAD), vocabulary=COCO)
    assert not r.success and "hand-held" in r.message, r.message
    r = g.ground("the plastic container on the table", unnamed_on_a_table(FOOD_BOX), vocabulary=COCO)
    assert r.success and r.best.object.id == 1, r.message
    two = unnamed_on_a_table(FOOD_BOX, [0.5, 0.2, 0.8, 0.3, 0.25, 0.1])
    r = g.ground("the plastic container on the table", two, vocabulary=COCO)
    assert not r.success and r.message.startswith("not sure") and "2 unnamed objects" in r.message, r.message
    assert not g.ground("the plate on the table", unnamed_on_a_table(GAMEPAD), vocabulary=COCO).success


def test_a_word_that_cannot_be_checked_gives_no_answer(g: Grounder) -> None:
    """'the loose leaflets' answered the magazine beside them."""
    magazine = snapshot([("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75]), ("book", [0.2, 0.0, 0.76, 0.3, 0.22,
                                                                                       0.02])])
    if g.parser_name == "rules":
        pytest.skip("the rule-based parser reads unknown adjectives as words of the noun")
    r = g.ground("the loose leaflets", magazine)
    assert not r.success and "'loose' is not understood" in r.message and r.alternatives, r.message


@pytest.mark.parametrize(("phrase", "answered"), [
    ("the wooden table", True), ("the glass table", False), ("the metal table", False), ("the plastic chair", False),
    ("the wooden cup", False), ("the paper cup", False), ("the metal sink", True), ("the plastic sink", False),
])
def test_material_words_are_checked_where_colour_shape_or_kind_can_tell(g: Grounder, phrase: str,
                                                                       answered: bool) -> None:
    scene = snapshot([("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75]), ("chair", [1.1, 0.0, 0.45, 0.45, 0.45, 0.9]),
                      ("cup", [0.3, 0.0, 0.8, 0.09, 0.09, 0.1]), ("sink", [-2.0, 0.0, 0.85, 0.5, 0.4, 0.2])])
    scene = coloured(scene, {0: WOOD, 1: WOOD, 2: WHITE, 3: GREY})
    r = g.ground(phrase, scene)
    assert r.success is answered, r.message


# -- the demo says why a wrong answer is wrong ----------------------------------------------------------------------

def test_the_demo_says_what_was_expected_given_and_why_not() -> None:
    """The demo printed 4 of its 8 prompts and no reason for a "NO"."""
    from embodied_ros.demo import check_prompt
    from embodied_ros.synthetic import generate_scene

    scene = generate_scene(20_000)
    prompt = next(p for p in scene.prompts if p.relation.value == "support")
    objects = [(o.class_name, list(o.box)) for o in scene.objects]
    truth = snapshot(objects)
    g = Grounder(load_encoder=False)
    ok, line = check_prompt(prompt.text, prompt.target_id, g.ground(prompt.text, truth), truth, scene)
    assert ok and f"expected: {scene.objects[prompt.target_id].class_name} #{prompt.target_id}" in line, line
    other = g.ground("the table", truth)  # an answer with another object of the scene
    ok, line = check_prompt(prompt.text, prompt.target_id, other, truth, scene)
    assert not ok and "given:    table #" in line, line
    assert "why NO:   the answer is the scene's table #" in line and "the target is mapped as" in line, line
    gone = snapshot([o for k, o in enumerate(objects) if k != prompt.target_id])  # the map misses the target
    ok, line = check_prompt(prompt.text, prompt.target_id, g.ground(prompt.text, gone), gone, scene)
    assert not ok and "the target is not in the map" in line, line
