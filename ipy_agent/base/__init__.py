"""The base layer: plain helpers that every other layer may use, and that use nothing of ours.

- `gitignore`: path patterns in gitignore syntax (what `Read(...)` and `Edit(...)` rules write);
- `secrets`: credentials kept out of tools' processes and redacted from text;
- `images`: images as the Messages API accepts them (type by content, size limits);
- `threads`: worker threads for blocking tool code, and a synchronous run from inside a loop;
- `paths`: where the person's own ipy_agent files live, and where a project's root is.
"""
