"""The magics tests' shell fixtures, for `%agent_context` and `%agent_compact`."""

from tests.magics.conftest import magics, make_shell, shell  # noqa: F401
