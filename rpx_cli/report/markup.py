"""Text and numbers as the HTML page writes them: escaped for HTML (:func:`esc`; a whole
report once, as the page starts: :func:`escaped_document`), a number for a ``data-*``
attribute (full precision, so a test or a user's script can read it back and compare it with
the JSON report: :func:`datum`) and a number as people read it (:func:`short`).

Pure Python: rendering a report never imports numpy.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

# an ampersand that does not already start one of the entities html.escape writes
_BARE_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot|#x27);)")


def esc(text: Any) -> str:
    """``text`` escaped for HTML text and quoted attributes, idempotently: text that is
    escaped already (every string of a report is, once, as the page starts:
    :func:`escaped_document`) is returned as it is, so escaping it again never shows
    ``&amp;amp;``."""
    return (_BARE_AMPERSAND.sub("&amp;", str(text)).replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))


def escaped_document(value: Any) -> Any:
    """A JSON document with every string — values and keys, at any depth — HTML-escaped
    (``html.escape``, quotes included). The one place where what a report holds becomes
    safe to write into the page: whatever markup is built from it afterwards, with
    :func:`esc` or without, carries no tag and cannot leave an attribute (issue 31.1)."""
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, dict):
        return {html.escape(str(key), quote=True): escaped_document(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped_document(item) for item in value]
    return value


def datum(value: Any) -> str:
    """A number for a ``data-*`` attribute: shortest round-trip form, ``null`` for None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    return str(value)


def data_list(values: Sequence[Any]) -> str:
    """A list of numbers for a ``data-*`` attribute: ``[1,0.5,null]``."""
    return "[" + ",".join(datum(v) for v in values) + "]"


def short(value: Any, digits: int = 3) -> str:
    """A number as people read it on a chart."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) < 1e-3:
        return f"{value:.2e}"
    return f"{value:.{digits}g}"
