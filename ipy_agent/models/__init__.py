"""Models the agent loop can talk to: the Anthropic API and an offline scripted replay.

Modules import one way, each only from those above it in this list:
- `base`: the `Model` protocol, its request and stream events, `Usage`, `ModelError`;
- `pricing`: cost estimates and context window sizes by model family;
- `anthropic_errors`: the SDK's failures as a `ModelError` the person can act on;
- `anthropic`: `AnthropicModel`, the Messages API through the official SDK, streamed;
- `scripted`: `ScriptedModel`, an offline model that replays turns (tests, examples, teaching).
"""
