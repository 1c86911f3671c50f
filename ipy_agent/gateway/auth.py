"""Who a request comes from: its token, checked with JupyterHub's API or against a file of tokens.

Kernels send their person's Hub token (`JUPYTERHUB_API_TOKEN`) as the API key. As a Hub service
the gateway asks the Hub whose it is (`GET {hub_api}/user`, with the token itself). The Hub's
answers are kept a short while (`ttl`, a minute) so a streaming conversation does not ask the Hub
each turn, in a cache of at most `max_size` tokens that forgets the least recently used first: a
flood of made-up tokens cannot grow it without bound, and a token the Hub revokes stops working
once its answer is older than the TTL. The cache is keyed by a hash of the token, not the token.
A Hub that cannot answer (an error status, unreachable) is asked again next time, not remembered.
Outside a Hub (tests, a single machine) a JSON file maps tokens to names: `{"token-of-alice": "alice"}`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import httpx

__all__ = ["Authenticator", "HubAuth", "TokenFile"]


class Authenticator(Protocol):
    async def user(self, token: str) -> str | None:
        """The name of the token's owner, or None for a token nobody has."""
        ...


class TokenFile:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        data = json.loads(self.path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise ValueError(f'{self.path}: expected {{"token": "user name", ...}}')
        self._users: dict[str, str] = data

    async def user(self, token: str) -> str | None:
        return self._users.get(token)


# The Hub's answers that say who a token is, or that it is nobody's; others are not kept.
_DEFINITE = (200, 401, 403, 404)


class HubAuth:
    """Tokens checked with JupyterHub (`JUPYTERHUB_API_URL`, set for a Hub service)."""

    def __init__(
        self,
        api_url: str,
        *,
        ttl: float = 60.0,
        max_size: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_size < 1 or ttl < 0:
            raise ValueError("HubAuth: max_size must be at least 1 and ttl not negative")
        self.api_url = api_url.rstrip("/")
        self.ttl = ttl
        self.max_size = max_size
        self._clock = clock
        self._cache: OrderedDict[bytes, tuple[float, str | None]] = OrderedDict()
        self._client = httpx.AsyncClient(timeout=10)

    def __len__(self) -> int:
        """How many tokens' answers are kept."""
        return len(self._cache)

    async def user(self, token: str) -> str | None:
        key = hashlib.sha256(token.encode()).digest()
        hit = self._cache.get(key)
        if hit is not None:
            if self._clock() - hit[0] < self.ttl:
                self._cache.move_to_end(key)
                return hit[1]
            del self._cache[key]
        r = await self._client.get(f"{self.api_url}/user", headers={"Authorization": f"token {token}"})
        name = None
        if r.status_code == 200:
            body = r.json()
            name = str(body.get("name")) if body.get("kind", "user") == "user" and body.get("name") else None
        if r.status_code in _DEFINITE:
            self._cache[key] = (self._clock(), name)
            while len(self._cache) > self.max_size:
                self._cache.popitem(last=False)
        return name

    async def aclose(self) -> None:
        await self._client.aclose()
