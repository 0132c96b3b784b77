"""One declaration per option: :class:`Option` says what a parameter is (its flag, type,
choices, bounds, default, help and parser), and :meth:`Option.convert` is the one place any
value of it is checked — the text of a flag or a ``rpx.toml`` key (click calls it while
parsing) or the Python value of an API keyword (:func:`resolve` for a task's options,
:func:`convert_all` for a workflow's: ``--jobs``, ``--shard``, ``--bootstrap``, stability's
``--warp``). The messages are the same on every path: ``--box-format: 'cxcywh' is not one
of xyxy, xywh``."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from rpx_cli.errors import ParameterError
from rpx_cli.params.parsers import integer, number
from rpx_cli.params.values import Band, Threshold

if TYPE_CHECKING:
    from rpx_cli.tasks.base import Task

KINDS = ("flag", "int", "float", "str", "choice", "file", "dir", "parsed")
INT64_MAX = 2**63 - 1
_TRUE = ("true", "1", "yes", "y", "on", "t")
_FALSE = ("false", "0", "no", "n", "off", "f")


@dataclass(frozen=True)
class Option:
    """A task parameter, declared once; the CLI flag, the Python API keyword, the
    ``Evaluator`` argument, the ``rpx.toml`` key and ``default_params`` come from it.

    ``kind``: ``flag`` (a bool), ``int``, ``float`` (finite), ``str``, ``choice`` (one of
    ``choices``), ``file`` (an existing file; a URL too when ``urls``), ``dir`` (a folder;
    ``suffixes`` are the files read from it), or ``parsed`` (``parse`` takes the text of a
    flag or a Python value and returns the value, raising ``ValueError`` with the reason).
    ``multiple`` options repeat (a tuple). ``minimum``/``maximum`` (``open_min``/``open_max``
    for strict bounds) bound numbers. ``changes_numbers``: False for an option that changes
    what a report shows and never a number (``rpx compare`` ignores it). ``short``: a
    one-letter flag too (``-j``). A ``flag``
    whose default is True is switched off by its flag (``--no-rows`` sets ``include_rows``
    False; :attr:`switches_off`).
    """

    param: str
    flag: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    multiple: bool = False
    minimum: float | None = None
    open_min: bool = False
    maximum: float | None = None
    open_max: bool = False
    parse: Callable[[Any], Any] | None = None
    metavar: str | None = None
    suffixes: tuple[str, ...] = ()
    urls: bool = False  # a "file" may be a URL (s3://...): read later through fsspec
    unique: bool = False  # a repeatable option whose values must differ (--range 0:2 twice)
    short: str | None = None  # a one-letter flag besides the long one: "-j"
    # False: an option added after the task's reports were frozen, left out of
    # run_provenance.args when not given (its value None, or False for a flag), so older
    # reports stay byte-identical
    args_when_unset: bool = True
    # False: the option changes what a report shows, never a number (--keep-worst,
    # --images-dir): two reports that differ only in such options compare without --force
    changes_numbers: bool = True
    # the JSON Schema of the value ``params`` records, when the kind does not say it (the
    # task's normalisation records it in another form: a names file as its list of names);
    # a ``parsed`` option's parser may declare it instead (parsers.recorded)
    recorded: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.param}: kind must be one of {', '.join(KINDS)}")
        if (self.kind == "parsed") != (self.parse is not None):
            raise ValueError(f"option {self.param}: kind 'parsed' and parse= go together")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"option {self.param}: kind 'choice' and choices= go together")

    # --- checking a value ----------------------------------------------------------------

    def convert(self, value: Any) -> Any:
        """The option's value from any form a user gives it (a flag's text, a TOML value, a
        Python value): typed and checked, a tuple for a ``multiple`` option. Converting a
        converted value gives it back. Raises :class:`ParameterError` naming the flag."""
        if not self.multiple:
            return self.convert_one(value)
        values = tuple(self.convert_one(item) for item in _items(value))
        if self.unique:  # a band by its key suffix: two bands must not share their keys
            seen: dict[Any, Any] = {}
            for item in values:
                key = item.suffix if isinstance(item, Band) else item
                if key in seen:
                    shown = _band_text(item) if isinstance(item, Band) else repr(item)
                    twice = "is given twice" if seen[key] == item else \
                        f"and {_band_text(seen[key])} give the same keys (_{key})"
                    raise ParameterError(f"{self.flag}: {shown} {twice}")
                seen[key] = item
        return values

    def convert_one(self, value: Any) -> Any:
        """One value (one occurrence of a repeatable flag)."""
        if value is None and (self.default is None or self.multiple):
            return None if not self.multiple else ()
        try:
            return self._convert(value)
        except ValueError as exc:
            raise ParameterError(f"{self.flag}: {exc}") from None

    def _convert(self, value: Any) -> Any:
        kind = self.kind
        if kind == "flag":
            return _flag(value)
        if kind == "int":
            return self._bounded(integer(value), value)
        if kind == "float":
            result = number(value)
            if not math.isfinite(result):
                raise ValueError(f"must be a finite number, got {_shown(value)}")
            return self._bounded(result, value)
        if kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ValueError(f"{_shown(value)} is not one of {', '.join(self.choices)}")
            return value
        if kind == "str":
            if isinstance(value, os.PathLike):
                return os.fspath(value)
            if not isinstance(value, str):
                raise ValueError(f"expected text, got {value!r}")
            return value
        if kind == "file":
            return self._file(value)
        if kind == "dir":
            path = _path(value)
            if os.path.isfile(path):
                raise ValueError(f"{path} is a file, not a folder")
            return path
        assert self.parse is not None
        return self.parse(value)

    def _bounded(self, result: float, given: Any) -> Any:
        low, high = self.minimum, self.maximum
        if low is not None and (result < low or (self.open_min and result == low)):
            raise ValueError(f"must be {'>' if self.open_min else '>='} {low:g}, got {_shown(given)}")
        if high is not None and (result > high or (self.open_max and result == high)):
            raise ValueError(f"must be {'<' if self.open_max else '<='} {high:g}, got {_shown(given)}")
        if self.kind == "int" and abs(result) > INT64_MAX:
            raise ValueError(f"must be within ±{INT64_MAX}, got {_shown(given)}")
        return result

    def _file(self, value: Any) -> str:
        path = _path(value)
        if self.urls and "://" in path:
            from rpx_cli.io.remote import is_url, scheme_problem

            if is_url(path):
                problem = scheme_problem(path)
                if problem is not None:
                    raise ValueError(problem)
                return path
        if not os.path.exists(path):
            raise ValueError(f"{path}: no such file")
        if os.path.isdir(path):
            raise ValueError(f"{path} is a folder, not a file")
        return path

    # --- how it is shown ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The long flag without its dashes: the ``rpx.toml`` key (``depth-scale``)."""
        return self.flag.lstrip("-")

    @property
    def switches_off(self) -> bool:
        """A flag whose value is True unless its flag is given (``--no-rows``)."""
        return self.kind == "flag" and self.default is True


def _items(value: Any) -> tuple[Any, ...]:
    """The occurrences of a repeatable option: a text, a number or a structured value is
    one; a mapping gives its items (``{"car": 50}`` for ``--class-range car=50``)."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, os.PathLike, Band, Threshold)):
        return (value,)
    if isinstance(value, Mapping):
        return tuple(value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(value)
    return (value,)


def _band_text(band: Band) -> str:
    def text(value: float) -> str:
        short = f"{value:g}"
        return short if float(short) == value else repr(value)

    return f"{text(band.low)}:{'' if band.high is None else text(band.high)}"


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError(f"expected true or false, got {value!r}")


def _path(value: Any) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a path, got {value!r}")
    return value


def _shown(value: Any) -> str:
    return repr(value.strip()) if isinstance(value, str) else repr(value)


def jsonable(value: Any) -> Any:
    """``value`` as ``params`` records it: tuples (a :class:`Band` too) as lists, mappings
    with their values converted."""
    if isinstance(value, Band):
        return value.as_param()
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, Mapping):
        return {key: jsonable(item) for key, item in value.items()}
    return value


def unknown_names(given: Mapping[str, Any], known: list[str], what: str) -> None:
    """Refuse keywords no option has, with the closest names."""
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    raise ParameterError(f"unknown option(s) for {what}: {', '.join(hints)} "
                         f"(known: {', '.join(sorted(known))})")


def convert_all(options: tuple[Option, ...], given: Mapping[str, Any], what: str) -> dict[str, Any]:
    """The values given by name (an API caller's keywords), each converted by its
    :class:`Option`; a name no option has is refused with the closest names (``what``
    names the workflow in that message). Options not given are left out."""
    declared = {option.param: option for option in options}
    unknown_names(given, list(declared), what)
    return {param: declared[param].convert(value) for param, value in given.items()}


def resolve(task: Task, given: Mapping[str, Any]) -> dict[str, Any]:
    """The task's parameters from the values given by name (an API caller's keywords, the
    CLI's parsed flags), every one converted by its :class:`Option` and the rest at their
    defaults; then the task's own normalisation (values that depend on each other, e.g. a
    protocol's conventions) and checks. The result is what the report's ``params`` records
    (JSON types). Raises :class:`ParameterError`."""
    options = {option.param: option for option in (*task.options, *task.aux_inputs)}
    given = dict(given)
    chosen = given.pop("metrics", None)
    unknown_names(given, list(options), task.name)
    values = {param: option.convert(given[param]) if param in given else option.default
              for param, option in options.items()}
    values.update(select_families(task, chosen, values))
    from rpx_cli.params.pictures import settle

    settle(values)
    resolved = jsonable(task.normalise_params(values))
    task.validate_params(resolved)
    return resolved


def families_option(task: Task) -> Option | None:
    """``--metrics``: the metric families of ``task`` to run, declared like every option
    (None for a task without families). The value is kept as given (``"rows,pooled"`` or a
    list of names), checked against the task's families; :func:`select_families` orders it."""
    if not task.families:
        return None
    names = ",".join(task.families)
    return Option("metrics", "--metrics", "parsed", None, parse=partial(_family_names, task),
                  metavar="NAME,...",
                  help=f"Run only these metric families ({names}) [default: all]; the others are "
                       "left out of the report and named in params.skipped_metrics.")


def _family_names(task: Task, value: Any) -> Any:
    """``value`` when it names families of ``task`` (a comma list, or a list of names)."""
    if isinstance(value, str):
        chosen = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(name, str) for name in value):
        chosen = list(value)
    else:
        raise ValueError(f"expected family names, got {value!r}")
    unknown = [name for name in chosen if name not in task.families]
    if unknown or not chosen:
        raise ValueError(f"unknown metric famil{'ies' if len(unknown) > 1 else 'y'} "
                         f"{', '.join(unknown) or '(none given)'} for {task.name} "
                         f"(known: {', '.join(task.families)})")
    return value


def select_families(task: Task, chosen: Any, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``--metrics``: the families to run (``"rows,pooled"`` or a list, checked by
    :func:`families_option`; default those the task runs by default under the options
    ``values``) as ``metrics``, and the others it could run as ``skipped_metrics``
    (:meth:`Task.family_choice`: detection's protocol decides)."""
    option = families_option(task)
    if option is None:
        if chosen:
            raise ParameterError(f"{task.name} has no metric families to choose from")
        return {}
    names, default = task.family_choice(values or {})
    names = list(names)
    chosen = option.convert(chosen)
    if chosen is None:
        chosen = list(default)
    elif isinstance(chosen, str):
        chosen = [part.strip() for part in chosen.split(",") if part.strip()]
    unknown = [name for name in chosen if name not in names]
    if unknown:  # a family of the task that these options do not run (a protocol's view)
        raise ParameterError(f"--metrics: unknown metric famil{'ies' if len(unknown) > 1 else 'y'} "
                             f"{', '.join(unknown)} for {task.name} with these options "
                             f"(known: {', '.join(names)})")
    return {"metrics": [n for n in names if n in chosen],
            "skipped_metrics": [n for n in names if n not in chosen]}
