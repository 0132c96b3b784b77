"""The ``--protocol`` choices of ``rpx eval detection``, one module each, imported when a run
asks for one (``parts.PROTOCOLS``, which lists them by name): how a benchmark scores
detections."""
