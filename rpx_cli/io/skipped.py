"""Objects a reader leaves out because the run cannot express them (a LabelMe circle, a
CVAT ``points`` shape, an Open Images group-of box under a protocol without group-of):
counted, not errors. A reader notes them through the warning channel every reader has
(``warn(skip_note(role, what, count), path)``); the run sums the notes per input and kind
(:func:`skipped_counts`) into ``run_provenance.inputs.<input>.skipped`` and says so in one
stderr line per kind (docs/formats.md)."""

from __future__ import annotations

from collections.abc import Mapping

_SKIP = "skipped\x1f"  # the prefix of a skip note (see skip_note)


def skip_note(role: str, what: str, count: int) -> str:
    """The warning kind a reader notes (``warn(skip_note(...), path)``) for ``count``
    objects of kind ``what`` (``"labelme_circle"``) that the file on side ``role``
    (``"pred"``, ``"gt"``) held and the run cannot express: they are left out, and the run
    counts them per input and kind in ``run_provenance.inputs.<input>.skipped`` (docs/formats.md)
    with one stderr line per kind, instead of a per-file warning."""
    return f"{_SKIP}{role}\x1f{what}\x1f{count}"


def skipped_counts(warnings: Mapping[str, list[str]]
                   ) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """A run's warnings (kind -> paths) split into the counts of its skip notes (role ->
    kind of object -> how many) and the other warnings."""
    counts: dict[str, dict[str, int]] = {}
    rest: dict[str, list[str]] = {}
    for kind, paths in warnings.items():
        if not kind.startswith(_SKIP):
            rest[kind] = paths
            continue
        role, what, count = kind[len(_SKIP):].split("\x1f")
        side = counts.setdefault(role, {})
        side[what] = side.get(what, 0) + int(count) * len(paths)
    return counts, rest
