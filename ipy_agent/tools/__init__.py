"""The built-in tools, one module each, with the prompt text beside the code."""
