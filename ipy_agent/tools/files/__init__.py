"""The file tools: Read, Edit and Write.

Modules import one way, each only from those above it in this list:
- `read_text`: a range of lines from a text file of any size, in flat memory;
- `read`: `ReadTool`: a file as numbered lines, an image as an image block, a notebook as cells
  (in pages of cells);
- `edit`: `EditTool`: replace exact text in a file;
- `write`: `WriteTool`: create a file or replace its whole content.
"""
