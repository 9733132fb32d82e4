"""network stage of the pipeline."""
