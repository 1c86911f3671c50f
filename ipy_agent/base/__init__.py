"""The base layer: plain helpers that every other layer may use, and that use nothing of ours.

- `imports`: what the agent imports comes from where it is installed, not from the project;
- `gitignore`: path patterns in gitignore syntax (what `Read(...)` and `Edit(...)` rules write);
- `secret_search`: where a secret's value occurs in a text, in any form and layout a shell prints it;
- `secrets`: credentials kept out of tools' processes and redacted from text;
- `paths`: where the person's own ipy_agent files live, and where a project's root is;
- `json_store`: one JSON object in a file, read whole and replaced whole (the person's approvals);
- `surface_names`: the names that make a file or folder a protected surface wherever it is;
- `surfaces`: the one list of protected surfaces: where a written file becomes code that runs
  later or decides what is allowed, from the live environment;
- `images`: images as the Messages API accepts them (type by content, size limits);
- `threads`: worker threads for blocking tool code, and a synchronous run from inside a loop.
"""
