"""`python -m ipy_agent.gateway`: the key gateway, as a JupyterHub service or on its own.

    ANTHROPIC_API_KEY=sk-... python -m ipy_agent.gateway --port 10101 --per-day-usd 2

The key comes from the environment only (a command line is visible to every user of the
machine). As a Hub service (JUPYTERHUB_API_URL set) tokens are checked with the Hub; otherwise
`--tokens FILE` maps tokens to names. `--report` prints everyone's usage and exits. The managed
policy the kernels read (config/policy.py: `/etc/ipy_agent/managed-settings.json`, ...), and any
`--policy FILE`, hold here too: a model outside `availableModels` is refused, and `perDayUsd` /
`perUserUsd` join `--per-day-usd` / `--per-user-usd` (the smaller wins). A policy file that
cannot be read stops the gateway from starting.

`--db` is a SQLite file, or a PostgreSQL URL that several replicas share, with the holds of
their requests in flight; `--hold-seconds` is how long a crashed replica's holds still count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import Gateway

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ipy_agent.gateway", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("IPY_AGENT_GATEWAY_PORT", "10101")))
    parser.add_argument("--upstream", default=os.environ.get("ANTHROPIC_BASE_URL", ""), help="the Messages API")
    parser.add_argument(
        "--db",
        default=os.environ.get("IPY_AGENT_GATEWAY_DB", "ipy_agent_gateway.sqlite"),
        help="a SQLite path or sqlite:/// URL, or postgresql://user:password@host:port/db (for replicas)",
    )
    parser.add_argument(
        "--hold-seconds",
        type=float,
        default=60.0,
        help="how long a request's hold counts unless its gateway renews it (a crashed replica's holds expire)",
    )
    parser.add_argument("--tokens", help='JSON file {"token": "user"} (without a Hub)')
    parser.add_argument("--per-day-usd", type=float, default=None)
    parser.add_argument("--per-user-usd", type=float, default=None)
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="FILE",
        help="a managed policy (availableModels, budget) besides those the kernels read; repeatable",
    )
    parser.add_argument("--report", action="store_true", help="print usage per user and exit")
    args = parser.parse_args(argv)

    from ipy_agent.config.policy import PolicyError, load_policy, policy_paths

    from .auth import Authenticator, HubAuth, TokenFile
    from .charges import Limits
    from .server import Gateway
    from .usage import UsageDB

    try:
        db = UsageDB(args.db, hold_seconds=args.hold_seconds)
    except ValueError as e:
        print(f"ipy_agent.gateway: {e}", file=sys.stderr)
        return 2
    if args.report:
        for row in db.report():
            print(f"{row.user}\t{row.requests} requests\t${row.usd:.4f}\tin {row.input_tokens} out {row.output_tokens}")
        return 0
    auth: Authenticator
    if args.tokens:
        auth = TokenFile(args.tokens)
    elif hub := os.environ.get("JUPYTERHUB_API_URL"):
        auth = HubAuth(hub)
    else:
        print("ipy_agent.gateway: give --tokens FILE, or run it as a JupyterHub service", file=sys.stderr)
        return 2
    try:  # the policy files the kernels read, and those given: the strictest of them holds
        policy = load_policy([*policy_paths(), *(Path(p) for p in args.policy)])
    except PolicyError as e:
        print(f"ipy_agent.gateway: {e}", file=sys.stderr)
        return 2
    try:
        gateway = Gateway(
            api_key=os.environ.get("ANTHROPIC_API_KEY", ""),
            auth=auth,
            db=db,
            limits=Limits(per_day=args.per_day_usd, per_user=args.per_user_usd),
            upstream=args.upstream,
            policy=policy,
        )
    except ValueError as e:
        print(f"ipy_agent.gateway: {e}", file=sys.stderr)
        return 2
    asyncio.run(_serve(gateway, args.host, args.port))
    return 0


async def _serve(gateway: Gateway, host: str, port: int) -> None:
    gateway.app().listen(port, address=host)
    print(f"ipy_agent.gateway: serving on http://{host}:{port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
