"""Who a request comes from: its token, checked with JupyterHub's API or against a file of tokens.

Kernels send their person's Hub token (`JUPYTERHUB_API_TOKEN`) as the API key. As a Hub service
the gateway asks the Hub whose it is (`GET {hub_api}/user`, with the token itself); answers are
kept for a minute so a streaming conversation does not ask the Hub each turn. Outside a Hub
(tests, a single machine) a JSON file maps tokens to names: `{"token-of-alice": "alice"}`.
"""

from __future__ import annotations

import json
import time
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


class HubAuth:
    """Tokens checked with JupyterHub (`JUPYTERHUB_API_URL`, set for a Hub service)."""

    TTL = 60.0

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._cache: dict[str, tuple[float, str | None]] = {}
        self._client = httpx.AsyncClient(timeout=10)

    async def user(self, token: str) -> str | None:
        hit = self._cache.get(token)
        if hit is not None and time.monotonic() - hit[0] < self.TTL:
            return hit[1]
        r = await self._client.get(f"{self.api_url}/user", headers={"Authorization": f"token {token}"})
        name = None
        if r.status_code == 200:
            body = r.json()
            name = str(body.get("name")) if body.get("kind", "user") == "user" and body.get("name") else None
        self._cache[token] = (time.monotonic(), name)
        return name
