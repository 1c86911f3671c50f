"""Re-record the transcripts of teaching notebooks with a real model, in one command.

    python -m ipy_agent.magics.rerecord examples/01_tour.ipynb [examples/05_concurrency.ipynb ...]

Each notebook runs top to bottom in a fresh kernel (nbclient), in its own folder, with
IPY_AGENT_RECORD=1 in the kernel's environment: every `lesson_model(TRANSCRIPTS / "x.json")` the
notebook asks for is then a real model recording into that transcript (models/recording.py),
which replaces the file. The model is IPY_AGENT_MODEL (any `%agent --model` name, e.g.
`bedrock:...` or `ollama:llama3.2`), else the newest Sonnet on Anthropic's API; its credentials
come from the environment as usual. The notebook file itself is not changed. Transcripts the
notebook replays on purpose (`ScriptedModel.from_file`) stay hand-written.

A recorded transcript names its provenance (model, date, this command); compare it with git
before committing: a real model may take another path than the text around it describes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ipy_agent.models.recording import RECORD_ENV

__all__ = ["main", "rerecord"]


def rerecord(notebook: Path, *, timeout: int = 1800) -> list[Path]:
    """Run `notebook` with recording on; the transcripts it rewrote."""
    import nbclient
    import nbformat

    folder = notebook.resolve().parent
    transcripts = folder / "transcripts"
    before = {p: p.stat().st_mtime for p in transcripts.glob("*.json")} if transcripts.is_dir() else {}
    started = time.time()
    os.environ[RECORD_ENV] = "1"
    os.environ["IPY_AGENT_RECORD_HOW"] = f"python -m ipy_agent.magics.rerecord {notebook}"
    try:
        nb = nbformat.read(notebook, as_version=4)
        client = nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
        )
        client.execute()
    finally:
        os.environ.pop(RECORD_ENV, None)
        os.environ.pop("IPY_AGENT_RECORD_HOW", None)
    return sorted(
        p for p in transcripts.glob("*.json") if p.stat().st_mtime >= started and p.stat().st_mtime != before.get(p)
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    spec = os.environ.get("IPY_AGENT_MODEL", "").strip()
    if not spec and not os.environ.get("ANTHROPIC_API_KEY"):
        print(
            "rerecord needs a real model: set ANTHROPIC_API_KEY, or IPY_AGENT_MODEL to a provider's model "
            "(e.g. bedrock:..., ollama:llama3.2) with its credentials. `%agent --model ?` lists them.",
            file=sys.stderr,
        )
        return 2
    for name in args:
        path = Path(name)
        if not path.is_file():
            print(f"{name}: no such notebook", file=sys.stderr)
            return 2
        written = rerecord(path)
        print(f"{name}: re-recorded {', '.join(p.name for p in written) or 'nothing (it uses no lesson_model)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
