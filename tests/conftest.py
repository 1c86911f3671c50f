"""Shared fixtures."""

from __future__ import annotations

import pytest

from tests.helpers import Recorder


@pytest.fixture
def rec() -> Recorder:
    return Recorder()
