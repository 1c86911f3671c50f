"""A `[cell N]` in the model's answer as a link to that cell of the notebook.

The model names a cell by its 1-based position, as the page numbers cells and as our own words
name them (`cell 4 · df = load(...)`, notebook/naming.py); the system prompt asks it to cite
cells as `[cell N]`. `cite_cells` is a markdown-it plugin `markdown_html` (segments.py) uses: a
`[cell N]` in the text (not in code, not a Markdown link `[cell N](url)` or `[cell N][ref]`)
becomes

    [<a class="ipy-agent-cite" href="#ipy-agent-cell-N" data-ipy-agent-cell="N" title="…">cell N</a>]

The JupyterLab extension (labextension/src/cite.ts) handles a click on it in the notebook panel
the output sits in: it makes cell N active and scrolls to it; nothing goes to the kernel, so it
works in a saved record reopened without one. The href carries N too, for a page whose sanitizer
drops data attributes; where no extension runs (nbviewer, an export), the link goes nowhere and
the words stay `[cell N]`, which is also what the text/plain record and the terminal show.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from markdown_it.common.utils import normalizeReference

if TYPE_CHECKING:
    from collections.abc import MutableMapping, Sequence

    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token
    from markdown_it.utils import OptionsDict

__all__ = ["CITE_ATTRIBUTE", "CITE_CLASS", "cite_cells"]

CITE_CLASS = "ipy-agent-cite"
CITE_ATTRIBUTE = "data-ipy-agent-cell"  # what labextension/src/cite.ts reads
_TOKEN = "ipy_agent_cell_cite"
_CITE = re.compile(r"\[[Cc]ell (\d{1,5})\]")


def cite_cells(md: MarkdownIt) -> None:
    """The plugin: `MarkdownIt(...).use(cite_cells)`."""
    md.inline.ruler.before("link", _TOKEN, _parse)
    md.add_render_rule(_TOKEN, _render)


def _parse(state: StateInline, silent: bool) -> bool:
    m = _CITE.match(state.src, state.pos)
    if m is None or int(m.group(1)) < 1:
        return False
    after = state.src[m.end() : m.end() + 1]
    if after in ("(", "["):  # a Markdown link or reference: the author's own
        return False
    references = state.env.get("references") if isinstance(state.env, dict) else None
    if isinstance(references, dict) and normalizeReference(m.group(0)[1:-1]) in references:
        return False  # `[cell 3]` with a `[cell 3]: url` definition is the author's link
    if not silent:
        token = state.push(_TOKEN, "", 0)
        token.meta = {"cell": int(m.group(1))}
    state.pos = m.end()
    return True


def _render(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: MutableMapping[str, object]
) -> str:
    n = int(tokens[idx].meta["cell"])
    return (
        f'[<a class="{CITE_CLASS}" href="#ipy-agent-cell-{n}" {CITE_ATTRIBUTE}="{n}" '
        f'title="Go to cell {n} of the notebook">cell {n}</a>]'
    )
