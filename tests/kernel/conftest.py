"""Kernel tests start real ipykernel processes: mark them so `-m "not kernel"` can skip them."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "kernel: tests that start a real Jupyter kernel")
