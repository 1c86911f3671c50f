"""The key gateway: a small service that holds the real API key and forwards the Messages API.

Run by an administrator (`python -m ipy_agent.gateway`, registered as a JupyterHub service);
kernels reach it with their person's Hub token and never see the key. It streams, passes prompt
caching through, counts tokens and cost per person, refuses a request over budget or for a model
the managed policy does not list, and charges a response cut short the most it could cost.

Modules import one way, each only from those above it in this list:
- `charges`: budgets, the hold of a request in flight, the usage read from a response, refusals;
- `usage`: the store (SQLite or PostgreSQL): tokens and cost per person and day, and the holds of
  the requests in flight, shared by every replica on one database;
- `auth`: who a token belongs to: the Hub's API (a bounded cache with a TTL), or a file of tokens;
- `logs`: one JSON line per request, without prompts, answers, tokens or keys;
- `metrics`: the counters of `/metrics`, in Prometheus's text format;
- `policy_files`: the managed policy's files, read again when they change;
- `in_flight`: the requests running now, what a graceful shutdown waits for;
- `upstream_pool`: the connections to the API, in several small keep-alive pools;
- `server`: the HTTP service (tornado): authenticate, check the policy and the budget, forward,
  charge; `/usage`, `/health`, `/metrics`;
- `shutdown`: serving until SIGTERM, then draining the requests in flight;
- `__main__`: the command line.
"""
