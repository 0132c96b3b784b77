"""The ``--protocol`` choices of ``rpx eval detection``, one module each (registered on
import by :func:`rpx_cli.tasks.detection.parts.load_parts`): how a benchmark scores
detections."""
