"""An MCP server that needs OAuth, and its own authorization server, on 127.0.0.1: `python
oauth_server.py`. It prints `PORT <n>` and serves streamable HTTP at /mcp, the protected resource
and authorization server metadata, dynamic client registration, /authorize and /token (the
`mcp` SDK's auth routes over an in-memory provider), until killed.

/authorize plays the person who signs in and says yes: it redirects the browser straight back to
the client's redirect URI with a code and the request's state. The tool `whoami` answers only
with a token the flow issued.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from urllib.parse import urlencode

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import ToolAnnotations


class Provider:
    """Clients, codes and tokens in memory."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        query = urlencode({"code": code, **({"state": params.state} if params.state else {})})
        sep = "&" if "?" in str(params.redirect_uri) else "?"
        return f"{params.redirect_uri}{sep}{query}"

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id or "", authorization_code.scopes)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id or "", scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "secured",
        auth_server_provider=Provider(),
        auth=AuthSettings(
            issuer_url=origin,
            resource_server_url=f"{origin}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def whoami() -> str:
        """Who the token was issued to."""
        return "signed in through OAuth"

    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
