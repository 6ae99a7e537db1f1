"""Dream: the offline pass that turns many raw events into few cards that are correct, current and
traceable. Stages are modules with one signature (``run(ctx)``), pure over the in-memory
:class:`~memdream.dream.model.DreamContext`; only :mod:`memdream.dream.pipeline` writes.
"""
