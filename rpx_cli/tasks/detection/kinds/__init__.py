"""The similarity kinds of ``rpx eval detection``, one module each (registered on import by
:func:`rpx_cli.tasks.detection.parts.load_parts`): what an object is, and how two are
compared."""
