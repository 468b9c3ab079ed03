"""Tests of core/: what the evaluator and the systems under test share."""
