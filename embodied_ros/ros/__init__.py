"""ros stage of the pipeline."""
