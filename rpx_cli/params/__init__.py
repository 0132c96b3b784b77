"""A task's parameters, declared once: :class:`Option` (name, type, choices, bounds,
default, help, parser) and the typed values some options hold (:class:`Band`,
:class:`Threshold`).

Every entry point converts a value through the same :meth:`Option.convert`: the CLI flag
(click calls it while parsing), ``rpx.toml`` (its values reach the same click types), the
Python API (``evaluate_dirs(task, ..., **options)``) and the in-process ``Evaluator`` (both
through :func:`resolve`). A bad value is a :class:`rpx_cli.errors.ParameterError` whose
message is the same on every path (``--box-format: 'cxcywh' is not one of xyxy, xywh``).
"""

from rpx_cli.params.option import Option, resolve
from rpx_cli.params.values import Band, Threshold, banded

__all__ = ["Band", "Option", "Threshold", "banded", "resolve"]
