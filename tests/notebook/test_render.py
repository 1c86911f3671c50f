"""Notebook rendering: the text and image blocks the model reads for cells and their outputs."""

from __future__ import annotations

import base64
import itertools

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from ipy_agent.notebook.render import MAX_IMAGES, render_cells, render_notebook

# A 1x1 PNG, as nbformat stores image outputs (base64 text).
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

ANSI_TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[2], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]


def sample_notebook() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# Analysis", id="md1"),
        new_code_cell("print('hi')\nimport sys; print('warn', file=sys.stderr)", id="c1", execution_count=1),
        new_code_cell("1/0", id="c2", execution_count=2),
        new_code_cell("plt.plot([1, 2])", id="c3", execution_count=3),
    ]
    nb.cells[1].outputs = [
        new_output("stream", name="stdout", text="hi\n"),
        new_output("stream", name="stderr", text="warn\n"),
    ]
    nb.cells[2].outputs = [
        new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=ANSI_TRACEBACK)
    ]
    nb.cells[3].outputs = [
        new_output("execute_result", data={"text/plain": "[<matplotlib.lines.Line2D at 0x7f>]"}, execution_count=3),
        new_output("display_data", data={"image/png": PNG_B64, "text/plain": "<Figure size 640x480 with 1 Axes>"}),
    ]
    return nbformat.from_dict(nb)


def test_cells_with_text_error_and_image_outputs():
    rendered = render_notebook(sample_notebook())
    assert rendered.cell_count == 4 and rendered.image_count == 1
    assert [b["type"] for b in rendered.blocks] == ["text", "image", "text"]
    text = rendered.blocks[0]["text"]
    assert text.startswith(
        '<cell id="md1" index="0" type="markdown">\n# Analysis\n</cell>\n'
        '<cell id="c1" index="1" type="code" execution_count="1">\n'
        "print('hi')\nimport sys; print('warn', file=sys.stderr)\n"
        "<outputs>\nhi\n[stderr]\nwarn\n</outputs>\n</cell>\n"
    )
    assert (
        '<cell id="c2" index="2" type="code" execution_count="2">\n1/0\n<outputs>\n'
        "ZeroDivisionError: division by zero\nTraceback:\n"
    ) in text
    assert "----> 1 1/0" in text and "\x1b" not in text
    assert text.count("ZeroDivisionError: division by zero") == 1  # the traceback's last line is not repeated
    assert text.endswith("Out[3]: [<matplotlib.lines.Line2D at 0x7f>]\n<Figure size 640x480 with 1 Axes>\n")
    assert rendered.blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    assert rendered.blocks[2] == {"type": "text", "text": "</outputs>\n</cell>\n"}
    assert '"output_type"' not in rendered.text and "cell_type" not in rendered.text


def test_each_cells_outputs_are_budgeted_and_short_ones_survive():
    nb = new_notebook()
    noisy = new_code_cell("train()", id="noisy")
    noisy.outputs = [
        new_output("stream", name="stdout", text="".join(f"epoch {i} loss 0.{i:05d}\n" for i in range(20_000))),
        new_output("error", ename="KeyboardInterrupt", evalue="", traceback=[]),
    ]
    quiet = new_code_cell("2 + 2", id="quiet", execution_count=5)
    quiet.outputs = [new_output("execute_result", data={"text/plain": "4"}, execution_count=5)]
    nb.cells = [noisy, quiet]
    text = render_notebook(nb, output_budget=2_000).text
    noisy_part = text.split('<cell id="quiet"')[0]
    assert "epoch 0 loss" in noisy_part and "epoch 19999 loss" in noisy_part  # head and tail kept
    assert "characters of output cut ...]" in noisy_part and "epoch 10000 loss" not in noisy_part
    assert len(noisy_part) < 2_500
    assert "KeyboardInterrupt\n" in noisy_part  # the short error after the flood is whole
    assert "<outputs>\nOut[5]: 4\n</outputs>" in text


def test_plain_dict_cells_without_ids_as_on_disk():
    cells = [
        {
            "cell_type": "code",
            "source": ["a = 1\n", "a"],
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x\n", "y\n"]}],
            "execution_count": None,
        },
        {"cell_type": "raw", "source": "raw text"},
    ]
    rendered = render_cells(cells, first_index=7, language="julia")
    assert rendered.text == (
        '<cell id="cell-7" index="7" type="code" language="julia">\na = 1\na\n<outputs>\nx\ny\n</outputs>\n</cell>\n'
        '<cell id="cell-8" index="8" type="raw">\nraw text\n</cell>\n'
    )


def test_image_limits_and_outputs_without_text():
    nb = new_notebook()
    many = new_code_cell("show_all()", id="many")
    many.outputs = [new_output("display_data", data={"image/png": PNG_B64}) for _ in range(MAX_IMAGES + 2)]
    big = new_code_cell("show_big()", id="big")
    huge_png = base64.b64encode(base64.b64decode(PNG_B64) + b"\x00" * (4 * 1024 * 1024)).decode()
    big.outputs = [
        new_output("display_data", data={"image/png": huge_png}),
        new_output("display_data", data={"text/html": "<b>table</b>"}),
        new_output("display_data", data={"image/svg+xml": "<svg/>"}),
    ]
    nb.cells = [many, big]
    rendered = render_notebook(nb)
    assert rendered.image_count == MAX_IMAGES
    assert rendered.text.count(f"already holds {MAX_IMAGES} images") == 2
    assert "[image/png output not shown: it is 4.2 MB" in rendered.text
    assert "[text/html output without a text/plain form, not shown]" in rendered.text
    assert "[image/svg+xml output without a text/plain form, not shown]" in rendered.text
    types = [b["type"] for b in rendered.blocks]
    assert all(not (a == b == "text") for a, b in itertools.pairwise(types))  # adjacent text is merged


def test_offset_and_limit_select_cells_and_keep_their_indices():
    rendered = render_notebook(sample_notebook(), offset=2, limit=1)
    assert rendered.cell_count == 1 and rendered.image_count == 0
    assert rendered.text.startswith('<cell id="c2" index="2" type="code"')
    assert 'id="c3"' not in rendered.text
