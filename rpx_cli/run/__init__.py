"""The workflows, one module each: wire inputs -> engine -> report and stamp provenance.

- :mod:`~rpx_cli.run.evaluate`: two folders with a task (``rpx eval``, ``saliency-mb``,
  ``coherence``) and the Python API :func:`~rpx_cli.run.evaluate.evaluate_dirs`;
- :mod:`~rpx_cli.run.files`: a task's input files instead of folders (COCO files);
- :mod:`~rpx_cli.run.merge`: ``--shard`` parts back into one report;
- :mod:`~rpx_cli.run.stability`, :mod:`~rpx_cli.run.readiness`, :mod:`~rpx_cli.run.compare`;
- :mod:`~rpx_cli.run.assemble`: statistics -> report body (shared by the evaluating ones);
- :mod:`~rpx_cli.run.invocation`: how a run was asked for, and :func:`stamp` (provenance).

No click here: the CLI parses flags, calls one of these and prints what comes back.
"""
