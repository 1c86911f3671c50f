"""What the tool families share; no family imports another, only this.

Modules import one way, each only from those above it in this list:
- `protected`: files whose contents decide what runs (writing them always asks);
- `diff`: diffs and numbered snippets for the editing tools;
- `fileio`: encodings, line endings and atomic writes;
- `cell_policies`: the person's cell policies held on a notebook file, whichever tool writes it;
- `edit_plan`: what Edit, Write and NotebookEdit share: one plan, checked three times, applied once.
"""
