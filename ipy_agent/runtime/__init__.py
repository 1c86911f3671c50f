"""The call path: one lifecycle for every tool call, batches, budgets, the meter for money, and the records they leave.

Plain Python: nothing here imports IPython or ipywidgets, so it is tested without a kernel.
Modules import one way, each only from those above it in this list:
- `trace`: one record per call (stages, timings, decision) and the events a run emits;
- `budget`: per-result and per-message size budgets, spilling to files;
- `meter`: the one meter for money every model request of a run passes (held before, settled after);
- `registry`: which tools the model is offered this turn, and why others are hidden;
- `run_env`: what a call needs from its turn, and the one path that settles a record;
- `lifecycle`: the stages of one call, from parsing its input to its post-hooks;
- `executor`: batches of concurrency-safe calls, ordered results, cancellation;
- `conversation`: the `Conversation` protocol, what the layers above need from a conversation.
"""
