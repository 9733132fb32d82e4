"""outputs stage of the pipeline."""
