"""The notebook from the kernel's side: cells as text, and the live-notebook bridge.

Plain Python (the bridge opens a comm with the `comm` package, never through IPython).
Modules import one way, each only from those above it in this list:
- `protocol_types`: the protocol's types (TypedDicts, `PageRequests`), generated from `protocol.json`;
- `protocol`: the live-notebook protocol, read from `protocol.json` (the extension reads it too),
  and the light check of a value against its schemas;
- `protocol_gen`: writes `protocol_types` and the extension's `protocol.ts` from the schemas;
- `naming`: a cell as a person names it (`cell 4 · df = load(...)`);
- `render`: notebook cells as the model reads them (id, type, source, outputs), never raw JSON;
- `cell_bindings`: the names a cell's code binds, deletes and reads at the top level (`ast`);
- `namespace_reach`: what reaches the namespace other than by a name (`get_ipython()`,
  `globals()`, `sys.modules`, a value that holds the shell): the effects are then "not visible";
- `effects`: what running a cell's code can change, found with `ast` (nothing runs), failing closed;
- `policy`: the person's cell policies (`agent:never-run`, ...), from tags and notebook metadata;
- `cell_guard`: what a write of a notebook would do to those policies, whatever tool makes it;
- `errors`: a failing run's error as the model needs it to fix it: the cell's line, the frames
  in the person's code, names and columns nearby;
- `execute`: a cell's code run in this kernel, capturing what it shows (NotebookRun);
- `runlog`: which cells ran in this kernel, with their source and timing;
- `staleness`: cells whose outputs may be stale, from definitions, uses and the run order;
- `variables`: the kernel's variables, described without running the person's code;
- `verify`: the notebook run top to bottom in a new kernel (nbclient) and compared with the live
  kernel: cells that raise, outputs and variables that differ, hidden state, out-of-order runs;
- `fingerprint`: a variable's value as the agent's run left it, compared without running its
  class's code (what a rewind checks before it puts a variable back);
- `observed`: what a cell run really changed in the namespace (names added, rebound, deleted),
  from fingerprints before and after, beside what `effects` predicted;
- `comm_guard`: `CommGuard`, keeps the page's comms open when another page of the kernel closes them
  (Notebook 7's file browser tab);
- `review`: staged cell edits the page shows in the cell (proposals), and the person's decisions;
- `bridge`: `NotebookBridge`, requests to the JupyterLab extension over a comm;
- `metadata`: the notebook's own `ipy_agent` metadata (its instructions), live or on disk.
"""
