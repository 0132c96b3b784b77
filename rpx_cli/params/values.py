"""Values with structure that options hold and report keys name: a range band
(``--range 0.3:1`` → keys ``absrel_0p3m_1m``) and a match threshold (``--dist-th 0.5`` → key
``AP_0p5m``). Each renders its own key suffix and its own label here, once; nothing ever
parses a key back into a value."""

from __future__ import annotations

import math
from typing import Any, NamedTuple


def _token(value: float) -> str:
    """autoware-ml's number token: ``0.3`` → ``0p3``, ``-1`` → ``minus1``, ``1e+20`` →
    ``1e+20``."""
    return f"{value:g}".replace("-", "minus").replace(".", "p")


def _number_text(value: float) -> str:
    return f"{value:g}"


class Band(NamedTuple):
    """``[low, high)`` metres (``high`` None: open-ended): a depth band of ``rpx eval depth``,
    a distance range of ``detection3d`` and ``segmentation3d``."""

    low: float
    high: float | None = None

    @classmethod
    def parse(cls, text: str) -> Band:
        """``A:B`` (min inclusive, max exclusive, metres) or ``A:`` (open-ended); a bad text
        raises ``ValueError`` with the reason."""
        low_text, sep, high_text = text.partition(":")
        if not sep or not low_text.strip():
            raise ValueError(f"expected A:B or A: (metres), got {text!r}")
        try:
            low = float(low_text)
            high = float(high_text) if high_text.strip() else None
        except ValueError:
            raise ValueError(f"expected numbers in A:B, got {text!r}") from None
        return cls.checked(low, high, text)

    @classmethod
    def checked(cls, low: float, high: float | None, text: str | None = None) -> Band:
        shown = text if text is not None else f"{low}:{'' if high is None else high}"
        if not math.isfinite(low) or (high is not None and not math.isfinite(high)):
            raise ValueError(f"band limits must be finite, got {shown!r} (use A: for open-ended)")
        if high is not None and not low < high:
            raise ValueError(f"band {shown!r} is empty: A must be below B")
        return cls(float(low), None if high is None else float(high))

    @classmethod
    def of(cls, value: Any) -> Band:
        """A band from any form an option or a report holds: a :class:`Band`, ``"A:B"``, or
        ``[low, high]`` (``high`` None: open-ended), as ``params`` records it."""
        if isinstance(value, Band):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, (list, tuple)) and len(value) == 2:
            low, high = value
            if _is_number(low) and (high is None or _is_number(high)):
                return cls.checked(float(low), None if high is None else float(high))
        raise ValueError(f"expected A:B, A:, or [low, high], got {value!r}")

    @property
    def suffix(self) -> str:
        """The key suffix (autoware-ml's style): ``0p3m_1m``, ``2p5m_inf``, ``minus1m_0m``."""
        high = "inf" if self.high is None else f"{_token(self.high)}m"
        return f"{_token(self.low)}m_{high}"

    def key(self, name: str) -> str:
        """``name`` with this band's suffix: ``absrel_0p3m_1m``."""
        return f"{name}_{self.suffix}"

    @property
    def label(self) -> str:
        """For people (pages, metric descriptions): ``[20, 50) m``, ``[50, inf) m``."""
        high = "inf" if self.high is None else _number_text(self.high)
        return f"[{_number_text(self.low)}, {high}) m"

    def as_param(self) -> list[float | None]:
        """The JSON form ``params`` records: ``[low, high]``."""
        return [self.low, self.high]


def banded(name: str, band: Band | None) -> str:
    """``name`` for the whole (``band`` None), else ``band.key(name)``."""
    return name if band is None else band.key(name)


class Threshold(NamedTuple):
    """A match threshold of ``detection3d``: a centre distance in metres (``unit="m"``) or an
    IoU (``unit="iou"``)."""

    value: float
    unit: str = "m"

    @property
    def token(self) -> str:
        """The key token: ``0p5m`` for 0.5 m (autoware-ml's), ``iou0p7`` for an IoU of 0.7."""
        return f"{_token(self.value)}m" if self.unit == "m" else f"iou{_token(self.value)}"

    def key(self, name: str) -> str:
        """``name`` at this threshold: ``AP_0p5m``, ``AP_iou0p7``."""
        return f"{name}_{self.token}"

    @property
    def label(self) -> str:
        return f"{_number_text(self.value)} m" if self.unit == "m" else f"IoU {_number_text(self.value)}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
