"""The node's services: ~/ground, ~/describe, ~/reset, ~/save_map, ~/load_map; each answers, never raises.

:func:`register` creates them from the table :data:`SERVICES` (name, type, handler), so a new
service is one handler and one line. Requests are bounded (phrase and map name lengths), map
names resolve under the node's ``map_dir`` only (..map_files), and a refused request gets
``success: false`` with the reason. The grounding engine (embodied_ros.grounding) is imported lazily and
built on a background thread at start (its text encoder and parser take a while to load, so they load
there, not in the first call), so a node without it still runs and answers ~/ground with "grounding
engine not installed". ~/ground and ~/describe speak about the published objects, the ones RViz shows
(``grounding.map_view``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import EmbodiedError
from ..grounding.engine import GrounderConfig
from ..map_files import map_path
from ..messages.convert import header_msg
from ..outputs.scene_messages import scene_object_array
from .change_publisher import what_changed
from .conversions import to_rclpy

MAX_PHRASE_CHARS = 1000
LIMITED = frozenset({"ground", "describe"})  # handlers under ``max_ground_share`` (the language calls: the costly ones)
REQUEST_QUEUE = 1000  # requests a service holds while it answers others (a flood is answered, not dropped by DDS)


class TimeShare:
    """Calls may take at most ``share`` of the wall time, measured over about a second (a bucket of seconds of
    work: each call's own duration is paid after it, so one slow call makes the next ones wait their turn);
    0: no limit. Thread-safe."""

    def __init__(self, share: float) -> None:
        self.share = share
        self._credit, self._at = share, time.monotonic()  # seconds of work that may be spent now
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Whether one more call may be answered now."""
        if self.share <= 0:
            return True
        with self._lock:
            now = time.monotonic()
            self._credit = min(self.share, self._credit + (now - self._at) * self.share)
            self._at = now
            return self._credit > 0

    def spent(self, seconds: float) -> None:
        """A call answered in ``seconds``."""
        with self._lock:  # a debt of at most one second's share: one slow call is not paid for minutes
            self._credit = max(self._credit - seconds, -self.share)


class GrounderHolder:
    """Builds the Grounder once, off the calling thread; ``get()`` waits for it (or its failure).

    Args:
        config: the grounder's settings (the node's ``grounder.*`` parameters; ``min_observations``
            follows the memory's publish rule).
    """

    def __init__(self, config: GrounderConfig | None = None) -> None:
        self.config = config or GrounderConfig()
        self.error = ""
        self._grounder: Any = None
        self._ready = threading.Event()
        try:  # on this thread, before the build's: see import_spacy
            from ..grounding.dependency import import_spacy

            import_spacy()
        except ImportError:
            pass  # the build says what is missing
        threading.Thread(target=self._build, name="embodied-grounder", daemon=True).start()

    def _build(self) -> None:
        try:
            from ..grounding import Grounder
        except ImportError as err:
            self.error = f"grounding engine not installed ({err})"
        else:
            try:
                self._grounder = Grounder(config=self.config)
            except Exception as err:  # noqa: BLE001 - reported in every answer instead
                self.error = f"grounding engine failed to start: {type(err).__name__}: {err}"
        self._ready.set()

    def get(self, timeout: float = 120.0) -> Any:
        self._ready.wait(timeout)
        return self._grounder


_HOLDERS: dict[GrounderConfig, GrounderHolder] = {}
_HOLDERS_LOCK = threading.Lock()


def shared_grounder(config: GrounderConfig) -> GrounderHolder:
    """One Grounder per process and setting: it is thread-safe, and loading its text encoder takes seconds."""
    with _HOLDERS_LOCK:
        if config not in _HOLDERS:
            _HOLDERS[config] = GrounderHolder(config)
        return _HOLDERS[config]


def _grounded(g: Any, frame_id: str) -> Any:
    """grounding.GroundedObject -> embodied_ros/msg/GroundedObject."""
    from embodied_ros.msg import GroundedObject

    array = scene_object_array([g.object], frame_id, 0)  # an unnamed answer goes in unknown_objects: either field
    (item,) = [*array.objects, *array.unknown_objects]
    obj = to_rclpy(item)
    return GroundedObject(object=obj, score=float(g.score), explanation=str(g.explanation))


def ground(node: Any, request: Any, response: Any) -> Any:
    """Answer a phrase with the best object of the current memory snapshot (its published objects)."""
    snapshot = node.mapper.published_snapshot()
    response.header = to_rclpy(header_msg(snapshot.frame_id, snapshot.stamp_ns))
    phrase = request.phrase.strip()
    response.success = False
    if not phrase:
        response.message = "empty phrase: say which object, e.g. 'the cup on the table'"
    elif len(phrase) > MAX_PHRASE_CHARS:
        response.message = f"phrase too long ({len(phrase)} characters, at most {MAX_PHRASE_CHARS})"
    elif snapshot.n_updates == 0 and len(snapshot) == 0:
        response.message = "no frame processed yet: the scene memory is empty" + (
            "" if node.ready.is_set() else " (the network is still loading)")
    elif (engine := node.grounder.get()) is None:
        response.message = node.grounder.error or "grounding engine not ready"
    else:
        result = node.mapper.ground(phrase, snapshot, grounder=engine)
        response.success, response.message = bool(result.success), str(result.message)
        if result.best is not None:
            response.best = _grounded(result.best, snapshot.frame_id)
        response.alternatives = [_grounded(a, snapshot.frame_id) for a in result.alternatives]
    node.get_logger().info(f"ground {phrase[:80]!r}: {response.message}")
    return response


def describe(node: Any, request: Any, response: Any) -> Any:
    """Fill a Describe response: a referring expression per object (``object_id`` < 0: every one)."""
    object_id, mapper, grounder = int(request.object_id), node.mapper, node.grounder
    snapshot = mapper.published_snapshot()
    response.header = to_rclpy(header_msg(snapshot.frame_id, snapshot.stamp_ns))
    engine = grounder.get()
    if engine is None:
        response.success, response.message = False, grounder.error or "grounding engine not ready"
        return response
    if object_id >= 0 and object_id not in {int(i) for i in snapshot.ids}:
        response.success, response.message = False, f"no object #{object_id} in the scene memory"
        return response
    from ..grounding.describe import describe_objects

    found = describe_objects(engine, snapshot, None if object_id < 0 else [object_id], viewpoint=mapper.viewpoint(),
                             vocabulary=mapper.memory.vocabulary, min_observations=grounder.config.min_observations)
    response.ids = [d.object_id for d in found]
    response.descriptions = [d.text for d in found]
    response.unique = [d.unique for d in found]
    response.success = bool(found) and all(d.unique for d in found)
    response.message = (f"{sum(d.unique for d in found)} of {len(found)} descriptions pick out their object"
                        if found else "no confident object to describe yet")
    return response


def scene_graph_json(mapper: Any, min_observations: int) -> str:
    """The scene graph (grounding/scene_graph.py) of the current memory, as JSON text."""
    import json

    from ..grounding.scene_graph import scene_graph

    return json.dumps(scene_graph(mapper.published_snapshot(), viewpoint=mapper.viewpoint(),
                                  min_observations=min_observations))


def save_map(node: Any, request: Any, response: Any) -> Any:
    """Save memory and occupancy as the map named in the request (under map_dir, atomically)."""
    try:
        path = map_path(node.config.map_dir, request.name or node.config.start_map)  # InputError, not OSError
        response.message, response.success = node.mapper.save(path), True
    except EmbodiedError as err:
        response.message, response.success = f"map not saved: {err}", False
    except OSError as err:  # a full disk, a read-only map_dir: save_atomically left the previous map as it was
        kept = "the previous map is kept" if path.is_dir() else "nothing was written"
        response.message, response.success = f"map not saved to {path}: {err.strerror or err}; {kept}", False
    _log(node, response)
    return response


def load_map(node: Any, request: Any, response: Any) -> Any:
    """Replace memory and occupancy by the map named in the request; a failed load keeps the current map."""
    try:
        path = map_path(node.config.map_dir, request.name or node.config.start_map)
        response.message, response.success = node.mapper.load(path), True
    except (OSError, EmbodiedError) as err:
        response.message, response.success = f"map not loaded: {err}", False
    except Exception as err:  # noqa: BLE001 - a corrupt file: numpy, zipfile and json raise their own kinds
        response.success = False
        response.message = (f"map not loaded: {path} is unreadable ({type(err).__name__}: {err}); "
                            "the current map is kept")
    _log(node, response)
    return response


def reset(node: Any, _request: Any, response: Any) -> Any:
    response.message, response.success = node.mapper.reset(), True
    _log(node, response)
    return response


def _log(node: Any, response: Any) -> None:
    if response.success:  # two call sites: rclpy refuses one call site with two severities
        node.get_logger().info(response.message)
    else:
        node.get_logger().warning(response.message)


def _types() -> dict[str, Any]:
    from std_srvs.srv import Trigger

    from embodied_ros.srv import Describe, Ground, LoadMap, SaveMap, WhatChanged

    return {"Describe": Describe, "Ground": Ground, "LoadMap": LoadMap, "SaveMap": SaveMap, "Trigger": Trigger,
            "WhatChanged": WhatChanged}


SERVICES: tuple[tuple[str, str, Any], ...] = (
    ("~/ground", "Ground", ground),
    ("~/describe", "Describe", describe),
    ("~/reset", "Trigger", reset),
    ("~/save_map", "SaveMap", save_map),
    ("~/load_map", "LoadMap", load_map),
    ("~/what_changed", "WhatChanged", what_changed),
)
"""(service name, type name, handler(node, request, response) -> response)."""


def register(node: Any, callback_group: Any) -> list[Any]:
    """Create every service of :data:`SERVICES` on ``node``; a handler that raises still answers (success false),
    and ~/ground and ~/describe answer "busy" at once when they took their share of the time
    (``max_ground_share``), so a flood of calls is answered quickly and perception goes on."""
    from rclpy.qos import QoSProfile

    types = _types()
    share = TimeShare(node.config.max_ground_share)

    def guarded(handler: Any) -> Any:
        def call(request: Any, response: Any) -> Any:
            limited = handler.__name__ in LIMITED
            if limited and not share.take():
                response.success = False
                response.message = (f"busy: ~/ground and ~/describe took their share ({share.share:g}) of the "
                                    "node's time (max_ground_share); ask again")
                node.faults.report("~/ground and ~/describe are called faster than they answer: the calls over "
                                   f"max_ground_share {share.share:g} are answered busy")
                return response
            start = time.perf_counter()
            try:
                return handler(node, request, response)
            except Exception as err:  # noqa: BLE001 - a service must answer, never take the node down
                node.get_logger().error(f"{handler.__name__} failed: {type(err).__name__}: {err}")
                response.success, response.message = False, f"internal error: {type(err).__name__}: {err}"
                return response
            finally:
                if limited:
                    share.spent(time.perf_counter() - start)
        return call

    return [node.create_service(types[kind], name, guarded(handler), qos_profile=QoSProfile(depth=REQUEST_QUEUE),
                                callback_group=callback_group) for name, kind, handler in SERVICES]
