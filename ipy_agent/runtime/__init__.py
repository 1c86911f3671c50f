"""The tool runtime: contract, registry, permissions, hooks, lifecycle, executor, budgets.

Plain Python: nothing here imports IPython or ipywidgets, so it is tested without a kernel.
"""
