"""Scene-memory variants the benchmarks compare (MemoryConfig overrides). Kept apart from the
benchmarks themselves, and free of imports, so that a benchmark timing an older commit's code
(bench_pipeline --baseline) can read them.

  legacy    the scene memory before the object map (box fusion only, every object published);
  evidence  + existence as evidence both ways, only confident objects published;
  geometry  + each object's own geometry, box fitted to all of it, furniture completed;
            no existence evidence;
  full      the defaults (geometry and evidence, unknown objects from the geometry);
  named     full without unknown objects (memory.discover_unknown off): named objects only;
  one-sum   full, but existence evidence summed over every look (existence_revisit_s=0), as before
            evidence was kept per place: the baseline of ``--passes``;
  per-class full, but association within a class only;
  no-structure  full without the room's structure (memory.room_structure off; not in code before it).
"""

MEMORIES: dict[str, dict] = {
    "legacy": dict(geometry_voxel=0.0, existence_miss=0.0, existence_through=0.0, publish_confidence=0.0,
                   amodal=False, image_match=1.0),
    "evidence": dict(geometry_voxel=0.0, amodal=False, image_match=1.0),
    "geometry": dict(existence_miss=0.0, existence_through=0.0, publish_confidence=0.0),
    "full": {},
    "named": dict(discover_unknown=False),
    "one-sum": dict(existence_revisit_s=0.0),
    "per-class": dict(class_agnostic=False),
    "no-structure": dict(room_structure=False),
}
