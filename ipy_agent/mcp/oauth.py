"""OAuth 2.1 for HTTP MCP servers: where the tokens are kept, and how the person authorizes.

The protocol itself (protected resource metadata from `WWW-Authenticate`, path-based and at the
root; authorization server metadata with the 2025-03-26 fallbacks; dynamic client registration;
client ID metadata documents; PKCE; scope selection and step-up; the resource parameter; token
refresh) is the `mcp` SDK's `OAuthClientProvider`, an `httpx.Auth`. This module gives it:

- `TokenFile`: the SDK's `TokenStorage`, one JSON file per server in `mcp_token_dir()` (the
  person's settings folder), mode 0600, never shown to the model: the folder is a built-in Read
  deny (permissions/rules.py), so Read, Grep, Glob and Bash's sandbox cannot open it. A token
  keeps its absolute expiry, so a stored token past it is refreshed before it is sent.
- a pre-registered client (`"oauth": {"clientId": ..., "clientSecret": ...}` in the server's
  config) in place of registration: `client_secret_basic` by default with a secret, `"none"`
  (a public client) without one, or the configured `tokenEndpointAuthMethod`;
- the person's side of the authorization: `Agent(mcp_authorize=callable)` receives the
  authorization URL and returns the URL the browser was redirected to (sync or async); without
  it the link is shown (`notify`) and the redirect comes back to a loopback listener on
  127.0.0.1 (`LoopbackReceiver`): directly, or, when the kernel runs under a Jupyter server
  with this package's server extension, through the server's handler (jupyter_redirect.py),
  whose address the browser reaches where a loopback port of the kernel's machine may not be.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import mcp.client.auth.oauth2 as sdk_oauth
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import validate_metadata_issuer
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from ipy_agent.base.paths import mcp_token_dir

from . import jupyter_redirect
from .config import McpAuthorize, OAuthSettings, ServerConfig

__all__ = [
    "AuthorizationFailed",
    "LoopbackReceiver",
    "TokenFile",
    "build_auth",
    "forget_tokens",
    "token_path",
]

# Called with the authorization URL; returns the URL the browser was redirected to.
AUTHORIZE_TIMEOUT = 300.0  # seconds the person has to follow the link
CALLBACK_PATH = "/callback"


class AuthorizationFailed(Exception):
    """The person's authorization did not come back (declined, timed out, a wrong redirect)."""


def token_path(server: str) -> Path:
    """Where one server's tokens are kept (the server's name is checked: letters, digits, _ -)."""
    return mcp_token_dir() / f"{server}.json"


def forget_tokens(server: str) -> bool:
    """Remove a server's tokens and registration (`%agent_mcp logout NAME`); whether there were any."""
    path = token_path(server)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


class TokenFile:
    """The SDK's `TokenStorage` over one file, bound to the server's URL (a changed URL starts
    over). A pre-registered client comes from the config and is never written."""

    def __init__(self, config: ServerConfig, redirect_uri: str) -> None:
        self.path = token_path(config.name)
        self.url = config.url
        self.oauth = config.oauth
        self.redirect_uri = redirect_uri

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}
        return data

    def _write(self, key: str, value: object) -> None:
        data = self._read()
        data["url"] = self.url
        data[key] = value
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthToken.model_validate(raw)
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))
        self._write("expires_at", time.time() + tokens.expires_in if tokens.expires_in else None)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.oauth is not None and self.oauth.client_id:
            return pre_registered(self.oauth, self.redirect_uri)
        raw = self._read().get("client")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(raw)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.oauth is not None and self.oauth.client_id:
            return  # the configured client stays in the config
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


def pre_registered(oauth: OAuthSettings, redirect_uri: str) -> OAuthClientInformationFull:
    method = oauth.token_endpoint_auth_method or ("client_secret_basic" if oauth.client_secret else "none")
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=oauth.client_secret or None,
        token_endpoint_auth_method=method,
        redirect_uris=[AnyUrl(redirect_uri)],
    )


class LoopbackReceiver:
    """A one-shot HTTP listener on 127.0.0.1 that takes the browser's redirect (RFC 8252)."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._got: asyncio.Future[str] | None = None
        self.port = 0
        self.path = CALLBACK_PATH  # what a redirect must ask for

    def private_path(self) -> str:
        """From now on only a redirect to a fresh unguessable path is taken (the Jupyter
        server's handler forwards to it); the path."""
        self.path = f"{CALLBACK_PATH}/{secrets.token_urlsafe(16)}"
        return self.path

    async def open(self) -> str:
        """Listen; the redirect URI to register."""
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    def expect(self) -> None:
        self._got = asyncio.get_running_loop().create_future()

    async def wait(self, timeout: float = AUTHORIZE_TIMEOUT) -> str:
        if self._got is None:
            self.expect()
        assert self._got is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._got), timeout)
        except TimeoutError:
            raise AuthorizationFailed(f"no authorization came back within {timeout:g} s") from None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass  # the headers
            parts = line.split()
            target = parts[1] if len(parts) >= 2 else ""
            ok = target.split("?", 1)[0] == self.path and self._got is not None and not self._got.done()
            if ok and self._got is not None:
                self._got.set_result(f"http://127.0.0.1:{self.port}{target}")
            body = (
                b"Authorized: you can close this tab and go back to the notebook."
                if ok
                else b"Nothing is waiting for an authorization here."
            )
            status = b"200 OK" if ok else b"404 Not Found"
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (OSError, TimeoutError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None


def code_of(redirected: str) -> tuple[str, str | None, str | None]:
    """(code, state, iss) of the URL the browser was redirected to; AuthorizationFailed when it
    carries an error or no code."""
    query = parse_qs(urlparse(redirected).query)

    def one(key: str) -> str | None:
        values = query.get(key)
        return values[0] if values else None

    if error := one("error"):
        detail = one("error_description")
        raise AuthorizationFailed(f"the authorization server answered {error}" + (f": {detail}" if detail else ""))
    code = one("code")
    if not code:
        raise AuthorizationFailed("the redirected URL carries no authorization code")
    return code, one("state"), one("iss")


async def _ask(authorize: McpAuthorize, url: str) -> str:
    """The redirected URL from `mcp_authorize`: a coroutine function is awaited on this loop; a
    plain function runs in a thread (it may block on a browser), and what it returns is awaited
    when it is awaitable."""
    if inspect.iscoroutinefunction(authorize):
        answer = await authorize(url)
    else:
        answer = await asyncio.to_thread(authorize, url)
        if inspect.isawaitable(answer):
            answer = await answer
    if not isinstance(answer, str):
        raise AuthorizationFailed(f"mcp_authorize returned {type(answer).__name__}, not the redirected URL")
    return answer


def _issuer_on_the_origin(metadata: OAuthMetadata, expected: str) -> None:
    """The SDK's issuer check, with the one case MCP 2025-03-26 allows: a server without protected
    resource metadata has its authorization server metadata at its own origin's well-known URL,
    and that metadata may name an issuer with a path on the same origin (`https://host/oauth`).
    Any other issuer, another origin above all, is refused as the SDK refuses it."""
    try:
        validate_metadata_issuer(metadata, expected)
    except Exception:
        got, want = urlparse(str(metadata.issuer)), urlparse(expected)
        legacy = want.path in ("", "/") and not want.query
        if not (legacy and (got.scheme, got.netloc) == (want.scheme, want.netloc)):
            raise


# The SDK's flow calls the check by its module's global name.
setattr(sdk_oauth, "validate_metadata_issuer", _issuer_on_the_origin)  # noqa: B010


Notify = Callable[[str, str], None]  # (server, authorization URL): show the person the link


def _print_link(server: str, url: str) -> None:
    print(f"MCP server {server!r} needs your authorization. Open this link to sign in:\n{url}", flush=True)


async def build_auth(
    config: ServerConfig,
    authorize: McpAuthorize | None,
    receiver: LoopbackReceiver,
    notify: Notify | None = None,
    waiting: Callable[[bool], None] | None = None,
) -> OAuthClientProvider:
    """The `httpx.Auth` that authorizes the requests to one HTTP server."""
    runtime = jupyter_redirect.runtime_dir() if authorize is None else None
    through_jupyter = jupyter_redirect.server_callback(runtime) if runtime is not None else None
    if authorize is not None:
        redirect_uri = "http://127.0.0.1/callback"
    elif through_jupyter is not None:
        await receiver.open()
        receiver.private_path()
        redirect_uri = through_jupyter
    else:
        redirect_uri = await receiver.open()
    oauth = config.oauth
    storage = TokenFile(config, redirect_uri)
    pending: list[str] = []

    def state_of(url: str) -> str:
        return (parse_qs(urlparse(url).query).get("state") or [""])[0]

    async def redirect(url: str) -> None:
        pending.append(url)
        if authorize is None:
            receiver.expect()
            if runtime is not None and through_jupyter is not None:
                # The server's handler forwards the redirect carrying this state, once, to us.
                waiting_here = jupyter_redirect.Waiting(receiver.port, receiver.path)
                jupyter_redirect.expect(runtime, state_of(url), waiting_here)
            (notify or _print_link)(config.name, url)

    async def callback() -> AuthorizationCodeResult:
        url = pending.pop()
        if waiting is not None:
            waiting(True)
        try:
            redirected = await receiver.wait() if authorize is None else await _ask(authorize, url)
        finally:
            if waiting is not None:
                waiting(False)
            if runtime is not None and through_jupyter is not None:
                jupyter_redirect.withdraw(runtime, state_of(url))
        code, state, iss = code_of(redirected)
        return AuthorizationCodeResult(code=code, state=state, iss=iss)

    metadata = OAuthClientMetadata(
        client_name="ipy_agent",
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=oauth.scope if oauth is not None and oauth.scope else None,
    )
    provider = _Provider(
        storage,
        server_url=config.url,
        client_metadata=metadata,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=oauth.client_metadata_url if oauth is not None and oauth.client_metadata_url else None,
    )
    return provider


class _Provider(OAuthClientProvider):
    """The SDK's provider; a stored token's expiry comes back with it, so an expired one is
    refreshed before it is sent."""

    def __init__(self, storage: TokenFile, **kwargs: Any) -> None:
        super().__init__(storage=storage, **kwargs)
        self.token_file = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = self.token_file.expires_at()
