"""Hand-made scenes with known answers, shared by the grounding tests and benchmark."""

from __future__ import annotations

import numpy as np

from embodied_ros.memory import MemorySnapshot, SceneObject


def snapshot(objects: list[tuple[str, list[float]]], scores: list[float] | None = None,
             n_obs: int | list[int] = 5, evidence: dict[int, dict[str, float]] | None = None) -> MemorySnapshot:
    """A snapshot of objects (class name, 9-DoF box or 7 values x,y,z,dx,dy,dz,yaw), ids 0.. in order;
    ``n_obs``: times seen, for all objects or per object; ``evidence``: class evidence of some
    objects by index (default: their own class at their score)."""
    objs = []
    for i, (name, box) in enumerate(objects):
        b = np.zeros(9)
        b[: len(box)] = box
        s = scores[i] if scores else 0.8
        seen = n_obs[i] if isinstance(n_obs, list) else n_obs
        classes = tuple((evidence or {}).get(i, {name: s}).items())
        objs.append(SceneObject(i, name, s, b, classes, seen, 0, 1, 0, 1))
    return MemorySnapshot(tuple(objs), np.arange(len(objs), dtype=np.int64),
                          np.stack([o.box for o in objs]) if objs else np.zeros((0, 9)),
                          np.array([o.score for o in objs]), tuple(o.class_name for o in objs), "world")


def kitchen() -> MemorySnapshot:
    """A table with two cups (one on it, one on the floor), a monitor, chairs, a sofa, a shelf.

    z up, floor at z = 0. Ids: 0 table, 1 cup on table (near the monitor), 2 cup on table (far
    end), 3 cup on the floor, 4 monitor on table, 5 chair west, 6 chair east, 7 sofa, 8 lamp above
    table, 9 book under the table, 10 bottle between the sofa and the table.
    """
    return snapshot([
        ("diningtable", [0.0, 0.0, 0.375, 1.6, 0.8, 0.75, 0.0]),  # 0: top at z 0.75
        ("cup", [0.5, 0.1, 0.8, 0.08, 0.08, 0.1, 0.0]),  # 1
        ("cup", [-0.6, -0.2, 0.8, 0.08, 0.08, 0.1, 0.0]),  # 2
        ("cup", [2.5, 1.5, 0.05, 0.08, 0.08, 0.1, 0.0]),  # 3 on the floor, far away
        ("tvmonitor", [0.6, 0.3, 0.95, 0.5, 0.1, 0.4, 0.0]),  # 4 on the table, east end
        ("chair", [-1.1, 0.0, 0.45, 0.45, 0.45, 0.9, 0.0]),  # 5 west of the table
        ("chair", [1.1, 0.0, 0.45, 0.45, 0.45, 0.9, 0.0]),  # 6 east of the table
        ("sofa", [0.0, 3.0, 0.4, 2.0, 0.9, 0.8, 0.0]),  # 7 north
        ("lamp", [0.0, 0.0, 2.0, 0.3, 0.3, 0.3, 0.0]),  # 8 hanging above the table
        ("book", [0.0, 0.0, 0.02, 0.2, 0.15, 0.04, 0.0]),  # 9 on the floor under the table
        ("bottle", [0.0, 1.5, 0.15, 0.08, 0.08, 0.3, 0.0]),  # 10 between table and sofa
    ])


def random_scene(n: int, seed: int = 0, n_classes: int = 20) -> MemorySnapshot:
    """n random gravity-aligned boxes in a 20 m x 20 m area, classes from a fixed list."""
    from embodied_ros.grounding.vocabulary import KNOWN_LABELS

    rng = np.random.default_rng(seed)
    names = list(dict.fromkeys(KNOWN_LABELS))[:n_classes]
    boxes = np.zeros((n, 9))
    boxes[:, 0:2] = rng.uniform(-10, 10, (n, 2))
    boxes[:, 3:6] = rng.uniform(0.05, 1.5, (n, 3))
    boxes[:, 2] = rng.uniform(0, 1.5, n) + boxes[:, 5] / 2
    boxes[:, 6] = rng.uniform(-np.pi, np.pi, n)
    cls = rng.integers(0, len(names), n)
    return snapshot([(names[c], list(b)) for c, b in zip(cls, boxes, strict=True)],
                    list(rng.uniform(0.1, 1.0, n)))


def write_memory(path, snap: MemorySnapshot, log_odds: dict[int, float] | None = None) -> None:
    """Write a snapshot as a ``memory.json`` that ``SceneMemory.load`` reads (default parameters);
    ``log_odds``: the existence evidence of some objects by id (the rest load as confident)."""
    import json
    from dataclasses import asdict

    from embodied_ros.memory import MemoryConfig

    config = asdict(MemoryConfig())
    config["score_mode"] = MemoryConfig().score_mode.value
    objects = [{"id": o.id, "class_name": o.class_name, "score": o.score, "box": [float(v) for v in o.box],
                "class_scores": dict(o.class_scores), "n_observations": o.n_observations,
                "first_seen_frame": 0, "last_seen_frame": 1, "first_seen_ns": 0, "last_seen_ns": 1,
                "fusion_weight": 1.0, **({"log_odds": log_odds[o.id]} if o.id in (log_odds or {}) else {})}
               for o in snap.objects]
    path.write_text(json.dumps({"format": "embodied_ros/scene_memory", "format_version": 1, "config": config,
                                "frame_id": "world", "next_id": len(objects), "objects": objects}))
