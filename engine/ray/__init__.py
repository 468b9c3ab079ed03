"""Running a run's heavy stages on Ray: a local Ray started for the run, or an existing cluster."""
