"""Questions about what changed, answered from the memory's change events (memory/changes.py).

Two kinds of question:

* about a place: "what changed on the table?", "what moved near the sofa?", "what is new on the counter?",
  "what is missing from the shelf?", "what changed?": the events whose box (where a thing was, or is) lies
  on or near the anchor, which is grounded like any anchor; the answer is the first of them (a removed thing
  answers with the box where it stood, at confidence 0) and the message lists them all;
* about a thing: "where did the mug go?", "where is the cup now?", "what happened to the chair?": the latest
  event of the thing's class (labels matched as the grounder matches them: "mug" is a cup). A move answers
  with the object where it is now; a removal is no answer ("not found: cup #3 was taken away") because a
  robot sent to fetch it must not go to where it was; a thing only seen new somewhere is no answer either,
  it is named as an alternative.

Anything else is not a change question and goes to the grounder as a referring phrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..memory.change_events import ChangeEvent, ChangeKind
from ..memory.scene_object import MemorySnapshot, SceneObject
from .phrases import NounPhrase, ParsedPhrase
from .results import GroundedObject, GroundingResult

_LEFT = r"went|gone|go|disappeared|vanished|missing|removed|taken(?: away)?|left"
_ARRIVED = r"new|appeared|added|arrived|came|turned up|showed up|put"
_VERBS = {"changed": None, "moved": (ChangeKind.MOVED,), "left": (ChangeKind.REMOVED, ChangeKind.MOVED),
          "arrived": (ChangeKind.NEW, ChangeKind.MOVED)}
_WHAT = re.compile(r"^(?:what|which \w+|anything|has anything|did anything|is anything)\b.*?\b"
                   rf"(?P<verb>changed?|moved?|{_LEFT}|{_ARRIVED})\b\s*(?P<rest>.*)$")
_WHERE = re.compile(r"^(?:where (?:did|has|have|is|are|was|were) (?:the |my |our |a |an |that |this )?(?P<thing>.+?)"
                    r" (?:go|gone|went|moved?|been moved|been put|been taken|end up|ended up|now|got to|get to)"
                    r"|(?:what happened to|what became of) (?:the |my |our |a |an |that |this )?(?P<other>.+))$")
_PLACE = re.compile(r"^(?:on|onto|near|in|inside|at|by|around|from|off|under|next to|beside|to) (?P<anchor>.+)$")
NEAR_M = 0.3  # an event's box this close (m, horizontally) to the anchor's footprint is on or near it


@dataclass(frozen=True)
class ChangeQuestion:
    """A question about change: the kinds it asks for (None: all), the place's phrase, or the thing's noun."""

    kinds: tuple[ChangeKind, ...] | None = None
    anchor: str = ""
    thing: str = ""


def parse_change_question(phrase: str) -> ChangeQuestion | None:
    """The change question ``phrase`` asks, or None when it is a referring phrase."""
    text = " ".join(re.sub(r"[?!.,]", " ", str(phrase).lower()).split())
    m = _WHERE.match(text)
    if m:
        return ChangeQuestion(thing=m.group("thing") or m.group("other"))
    m = _WHAT.match(text)
    if m is None:
        return None
    verb = m.group("verb")
    kind = ("changed" if verb.startswith("chang") else "moved" if verb.startswith("mov")
            else "left" if re.fullmatch(_LEFT, verb) else "arrived")
    rest = re.sub(r"^(?:since|recently|today|lately)\b.*$", "", m.group("rest")).strip()
    place = _PLACE.match(rest)
    return ChangeQuestion(_VERBS[kind], place.group("anchor") if place else "")


def answer_change_question(grounder: Any, question: ChangeQuestion, phrase: str, events: Sequence[ChangeEvent],
                           snapshot: MemorySnapshot, **context: Any) -> GroundingResult:
    """Answer a change question from ``events`` (the history, oldest first) and the published ``snapshot``.

    Args:
        grounder: the Grounder (its label matcher, and ``ground`` for the place's phrase).
        context: ``viewpoint`` and ``vocabulary`` for grounding the place.
    """
    parsed = ParsedPhrase(" ".join(str(phrase).lower().split()), NounPhrase(question.thing or question.anchor))
    if question.thing:
        return _about_thing(grounder, question.thing, phrase, parsed, events, snapshot, context)
    events = [e for e in events if question.kinds is None or e.kind in question.kinds]
    where = ""
    if question.anchor:
        place = grounder.ground(question.anchor, snapshot, **context)
        if not place.success:
            return _answer(False, f"{question.anchor}: {place.message}", phrase, parsed)
        anchor = place.best.object
        events = [e for e in events if _near(e, anchor.box, question.kinds)]
        where = f" on or near {anchor.class_name} #{anchor.id}"
    if not events:
        return _answer(False, f"nothing {_asked(question.kinds)}{where} (no change events)", phrase, parsed)
    found = [GroundedObject(_object_of(e, snapshot), 1.0, e.summary()) for e in reversed(events)]  # newest first
    lines = "; ".join(e.summary() for e in reversed(events))
    return _answer(True, f"{len(events)} {_asked(question.kinds)}{where}: {lines}", phrase, parsed, found)


def _about_thing(grounder: Any, thing: str, phrase: str, parsed: ParsedPhrase, events: Sequence[ChangeEvent],
                 snapshot: MemorySnapshot, context: dict[str, Any]) -> GroundingResult:
    classes = sorted({e.class_name for e in events})
    labels = grounder.matcher.match(thing, classes) if classes else {}
    mine = [e for e in events if labels.get(e.class_name, 0.0) >= 0.5]
    if not mine:  # nothing changed about it: it is where the map has it, if the map has it
        found = grounder.ground(f"the {thing}", snapshot, **context)
        return _answer(found.success, f"no change of a {thing} was seen; {found.message}", phrase, parsed,
                       [found.best, *found.alternatives] if found.best else [], found.alternatives)
    last = mine[-1]
    moves = [e for e in mine if e.kind is ChangeKind.MOVED]
    if last.kind is ChangeKind.MOVED:
        now = _object_of(last, snapshot)
        on = _support(last.new_box, snapshot)
        return _answer(True, last.summary() + (f", now on {on}" if on else ""), phrase, parsed,
                       [GroundedObject(now, 1.0, last.summary())])
    if last.kind is ChangeKind.REMOVED:
        on = _support(last.old_box, snapshot)
        return _answer(False, f"{last.summary()}{f' (on {on})' if on else ''}: its place was seen empty, and where it "
                              "went was not seen", phrase, parsed)
    seen = [GroundedObject(_object_of(e, snapshot), 0.5, e.summary()) for e in (last, *reversed(moves[-1:]))]
    return _answer(False, f"no {thing} was seen to move: {last.summary()} (not in the map before)", phrase, parsed,
                   alternatives=seen)


def _answer(success: bool, message: str, phrase: str, parsed: ParsedPhrase,
            found: Sequence[GroundedObject] = (), alternatives: Sequence[GroundedObject] = ()) -> GroundingResult:
    best = found[0] if success and found else None
    rest = tuple(found[1:]) if success else tuple(alternatives)
    return GroundingResult(success and best is not None, " ".join(message.split()), best, rest, str(phrase), parsed)


def _asked(kinds: tuple[ChangeKind, ...] | None) -> str:
    if kinds is None:
        return "changes"
    return {(ChangeKind.MOVED,): "moves", (ChangeKind.REMOVED, ChangeKind.MOVED): "things gone",
            (ChangeKind.NEW, ChangeKind.MOVED): "things new"}[kinds]


def _near(event: ChangeEvent, anchor: np.ndarray, kinds: tuple[ChangeKind, ...] | None) -> bool:
    """Whether the side of the event the question asks about (gone: where it was; new: where it is) lies on or
    near the anchor's box (its footprint grown by NEAR_M, from its bottom to half a metre above its top)."""
    boxes = [event.old_box] if kinds == (ChangeKind.REMOVED, ChangeKind.MOVED) else \
        [event.new_box] if kinds == (ChangeKind.NEW, ChangeKind.MOVED) else [event.old_box, event.new_box]
    return any(b is not None and _on_or_near(b, anchor) for b in boxes)


def _on_or_near(box: np.ndarray, anchor: np.ndarray) -> bool:
    c, s = np.cos(anchor[6]), np.sin(anchor[6])
    d = box[:2] - anchor[:2]
    local = np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1]])
    inside = np.all(np.abs(local) <= 0.5 * anchor[3:5] + NEAR_M)
    bottom, top = anchor[2] - 0.5 * anchor[5], anchor[2] + 0.5 * anchor[5]
    return bool(inside and bottom - 0.1 <= box[2] <= top + 0.5)


def _support(box: np.ndarray | None, snapshot: MemorySnapshot) -> str:
    """'table #10' when a published object's top lies just under the box (within 10 cm), else ''."""
    if box is None:
        return ""
    bottom = box[2] - 0.5 * box[5]
    for o in snapshot.objects:
        top = o.box[2] + 0.5 * o.box[5]
        if abs(top - bottom) <= 0.1 and o.box[5] > box[5] and _on_or_near(box, o.box):
            return f"{o.class_name} #{o.id}"
    return ""


def _object_of(event: ChangeEvent, snapshot: MemorySnapshot) -> SceneObject:
    """The event's object as the map has it now (moved, new), or as it was where it stood (removed: a ghost at
    confidence 0)."""
    for o in snapshot.objects:
        if o.id == event.object_id and event.kind is not ChangeKind.REMOVED:
            return o
    box = event.new_box if event.new_box is not None else event.old_box
    return SceneObject(event.object_id, event.class_name, 0.0, box, (), 0, -1, event.frame_index,
                       event.last_seen_ns, event.last_seen_ns, confidence=0.0, colour_name=event.colour)
