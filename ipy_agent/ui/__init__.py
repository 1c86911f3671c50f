"""How a run is shown to a person: notebook widgets, terminal text, and approvers.

Nothing is imported here on purpose: `ipywidgets` and `rich` load only when a view is made.
"""
