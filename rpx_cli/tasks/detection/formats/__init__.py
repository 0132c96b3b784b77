"""The file formats ``rpx eval detection`` reads, one module each (registered on import by
:func:`rpx_cli.tasks.detection.parts.load_parts`): how detections are written on disk."""
