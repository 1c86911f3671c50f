"""The notebook tools: NotebookRead, NotebookEdit, NotebookRun, NotebookVerify and Variables.

They work on the notebook the person has open through the live-notebook bridge
(`ipy_agent/notebook/bridge.py`), and NotebookEdit on `.ipynb` files on disk too.
Modules import one way, each only from those above it in this list:
- `live`: reaching the open notebook, the stale-cell checks and the cell policies the live tools share;
- `nbfile`: notebook files: one parse, one cell spliced in, nbformat for new cells and upgrades;
- `edit_live`: NotebookEdit applied to the live model in the browser, its change staged in the
  cell for the person's Accept or Reject;
- `run_notes`: what a run can change and how the cell last ran (NotebookRun's prompt and result),
  the cells' policies and staleness (NotebookRead);
- `run_variables`: what a run keeps of the kernel's variables for a rewind, and what it left;
- `read`: `NotebookReadTool`; `edit`: `NotebookEditTool` (live or file, one schema) and its
  change to a file, planned as text;
- `run`: `NotebookRunTool`, cells run in this kernel; `variables`: `VariablesTool`;
- `verify`: `NotebookVerifyTool`, the notebook run top to bottom in a new kernel, compared with this one.
- `todo_human`: TodoHuman, the Learning style's `# TODO(human)` cell, waiting for the person to run it.
"""
