"""ipy_agent: an LLM agent inside IPython and Jupyter, with a Claude Code style tool runtime."""
