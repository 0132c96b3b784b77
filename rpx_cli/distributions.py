"""The installed distributions, read from the metadata folders on ``sys.path`` directly:
their versions (for ``run_provenance.environment``) and whether any declares an entry-point
group (plugins). ``importlib.metadata`` costs ~35 ms to import and ~20 ms to query — a tenth
of a short run's time — and is used only where this listing cannot answer."""

from __future__ import annotations

import os
import re
import sys
from functools import cache

_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """A distribution's name as packaging normalises it (PEP 503)."""
    return _SEPARATORS.sub("-", name).lower()


@cache
def metadata_folders() -> tuple[tuple[str, str, str], ...] | None:
    """``(canonical name, version, folder)`` of every ``*.dist-info`` / ``*.egg-info`` on
    ``sys.path``, first one first; None when a folder could not be listed (the caller then
    asks ``importlib.metadata``)."""
    found = []
    for root in sys.path:
        try:
            entries = list(os.scandir(root or "."))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
        for entry in entries:
            stem, _, kind = entry.name.rpartition(".")
            if kind not in ("dist-info", "egg-info") or "-" not in stem:
                continue
            name, _, version = stem.partition("-")
            found.append((canonical(name), version.partition("-")[0], entry.path))
    return tuple(found)


def version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None when not installed)."""
    folders = metadata_folders()
    if folders is not None:
        wanted = canonical(name)
        for found, found_version, _ in folders:
            if found == wanted and found_version:
                return found_version
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def declares_entry_points(group: str) -> bool:
    """Whether any installed distribution's ``entry_points.txt`` names ``group`` (True when
    unsure: the full lookup then decides)."""
    folders = metadata_folders()
    if folders is None:
        return True
    needle = group.encode()
    for _, _, folder in folders:
        try:
            with open(os.path.join(folder, "entry_points.txt"), "rb") as handle:
                if needle in handle.read():
                    return True
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return True
    return False
