"""Evaluation metrics of the seeds: detection mAP (``detection``), occupancy mIoU (``occupancy``),
grounding Acc@IoU and Dist@d (``grounding``)."""

from .grounding import GroundingQuery, GroundingReport, GroundingScores, evaluate_grounding, query_from_result

__all__ = ["GroundingQuery", "GroundingReport", "GroundingScores", "evaluate_grounding", "query_from_result"]
