"""Fixtures shared by the gateway's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import need_postgres, postgres_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One temporary PostgreSQL cluster for the worker's gateway tests (each takes a fresh
    database of its own with `fresh_database`); its URL."""
    need_postgres()
    with postgres_cluster(tmp_path_factory.mktemp("postgres")) as url:
        yield url
