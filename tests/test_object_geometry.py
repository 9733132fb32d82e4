"""Voxel keys of an object's geometry: packing, neighbourhoods, set look-ups."""

from __future__ import annotations

import numpy as np

from embodied_ros.memory.object_geometry import fraction_in, near_fraction, neighbourhoods, pack_voxels, unpack_voxels


def test_a_neighbourhood_is_the_27_voxels_around_one_on_both_sides_of_every_axis():
    ijk = np.array([[0, 0, 0], [-1, 0, 1], [5, -7, 3], [-40000, 40000, -1]])
    blocks = neighbourhoods(pack_voxels(ijk))
    assert blocks.shape == (4, 27)
    for row, centre in zip(blocks, ijk, strict=True):
        cells = unpack_voxels(row)
        assert len({tuple(c) for c in cells}) == 27
        assert np.abs(cells - centre).max() == 1 and (cells == centre).all(axis=1).any()


def test_near_fraction_counts_voxels_within_one_of_the_other_surface():
    surface = np.sort(pack_voxels(np.array([[x, 0, 0] for x in range(10)])))
    touching = pack_voxels(np.array([[x, 1, 1] for x in range(5)] + [[x, 3, 0] for x in range(5)]))
    assert near_fraction(neighbourhoods(touching), surface) == 0.5
    assert fraction_in(touching, surface) == 0.0
