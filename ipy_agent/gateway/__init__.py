"""The key gateway: a small service that holds the real API key and forwards the Messages API.

Run by an administrator (`python -m ipy_agent.gateway`, registered as a JupyterHub service);
kernels reach it with their person's Hub token and never see the key. It streams, passes prompt
caching through, counts tokens and cost per person and refuses a request over budget.

Modules import one way, each only from those above it in this list:
- `usage`: the usage database (SQLite): tokens and cost per person and day;
- `auth`: who a token belongs to: the Hub's API, or a file of tokens;
- `server`: the HTTP service (tornado): authenticate, check the budget, forward, count;
- `__main__`: the command line.
"""
