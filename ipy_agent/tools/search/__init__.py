"""The search tools, Glob and Grep, both thin wrappers around ripgrep.

Modules import one way, each only from those above it in this list:
- `ripgrep`: finding and running `rg`, the permission face of a search, deny rules as filters;
- `grep_results`: ripgrep's output regrouped in a stable order, paged, rendered for the model;
- `glob_tool`: `GlobTool`: files by name or path pattern, newest first;
- `grep`: `GrepTool`: file contents, paged and in a stable order.
"""
