"""Geometry: the 9-DoF box convention, exact box IoU, rigid transforms and gravity alignment."""

from .boxes import BOX_EDGES, as_boxes, box_corners, box_rotations, make_boxes, points_in_boxes, transform_boxes
from .iou import box_intersection_volume, box_iou_3d, pairwise_box_iou_3d
from .transforms import gravity_alignment, invert_transform, make_transform, transform_points

__all__ = [
    "BOX_EDGES", "as_boxes", "box_corners", "box_rotations", "make_boxes", "points_in_boxes", "transform_boxes",
    "box_intersection_volume", "box_iou_3d", "pairwise_box_iou_3d",
    "gravity_alignment", "invert_transform", "make_transform", "transform_points",
]
