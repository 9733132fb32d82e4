"""The contact sheet: each object's box drawn alone on the view that showed it best, on rendered frames."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from rendered_scenes import look_at, render_frame

from embodied_ros.outputs.class_palette import class_colour
from embodied_ros.outputs.contact_sheet import ObjectViews, save_contact_sheet

CRATE = np.array([0.0, 2.0, 0.2, 0.4, 0.4, 0.4, 0.0, 0.0, 0.0])
EYE = np.array([0.0, 0.0, 1.0])


@dataclass
class _Object:
    id: int
    class_name: str
    box: np.ndarray
    score: float = 0.8
    confidence: float = 0.9
    n_observations: int = 2
    first_seen_ns: int = 0
    last_seen_ns: int = 0


def _coloured_pixels(tile: np.ndarray, name: str) -> int:
    """Pixels of the tile (caption band excluded) within 40 of the class's colour."""
    picture = tile[:-22].astype(np.int32)
    return int((np.abs(picture - np.array(class_colour(name))).max(axis=-1) < 40).sum())


def test_an_object_is_drawn_on_the_view_that_showed_it_largest() -> None:
    far, near = EYE + [0.0, -3.0, 0.5], EYE + [0.0, 0.8, -0.2]
    views = ObjectViews()
    none = np.zeros((0, 3))
    views.observe(render_frame(look_at(far, CRATE[:3]), [CRATE], index=0), [(7, CRATE, none)])
    views.observe(render_frame(look_at(near, CRATE[:3]), [CRATE], index=1), [(7, CRATE, none)])
    views.observe(render_frame(look_at(far, CRATE[:3]), [CRATE], index=2), [(7, CRATE, none)])
    assert len(views) == 1
    np.testing.assert_allclose(views._views[7].T_world_camera[:3, 3], near)  # the largest view stays
    tile = views.tile(_Object(7, "box", CRATE))
    assert tile.shape == (222, 200, 3) and _coloured_pixels(tile, "box") > 200
    unseen = views.tile(_Object(8, "box", CRATE))
    assert _coloured_pixels(unseen, "box") == 0 and np.all(unseen[:-22] == 60)  # no view: a grey tile


def test_a_box_that_grew_behind_its_view_camera_is_still_drawn(tmp_path) -> None:
    views = ObjectViews()
    views.observe(render_frame(look_at(EYE, CRATE[:3]), [CRATE], index=0), [(1, CRATE, np.zeros((0, 3)))])
    grown = CRATE.copy()
    grown[1], grown[4] = 1.0, 2.4  # now from y = -0.2 to 2.2: its near corners are behind the camera
    tile = views.tile(_Object(1, "box", grown))
    assert _coloured_pixels(tile, "box") > 200
    save_contact_sheet(tmp_path / "sheet.png", [_Object(1, "box", grown), _Object(2, "cup", CRATE)], views,
                       columns=6, title="two objects")
    sheet = cv2.imread(str(tmp_path / "sheet.png"))
    assert sheet.shape == (28 + 222, 6 * 200, 3)
