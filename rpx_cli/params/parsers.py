"""Parsers of option values, shared by every task that has such an option. Each takes the
text of a flag (or a ``rpx.toml`` value) or the Python value an API caller passes, and
returns the typed value or raises ``ValueError`` with the reason (the :class:`Option` adds
the flag's name)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rpx_cli.params.values import Band


def number(value: Any) -> float:
    """A real number from text or a Python number (never a bool); NaN is refused."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    elif isinstance(value, (int, float)) or hasattr(value, "__float__"):
        try:
            result = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"expected a number, got {value!r}") from None
    else:
        raise ValueError(f"expected a number, got {value!r}")
    if math.isnan(result):
        raise ValueError(f"expected a number, got {value!r}")
    return result


def integer(value: Any) -> int:
    """An integer from text or a Python integer (a float with no fraction too; never a bool)."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"expected an integer, got {value!r}") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if hasattr(value, "__index__"):  # numpy integers
        return int(value.__index__())
    raise ValueError(f"expected an integer, got {value!r}")


def _shown(value: Any) -> str:
    return value.strip() if isinstance(value, str) else f"{value!r}"


def probability(name: str) -> Callable[[Any], float]:
    """The parser of a value in [0, 1] (``name`` in its message)."""
    def parse(value: Any) -> float:
        result = number(value)
        if not 0.0 <= result <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {_shown(value)}")
        return result
    return parse


def positive(name: str) -> Callable[[Any], float]:
    """The parser of a positive, finite number (``name`` in its message)."""
    def parse(value: Any) -> float:
        result = number(value)
        if not (math.isfinite(result) and result > 0):
            raise ValueError(f"{name} must be a positive number, got {_shown(value)}")
        return result
    return parse


def iou_threshold(value: Any) -> float:
    """An IoU threshold in (0, 1]."""
    result = number(value)
    if not 0 < result <= 1:
        raise ValueError(f"IoU threshold must be in (0, 1], got {_shown(value)}")
    return result


def parse_band(value: Any) -> Band:
    """``A:B`` or ``A:`` metres (a :class:`Band`; ``[low, high]`` from Python)."""
    return Band.of(value)


def name_and_number(what: str, parse_number: Callable[[Any], float]) -> Callable[[Any], tuple[str, float]]:
    """``NAME=NUMBER`` (a pair ``(name, number)`` from Python), e.g. ``car=50``."""
    def parse(value: Any) -> tuple[str, float]:
        if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
            name, amount = value
        elif isinstance(value, str):
            name, sep, amount = value.rpartition("=")
            if not sep or not name:
                raise ValueError(f"expected NAME={what}, got {value!r}")
        else:
            raise ValueError(f"expected NAME={what}, got {value!r}")
        if not name:
            raise ValueError(f"expected NAME={what}, got {value!r}")
        return name, parse_number(amount)
    return parse


def sigmas(value: Any) -> list[float]:
    """Keypoint sigmas (``--oks-sigmas``): a comma list ``0.26,0.25,...``, a file holding
    such a list or a JSON list, or a Python sequence; each a finite number > 0."""
    items: Any = value
    if isinstance(value, str):
        text = value.strip()
        if text and not _numeric_list(text):
            import os

            if not os.path.isfile(text):
                raise ValueError(f"expected a comma list of numbers > 0 or a file, got {_shown(value)}")
            with open(text, encoding="utf-8") as handle:
                text = handle.read().strip()
            if text.startswith("["):
                text = text.strip("[] \n")
        items = [part for part in text.replace("\n", ",").split(",") if part.strip()]
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ValueError(f"expected a list of numbers > 0, got {_shown(value)}")
    out = []
    for item in items:
        result = number(item)
        if not math.isfinite(result) or result <= 0:
            raise ValueError(f"sigmas must be finite numbers > 0, got {_shown(item)}")
        out.append(result)
    if not out:
        raise ValueError("expected at least one sigma")
    return out


def _numeric_list(text: str) -> bool:
    try:
        [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        return False
    return True


def parse_kpt_shape(value: Any) -> tuple[int, int]:
    """``--kpt-shape K,2`` or ``K,3``."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    try:
        k, d = (int(v) for v in parts)
    except (TypeError, ValueError):
        raise ValueError(f"expected K,2 or K,3, got {value!r}") from None
    if k < 1 or d not in (2, 3):
        raise ValueError(f"expected K,2 or K,3 with K >= 1, got {value!r}")
    return k, d


def parse_image_size(value: Any) -> tuple[int, int]:
    """``--image-size W,H`` (pixels, each >= 1)."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    try:
        w, h = (int(v) for v in parts)
    except (TypeError, ValueError):
        raise ValueError(f"expected W,H in pixels, got {value!r}") from None
    if w < 1 or h < 1:
        raise ValueError(f"expected W,H >= 1, got {value!r}")
    return w, h
