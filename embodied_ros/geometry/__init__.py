"""geometry stage of the pipeline."""
