"""Models the agent loop can talk to: Claude on every platform, OpenAI-compatible servers, and
an offline scripted replay, with recordings of real sessions for it.

Modules import one way, each only from those above it in this list:
- `base`: the `Model` protocol, its request and stream events, `Usage`, `Cost`, `ModelError`;
- `pricing`: cost estimates and context window sizes by model family, cloud names read too;
- `platforms`: where Claude is served (Anthropic, Bedrock, Vertex, Foundry): clients, credentials;
- `anthropic_errors`: the SDK's failures as a `ModelError` the person can act on;
- `anthropic`: `AnthropicModel`, the Messages API through the official SDK, streamed;
- `openai_wire`: the translation between Anthropic messages and OpenAI Chat Completions;
- `openai_discovery`: what an OpenAI-compatible server says about a model (window, tools);
- `openai`: `OpenAIModel`, Ollama, vLLM, llama.cpp, LM Studio and hosted services;
- `transcript`: the transcript format (replies, recorded replies, branches) and replay checks;
- `scripted`: `ScriptedModel`, an offline model that replays turns (tests, examples, teaching);
- `providers`: `provider:name` model names (`%agent --model ollama:llama3.2`) and their listing;
- `recording`: `RecordingModel`, a real session written as a transcript; `lesson_model`.
"""
