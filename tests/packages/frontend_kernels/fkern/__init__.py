"""Kernels built by every build frontend in tests/test_frontends.py."""
