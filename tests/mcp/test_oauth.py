"""OAuth for HTTP servers, our side of it (the protocol runs in test_conformance.py, against the
suite's authorization servers): the `"oauth"` config entry, a pre-registered client's token
endpoint method, the redirect's code and errors, the loopback listener, the issuer check."""

from __future__ import annotations

import asyncio
import urllib.request

import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthMetadata

from ipy_agent.mcp.config import McpConfigError, OAuthSettings, parse_server
from ipy_agent.mcp.oauth import AuthorizationFailed, LoopbackReceiver, _issuer_on_the_origin, code_of, pre_registered


def test_the_oauth_entry_of_an_http_server():
    cfg = parse_server("gh", {"url": "https://mcp.example/mcp", "oauth": {"clientId": "abc", "clientSecret": "s"}})
    assert cfg.oauth == OAuthSettings(client_id="abc", client_secret="s")
    with pytest.raises(McpConfigError, match=r"'oauth.tokenEndpointAuthMethod' must be one of"):
        parse_server("gh", {"url": "https://x/mcp", "oauth": {"clientId": "a", "tokenEndpointAuthMethod": "jwt"}})
    with pytest.raises(McpConfigError, match=r"unknown field 'oauth.client_id'"):
        parse_server("gh", {"url": "https://x/mcp", "oauth": {"client_id": "a"}})
    with pytest.raises(McpConfigError, match=r"'oauth.clientMetadataUrl' must be an https:// URL with a path"):
        parse_server("gh", {"url": "https://x/mcp", "oauth": {"clientMetadataUrl": "http://me.example/c.json"}})
    with pytest.raises(McpConfigError, match=r"'oauth' is for HTTP servers|'url', 'headers' and 'oauth'|is for HTTP"):
        parse_server("local", {"command": "srv", "oauth": {"clientId": "a"}})


def test_a_pre_registered_client_authenticates_as_configured():
    def method(**kw: str) -> str | None:
        return pre_registered(
            OAuthSettings(client_id="a", **kw), "http://127.0.0.1:1/callback"
        ).token_endpoint_auth_method

    assert method(client_secret="s") == "client_secret_basic"
    assert method(client_secret="s", token_endpoint_auth_method="client_secret_post") == "client_secret_post"
    assert method() == "none"  # a public client


def test_the_redirect_carries_the_code_or_says_why_not():
    assert code_of("http://127.0.0.1:5/callback?code=c1&state=s1&iss=https%3A%2F%2Fas") == ("c1", "s1", "https://as")
    with pytest.raises(AuthorizationFailed, match="access_denied: the person said no"):
        code_of("http://127.0.0.1:5/callback?error=access_denied&error_description=the+person+said+no")
    with pytest.raises(AuthorizationFailed, match="no authorization code"):
        code_of("http://127.0.0.1:5/callback?state=s1")


def test_the_loopback_listener_takes_the_redirect_once():
    async def go() -> tuple[str, int]:
        receiver = LoopbackReceiver()
        uri = await receiver.open()
        assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")
        receiver.expect()

        def browser(path: str) -> int:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{receiver.port}{path}") as r:
                    return int(r.status)
            except urllib.error.HTTPError as e:
                return e.code

        assert await asyncio.to_thread(browser, "/elsewhere?code=x") == 404
        assert await asyncio.to_thread(browser, "/callback?code=c&state=s") == 200
        got = await receiver.wait(timeout=10)
        second = await asyncio.to_thread(browser, "/callback?code=other&state=s")  # nothing waits now
        await receiver.close()
        return got, second

    got, second = asyncio.run(go())
    assert code_of(got) == ("c", "s", None) and second == 404


def _metadata(issuer: str) -> OAuthMetadata:
    return OAuthMetadata.model_validate(
        {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token"}
    )


def test_the_issuer_check_allows_only_a_path_on_the_servers_own_origin():
    # 2025-03-26: metadata at the server's origin naming an issuer below it (the suite's backcompat scenario).
    _issuer_on_the_origin(_metadata("http://localhost:4000/oauth"), "http://localhost:4000")
    # Attack: another origin is refused as the SDK refuses it.
    with pytest.raises(OAuthFlowError, match="issuer mismatch"):
        _issuer_on_the_origin(_metadata("http://evil.example/oauth"), "http://localhost:4000")
    # An authorization server named with a path (from protected resource metadata) must match exactly.
    with pytest.raises(OAuthFlowError, match="issuer mismatch"):
        _issuer_on_the_origin(_metadata("http://localhost:4000/other"), "http://localhost:4000/tenant")


def test_a_stored_token_past_its_expiry_is_refreshed_before_it_is_sent(tmp_path, monkeypatch):
    import time

    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from ipy_agent.mcp.oauth import TokenFile, build_auth

    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path))
    cfg = parse_server("web", {"url": "http://127.0.0.1:9/mcp"})

    async def store() -> None:
        tokens = TokenFile(cfg, "http://127.0.0.1/callback")
        await tokens.set_client_info(OAuthClientInformationFull(client_id="c"))
        await tokens.set_tokens(OAuthToken(access_token="a", refresh_token="r", expires_in=3600))

    async def provider_state() -> tuple[bool, bool]:
        provider = await build_auth(cfg, lambda url: url, LoopbackReceiver())
        await provider._initialize()
        return provider.context.is_token_valid(), provider.context.can_refresh_token()

    asyncio.run(store())
    assert asyncio.run(provider_state()) == (True, True)  # a new session: valid, sent as it is
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + 7200)  # two hours later
    assert asyncio.run(provider_state()) == (False, True)  # expired: refreshed first
