"""The Jupyter server extension `ipy_agent.mcp.server_extension`: one handler, the OAuth redirect.

GET `<base_url>/ipy-agent/oauth/callback?code=...&state=...` is where an MCP server's
authorization sends the person's browser back when the kernel runs under this Jupyter server
(mcp/jupyter_redirect.py has the channel). The handler is authenticated like any page of the
server (the person's browser has its cookie; without it, the server's login comes first); it
hands the query to the kernel that waits for this `state`, once, and refuses any other state.
The package enables the extension when it is installed
(`etc/jupyter/jupyter_server_config.d/ipy_agent.json`); `jupyter server extension list` shows it.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import TYPE_CHECKING

import tornado.web
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado.httpclient import AsyncHTTPClient
from tornado.ioloop import IOLoop

from .jupyter_redirect import HANDLER_PATH, announce, claim

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

__all__ = ["OAuthCallbackHandler"]

FORWARD_TIMEOUT = 30.0  # seconds for the kernel to take the redirect


class OAuthCallbackHandler(JupyterHandler):
    """Hands an authorization's redirect to the kernel that waits for its state."""

    runtime: Path

    def initialize(self, runtime: Path) -> None:
        self.runtime = runtime

    def _answer(self, status: int, text: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(text)

    @tornado.web.authenticated
    async def get(self) -> None:
        waiting = claim(self.runtime, self.get_argument("state", ""))
        if waiting is None:
            self._answer(
                400,
                "No notebook waits for this authorization: the link was used already, its run "
                "stopped waiting, or it did not come from a notebook of this server. Run the cell "
                "again for a new link.",
            )
            return
        target = f"http://127.0.0.1:{waiting.port}{waiting.path}?{self.request.query}"
        try:
            await AsyncHTTPClient().fetch(target, request_timeout=FORWARD_TIMEOUT)
        except Exception:
            self._answer(
                502,
                "The notebook's kernel no longer waits for this authorization (it was restarted "
                "or stopped): run the cell again for a new link.",
            )
            return
        self._answer(200, "Authorized: you can close this tab and go back to the notebook.")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "ipy_agent.mcp.server_extension"}]


def _load_jupyter_server_extension(serverapp: ServerApp) -> None:
    runtime = Path(serverapp.runtime_dir)
    web_app: tornado.web.Application = serverapp.web_app  # its add_handlers, as tornado types it
    route = url_path_join(web_app.settings["base_url"], HANDLER_PATH)
    web_app.add_handlers(".*$", [(route, OAuthCallbackHandler, {"runtime": runtime})])

    def ready() -> None:
        # After the server bound its port (port 0 is chosen then), before it serves a request:
        # no kernel of this server starts before it knows the handler's address.
        base = os.environ.get("JUPYTERHUB_PUBLIC_URL") or serverapp.connection_url
        marker = announce(runtime, os.getpid(), url_path_join(base, HANDLER_PATH))
        atexit.register(marker.unlink, missing_ok=True)  # a later process with this pid is not us

    IOLoop.current().add_callback(ready)
