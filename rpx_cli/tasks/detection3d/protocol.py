"""What a ``--protocol`` of ``rpx eval detection3d`` is: a declared part registered by name
(:func:`register_protocol`; ``--protocol``'s choices are the registry's keys), which the task
asks for everything that differs between protocols — nothing compares a protocol's name.

A protocol says which of the task's parameters are its own (:attr:`Protocol.own`: a flag
of another protocol's left at its default; given, it is a usage error, and it is not
recorded in ``params``), resolves and checks them, reads one side of a sample in the form
its summary wants (from a :class:`~rpx_cli.tasks.detection3d.formats.Format`, or from the
box objects of a submission file), and turns every sample's pair into the report's sections
and rows. The protocols: :mod:`rpx_cli.tasks.detection3d.nuscenes` (``nuscenes``,
``autoware``: the conventions table) and :mod:`rpx_cli.tasks.detection3d.kitti`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rpx_cli.params.values import Band, Threshold
from rpx_cli.tasks.base import MetricInfo, Params

PROTOCOLS: dict[str, Protocol] = {}


def register_protocol(cls: type[Protocol]) -> type[Protocol]:
    """Add one instance of ``cls`` to :data:`PROTOCOLS` under its ``name``."""
    PROTOCOLS[cls.name] = cls()
    return cls


class Protocol:
    """A protocol's hooks, each with its default."""

    name: ClassVar[str]
    # the task's parameters only this protocol reads
    own: ClassVar[tuple[str, ...]] = ()
    # the --metrics families it computes; skips_others: the task's other families are
    # recorded as skipped (their keys are absent), else they are not mentioned at all
    families: ClassVar[tuple[str, ...]] = ()
    skips_others: ClassVar[bool] = True

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` (every option present, the others' own already removed) in the form
        the report records them."""
        return params

    def check(self, params: Params) -> None:
        """Refuse resolved params no run can use (:class:`~rpx_cli.errors.ParameterError`)."""

    def read(self, fmt: Any, data: bytes | memoryview, path: str, *, prediction: bool,
             params: Params) -> Any:
        """One file of format ``fmt`` in the form :meth:`summarize` takes."""
        raise NotImplementedError

    def from_objects(self, objects: list[Any], path: str, *, prediction: bool, params: Params,
                     where: str) -> Any:
        """One sample of a submission file (its box objects), as :meth:`read` gives it."""
        raise NotImplementedError

    def check_side(self, boxes: Any, params: Params, path: str, role: str) -> None:
        """Refuse one file's boxes that the run's params cannot measure."""

    def check_sides(self, samples: list[Any], params: Params, path: str, role: str) -> None:
        """Refuse one submission file's boxes (every sample's) likewise."""

    def empty(self) -> Any:
        """The prediction that predicts nothing."""
        raise NotImplementedError

    def summarize(self, pairs: list[Any], params: Params, bands: list[Band],
                  wanted: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``(sections, rows)`` of every sample's pair in stem order."""
        raise NotImplementedError

    def thresholds(self, params: Params) -> list[Threshold]:
        return []

    def operating_threshold(self, params: Params) -> Threshold | None:
        return None

    def metric_info(self, info: Mapping[str, MetricInfo], params: Params,
                    bands: list[Band]) -> dict[str, MetricInfo]:
        """The task's metric directions with this protocol's keys added."""
        return dict(info)


def others_own(protocol: Protocol) -> list[str]:
    """The parameters other protocols own and ``protocol`` does not read."""
    mine = set(protocol.own)
    return sorted({key for other in PROTOCOLS.values() for key in other.own} - mine)
