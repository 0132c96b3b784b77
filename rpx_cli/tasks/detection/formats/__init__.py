"""The file formats ``rpx eval detection`` reads, one module each, imported when a run asks
for one (``parts.FORMATS``, which lists them by name): how detections are written on disk."""
