"""A page connected in this process (`connect_local`: a teaching notebook's stand-in when it runs
headless) stays connected across runs in a kernel.

Before each run, a bridge in a kernel checks that a known page is still open by opening a fresh
comm and waiting for its hello. A page in this process is not behind a comm a browser could
close, and it never answers that probe: the second `%agent` run of notebook 13, headless, found
the stand-in gone ("The live notebook is not available") and could not read its cells.
"""

from __future__ import annotations

from types import SimpleNamespace

from ipy_agent.notebook.bridge import NotebookBridge
from tests.support.frontend import Panel


class _Comms:
    def register_target(self, name: str, callback: object) -> None:
        pass


async def test_a_page_in_this_process_is_still_there_for_the_next_run(tmp_path):
    bridge = NotebookBridge(cwd=tmp_path)
    bridge.attach(SimpleNamespace(comm_manager=_Comms()))  # in a kernel: a known page is probed
    page = Panel("nb.ipynb", cells=[{"id": "a", "cell_type": "code", "source": "x = 1"}], server_root=str(tmp_path))
    bridge.connect_local(page)
    assert bridge.connected

    assert await bridge.ensure(probe_wait=0.2)
    assert bridge.connected
    assert [c["source"] for c in await bridge.read_cells(["a"])] == ["x = 1"]
