"""Judgments from clicks: click events in, click models (CTR, COEC, a position-based model), a simulator."""
