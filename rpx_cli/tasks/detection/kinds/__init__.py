"""The similarity kinds of ``rpx eval detection``, one module each, imported when a run asks
for one (``parts.KINDS``, which lists them by name): what an object is, and how two are
compared."""
