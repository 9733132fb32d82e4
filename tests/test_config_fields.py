"""`run --set SECTION.FIELD=VALUE` and the node's parameters reach every field of the PipelineConfig as
text: each field's value is read by its type, and what the field's own dataclass rejects is refused."""

from __future__ import annotations

import pytest

from embodied_ros.config_fields import with_settings
from embodied_ros.errors import ConfigError
from embodied_ros.mapper import PipelineConfig


def test_settings_are_read_by_the_fields_types() -> None:
    config = with_settings(PipelineConfig(), [
        "memory.min_observations=3", "memory.discover_unknown=false", "memory.existence_revisit_s=5",
        "lifting.surface_classes=table, desk", "lifting.min_horizontal_size=chair:0.3,dining table:0.6",
        "lifting.depth_offset_px=1.5,-2", "occupancy.bounds=0,0,0,4,4,3", "runtime.model=nanodet-plus-m-416"])
    assert config.memory.min_observations == 3 and config.memory.discover_unknown is False
    assert config.memory.existence_revisit_s == 5.0
    assert config.lifting.surface_classes == ("table", "desk")
    assert config.lifting.min_horizontal_size == (("chair", 0.3), ("dining table", 0.6))
    assert config.lifting.depth_offset_px == (1.5, -2.0) and config.occupancy.bounds == (0, 0, 0, 4, 4, 3)
    assert config.runtime.model == "nanodet-plus-m-416"
    assert config.memory.iou_threshold == PipelineConfig().memory.iou_threshold  # the rest as it was
    assert with_settings(PipelineConfig(), []) == PipelineConfig()


@pytest.mark.parametrize(("setting", "match"), [
    ("min_observations=3", "expected SECTION.FIELD=VALUE"),
    ("mind.min_observations=3", "SECTION one of"),
    ("memory.min_observation=3", "MemoryConfig has no field 'min_observation'"),
    ("memory.discover_unknown=maybe", "is not true or false"),
    ("memory.min_observations=three", "is not a whole number"),
    ("lifting.min_largest_extent=chair 0.3", "is not 'name:value'"),
    ("memory.iou_threshold=2", "iou_threshold"),  # MemoryConfig's own check
])
def test_settings_that_cannot_be_are_refused_with_their_reason(setting: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        with_settings(PipelineConfig(), [setting])
