"""The memory folder: cards, plan, settings, paths, raw layer, locking.

Import from the submodules: this package file stays empty so that light paths (the hook
spool) do not pay for YAML and schema imports.
"""
