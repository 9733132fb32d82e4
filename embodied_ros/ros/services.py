"""The node's services: ~/ground, ~/describe, ~/reset, ~/save_map, ~/load_map; each answers, never raises.

The grounding engine (embodied_ros.grounding) is imported lazily and built on a background thread
at start (its text encoder takes a while to load), so a node without it still runs and answers
~/ground with "grounding engine not installed".
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..errors import EmbodiedError
from ..messages.convert import header_msg
from ..outputs.scene_messages import scene_object_array
from .conversions import to_rclpy
from .scene_state import DEFAULT_MAP_DIR, SceneState

MAX_PHRASE_CHARS = 1000


class GrounderHolder:
    """Builds the Grounder once, off the calling thread; ``get()`` waits for it (or its failure).

    Args:
        min_observations: objects seen fewer times are not grounded (the memory's publish rule).
        min_confidence: objects less confidently there are not answers (the memory's publish rule).
    """

    def __init__(self, min_observations: int = 2, min_confidence: float = 0.7) -> None:
        self.min_observations = min_observations
        self.min_confidence = min_confidence
        self.error = ""
        self._grounder: Any = None
        self._ready = threading.Event()
        threading.Thread(target=self._build, name="embodied-grounder", daemon=True).start()

    def _build(self) -> None:
        try:
            from ..grounding import Grounder
        except ImportError as err:
            self.error = f"grounding engine not installed ({err})"
        else:
            try:
                self._grounder = Grounder(min_observations=self.min_observations, min_confidence=self.min_confidence)
            except Exception as err:  # noqa: BLE001 - reported in every answer instead
                self.error = f"grounding engine failed to start: {type(err).__name__}: {err}"
        self._ready.set()

    def get(self, timeout: float = 120.0) -> Any:
        self._ready.wait(timeout)
        return self._grounder


_HOLDERS: dict[tuple[int, float], GrounderHolder] = {}
_HOLDERS_LOCK = threading.Lock()


def shared_grounder(min_observations: int, min_confidence: float) -> GrounderHolder:
    """One Grounder per process and setting: it is thread-safe, and loading its text encoder takes seconds."""
    key = (min_observations, min_confidence)
    with _HOLDERS_LOCK:
        if key not in _HOLDERS:
            _HOLDERS[key] = GrounderHolder(min_observations, min_confidence)
        return _HOLDERS[key]


def _grounded(g: Any, frame_id: str) -> Any:
    """grounding.GroundedObject -> embodied_ros/msg/GroundedObject."""
    from embodied_ros.msg import GroundedObject

    obj = to_rclpy(scene_object_array([g.object], frame_id, 0).objects[0])
    return GroundedObject(object=obj, score=float(g.score), explanation=str(g.explanation))


def ground(state: SceneState, grounder: GrounderHolder, phrase: str, response: Any) -> Any:
    """Fill a Ground response for ``phrase`` over the current memory snapshot."""
    snapshot = state.memory.snapshot()
    response.header = to_rclpy(header_msg(snapshot.frame_id, snapshot.stamp_ns))
    phrase = phrase.strip()
    if not phrase:
        response.success, response.message = False, "empty phrase: say which object, e.g. 'the cup on the table'"
        return response
    if len(phrase) > MAX_PHRASE_CHARS:
        response.success = False
        response.message = f"phrase too long ({len(phrase)} characters, at most {MAX_PHRASE_CHARS})"
        return response
    if snapshot.n_updates == 0 and len(snapshot) == 0:
        response.success, response.message = False, "no frame processed yet: the scene memory is empty"
        return response
    engine = grounder.get()
    if engine is None:
        response.success, response.message = False, grounder.error or "grounding engine not ready"
        return response
    result = engine.ground(phrase, snapshot, viewpoint=_viewpoint(state), vocabulary=state.memory.vocabulary)
    response.success, response.message = bool(result.success), str(result.message)
    if result.best is not None:
        response.best = _grounded(result.best, snapshot.frame_id)
    response.alternatives = [_grounded(a, snapshot.frame_id) for a in result.alternatives]
    return response


def _viewpoint(state: SceneState) -> Any:
    """The latest keyframe's camera, which "on the left" and "the nearest" refer to (None before any)."""
    from ..grounding.viewpoint import Viewpoint

    frame = state.last_frame
    return None if frame is None else Viewpoint.from_frame(frame)


def describe(state: SceneState, grounder: GrounderHolder, object_id: int, response: Any) -> Any:
    """Fill a Describe response: a referring expression per object (``object_id`` < 0: every one)."""
    snapshot = state.memory.snapshot()
    response.header = to_rclpy(header_msg(snapshot.frame_id, snapshot.stamp_ns))
    engine = grounder.get()
    if engine is None:
        response.success, response.message = False, grounder.error or "grounding engine not ready"
        return response
    if object_id >= 0 and object_id not in {int(i) for i in snapshot.ids}:
        response.success, response.message = False, f"no object #{object_id} in the scene memory"
        return response
    from ..grounding.describe import describe_objects

    found = describe_objects(engine, snapshot, None if object_id < 0 else [object_id], viewpoint=_viewpoint(state),
                             vocabulary=state.memory.vocabulary, min_observations=grounder.min_observations)
    response.ids = [d.object_id for d in found]
    response.descriptions = [d.text for d in found]
    response.unique = [d.unique for d in found]
    response.success = bool(found) and all(d.unique for d in found)
    response.message = (f"{sum(d.unique for d in found)} of {len(found)} descriptions pick out their object"
                        if found else "no confident object to describe yet")
    return response


def scene_graph_json(state: SceneState, min_observations: int) -> str:
    """The scene graph (grounding/scene_graph.py) of the current memory, as JSON text."""
    import json

    from ..grounding.scene_graph import scene_graph

    return json.dumps(scene_graph(state.memory.snapshot(), viewpoint=_viewpoint(state),
                                  min_observations=min_observations))


def map_directory(requested: str, default: str) -> Path:
    return Path(requested or default or DEFAULT_MAP_DIR).expanduser()


def save_map(state: SceneState, directory: Path, response: Any) -> Any:
    try:
        response.message, response.success = state.save(directory), True
    except (OSError, EmbodiedError) as err:
        response.message, response.success = f"cannot save the map to {directory}: {err}", False
    return response


def load_map(state: SceneState, directory: Path, response: Any) -> Any:
    try:
        response.message, response.success = state.load(directory), True
    except (OSError, EmbodiedError) as err:
        response.message, response.success = f"cannot load the map: {err}", False
    return response


def reset(state: SceneState, response: Any) -> Any:
    response.message, response.success = state.reset(), True
    return response
