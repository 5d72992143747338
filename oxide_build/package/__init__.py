"""Packaging: artifacts on disk, wheel contents."""
