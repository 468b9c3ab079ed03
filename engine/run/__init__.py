"""A run: its configuration, plan, stages (queries, search, grading, scoring), lifecycle and cost estimate."""
