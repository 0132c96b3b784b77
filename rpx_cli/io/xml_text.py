"""XML documents of labelling tools (VOC, CVAT) parsed safely with the standard library:
a document type declaration (and so any entity: billion laughs, external entities) is
refused before parsing, as defusedxml refuses them; a malformed document is the file's
input error naming the line."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from rpx_cli.errors import InputError

_DOCTYPE = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


def parse_xml(data: Any, path: str) -> ET.Element:
    """The root element of the XML ``data`` (bytes or text)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    if _DOCTYPE.search(data):
        raise InputError("an XML document type declaration (DTD or entity) is refused: "
                         "labelling tools write none", path=path)
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else 0
        raise InputError(f"not well-formed XML: {exc}", path=f"{path}:{line}" if line else path) from None


def text_of(element: ET.Element, name: str, path: str, where: str, *, required: bool = True) -> str | None:
    """The text of ``element``'s child ``name`` (stripped)."""
    child = element.find(name)
    if child is None or child.text is None or not child.text.strip():
        if required:
            raise InputError(f"{where}: missing <{name}>", path=path)
        return None
    return child.text.strip()


def number_of(text: str, path: str, where: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: <{name}> is not a number: {text!r}", path=path) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{where}: <{name}> is not a finite number: {text!r}", path=path)
    return value
