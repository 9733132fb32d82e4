"""sources stage of the pipeline."""
