"""memory stage of the pipeline."""
