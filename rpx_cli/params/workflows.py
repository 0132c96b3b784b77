"""The options of rpx's workflows, declared once like a task's: how a run goes
(:data:`RUN_OPTIONS`: ``--missing``, ``--on-error``, ``--jobs``, ``--shard``, ``--no-rows``,
the digest cache, object storage, ``--executor``/``--scheduler``, ``--keep-state``), its strata
(:data:`STRATA_OPTIONS`: ``--manifest``, ``--primary-metric``, ``--bootstrap``, ``--seed``),
``rpx stability`` (:data:`STABILITY_OPTIONS`), ``rpx compare`` (:data:`COMPARE_OPTIONS`) and
``rpx readiness``'s cost figures (:data:`COST_OPTIONS`).

The click flags, the ``rpx.toml`` keys, the Python API keywords
(:data:`rpx_cli.run.options.RUN_KEYWORDS`) and :class:`rpx_cli.run.options.RunOptions` come
from these :class:`~rpx_cli.params.Option` values, and every value passes
:meth:`Option.convert`: ``evaluate_dirs(..., jobs=0)`` is the CLI's ``--jobs: must be >= 1,
got 0``, a :class:`~rpx_cli.errors.ParameterError`. Only the standard library is imported:
the CLI builds its flags from this module at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.params.option import Option
from rpx_cli.params.parsers import parse_no_regression, shard

MISSING_POLICIES = ("error", "skip", "empty")  # io.discover.pair_dirs: what each means
ON_ERROR_POLICIES = ("fail", "skip")
EXECUTORS = ("local", "dask")
MAX_JOBS = 4096  # worker processes; more than any machine's CPUs


def cache_folder(value: Any) -> str | bool | None:
    """``--digest-cache DIR``: a folder, False (no cache), or None/True (the default folder)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return os.fspath(value)
    raise ValueError(f"expected a folder, or False for no cache, got {value!r}")


def storage_settings(value: Any) -> dict[str, Any]:
    """``--storage-options``: a JSON object's text or a mapping of fsspec keyword arguments."""
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("expected a mapping with text keys")
        return dict(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a JSON object or a mapping, got {type(value).__name__}")
    from rpx_cli.io.remote import parse_options

    try:
        return parse_options(value)
    except ParameterError as exc:
        raise ValueError(str(exc).removeprefix("--storage-options: ")) from None


def no_regression(value: Any) -> str:
    """``METRIC[:TOL]``, kept as the text given (the report's gate names it)."""
    if not isinstance(value, str):
        raise ValueError(f"expected METRIC[:TOL] text, got {value!r}")
    parse_no_regression(value)
    return value


# --- a run (rpx eval, saliency-mb, coherence; evaluate_dirs, run_evaluation, RunOptions) ------

JOBS = Option(
    "jobs", "--jobs", "int", None, minimum=1, maximum=MAX_JOBS, short="-j",
    help="Worker processes [default: as many as the work pays for, up to the CPUs available: "
         "run_provenance.executor says how many and why]. Never changes a number.")
MISSING = Option(
    "missing", "--missing", "choice", None, choices=MISSING_POLICIES,
    help="Unpaired stems: fail, evaluate the stems in both (listing the rest under 'unpaired'), "
         "or score a missing prediction as empty.")
ON_ERROR = Option(
    "on_error", "--on-error", "choice", "fail", choices=ON_ERROR_POLICIES,
    help="A pair that cannot be read: list every such pair and exit 1 without a report, or "
         "record it under 'errors' and go on.")
INCLUDE_ROWS = Option(
    "include_rows", "--no-rows", "flag", True, help="Omit per-pair rows from the report.")
SHARD = Option(
    "shard", "--shard", "parsed", None, parse=shard, metavar="K/N",
    help="Evaluate only shard K of N (stable hash of the stem) and write a partial report for "
         "`rpx merge`.")
DIGEST_CACHE = Option(
    "digest_cache", "--digest-cache", "parsed", None, parse=cache_folder, metavar="DIR",
    help="Where file digests are cached, keyed by inode, size, mtime and ctime [default: "
         "$RPX_DIGEST_CACHE, else ~/.cache/rpx]. Reports are identical with or without it.")
STORAGE_OPTIONS = Option(
    "storage_options", "--storage-options", "parsed", None, parse=storage_settings,
    metavar="JSON",
    help="Options of the object store for s3:// gs:// az:// URLs as a JSON object, e.g. "
         "'{\"endpoint_url\": \"http://127.0.0.1:9000\"}' [default: the store's usual "
         "environment, AWS_* etc.]. Secret values are never written to a report or a message.")
EXECUTOR = Option(
    "executor", "--executor", "choice", "local", choices=EXECUTORS,
    help="Where pairs are evaluated: worker processes here (--jobs), or the workers of a Dask "
         "cluster (rpx[dask]; --scheduler). Never changes a number.")
SCHEDULER = Option(
    "scheduler", "--scheduler", "str", None, metavar="ADDRESS",
    help="The Dask scheduler for --executor dask, e.g. tcp://10.0.0.5:8786 [default: "
         "$DASK_SCHEDULER_ADDRESS].")

KEEP_STATE = Option(
    "keep_state", "--keep-state", "flag", False, args_when_unset=False,
    help="Write every pair's statistics into the report ('statistics'): `rpx compare` of two "
         "such reports then gives pooled figures (dataset.*) a paired bootstrap interval. "
         "Never changes a number.")

RUN_OPTIONS = (MISSING, ON_ERROR, JOBS, INCLUDE_ROWS, SHARD, DIGEST_CACHE, STORAGE_OPTIONS,
               EXECUTOR, SCHEDULER, KEEP_STATE)

# --- strata of a run (--manifest; rpx_cli.run.options.Strata) ----------------------------------

MANIFEST = Option(
    "manifest", "--manifest", "file", None, urls=True, metavar="FILE",
    help="Per-stem phase/difficulty/sequence metadata (JSON or JSON Lines; RPX manifests "
         "accepted): adds 'strata' — the primary metric per difficulty and phase, the weighted "
         "phase score and STR.")
PRIMARY_METRIC = Option(
    "primary_metric", "--primary-metric", "str", None, metavar="NAME",
    help="The metric the strata use [default: the task's, e.g. absrel, miou, f1, mota].")
BOOTSTRAP = Option(
    "bootstrap", "--bootstrap", "int", 0, minimum=0, metavar="N",
    help="Add a 95% interval to every stratum figure from N seeded resamples.")
SEED = Option("seed", "--seed", "int", 0, help="Seed of the --bootstrap resamples.")

STRATA_OPTIONS = (MANIFEST, PRIMARY_METRIC, BOOTSTRAP, SEED)

# --- rpx stability (run_stability_report) ------------------------------------------------------

STABILITY_TASKS = ("depth", "segmentation")
WARPS = ("reproject", "inplane", "none")
WARP_CHOICES = ("auto", *WARPS)
STABILITY_MISSING_POLICIES = ("error", "skip")

STABILITY_TASK = Option(
    "task", "--task", "choice", None, choices=STABILITY_TASKS,
    help="What the predictions are: depth maps or label maps.")
WARP = Option(
    "warp", "--warp", "choice", "auto", choices=WARP_CHOICES,
    help="How frame t+1 is brought into frame t: reproject with depth and poses, the RPX "
         "in-plane rotation, or not at all. auto = reproject when possible, else inplane when "
         "poses exist, else none.")
DEPTH_DIR = Option(
    "depth_dir", "--depth-dir", "dir", None,
    help="GT depth per stem (segmentation): drives the reprojection and the occlusion test.")
DEPTH_SCALE = Option(
    "depth_scale", "--depth-scale", "float", 1000.0, minimum=0.0, open_min=True,
    help="Integer depth (16-bit PNG/PGM/TIFF, integer .npy) is divided by this to get metres: "
         "1000 = millimetres.")
IGNORE_INDEX = Option(
    "ignore_index", "--ignore-index", "int", (-1,), multiple=True,
    help="Segmentation: a label to leave out of both maps (repeatable; PNG users usually pass "
         "255).")
STABILITY_MISSING = Option(
    "missing", "--missing", "choice", "error", choices=STABILITY_MISSING_POLICIES,
    help="A stem in the manifest or the folder only, a frame without a number or GT depth, two "
         "frames with one number: fail, or leave those frames out and list them under "
         "'unpaired' / 'skipped'.")



def stability_task(value: Any) -> str:
    """``--task`` of ``rpx stability``, which has no default: converted by its declaration."""
    task = STABILITY_TASK.convert(value)
    if task is None:
        raise ParameterError(f"--task: expected one of {', '.join(STABILITY_TASKS)}, got None")
    return task


STABILITY_JOBS = replace(JOBS, help="Worker processes [default: CPUs available]. Never changes "
                                    "a number.")

STABILITY_OPTIONS = (STABILITY_TASK, WARP, DEPTH_DIR, DEPTH_SCALE, IGNORE_INDEX,
                     STABILITY_MISSING, STABILITY_JOBS)

# --- rpx compare (run_compare) -------------------------------------------------------------------

NO_REGRESSION = Option(
    "no_regression", "--require-no-regression", "parsed", (), multiple=True, parse=no_regression,
    metavar="METRIC[:TOL]",
    help="Exit 3 if NEW is worse than BASE on METRIC by more than TOL (absolute, or '5%' "
         "relative; default 0). A bare name means aggregate.<name>. Repeatable.")
COMPARE_BOOTSTRAP = Option(
    "bootstrap", "--bootstrap", "int", 1000, minimum=0,
    help="Paired bootstrap resamples over the shared stems (0 = off; needs rows).")
COMPARE_SEED = Option("seed", "--seed", "int", 0, help="Bootstrap seed.")
POOLED_BOOTSTRAP = Option(
    "pooled_bootstrap", "--pooled-bootstrap", "int", 200, minimum=0, metavar="N",
    help="Paired bootstrap resamples of the pooled figures (dataset.*) when both reports carry "
         "their statistics (rpx eval --keep-state); each resample re-summarises both sides, so "
         "it is capped apart from --bootstrap (at most --bootstrap; 0 = off).")
FORCE = Option(
    "force", "--force", "flag", False,
    help="Compare reports of different tasks or parameters (a warning, not an error).")

COMPARE_JOBS = replace(JOBS, args_when_unset=False,
                       help="Worker processes for the pooled figures' resamples [default: CPUs "
                            "available]. Never changes a number.")

COMPARE_OPTIONS = (NO_REGRESSION, COMPARE_BOOTSTRAP, COMPARE_SEED, FORCE, POOLED_BOOTSTRAP,
                   COMPARE_JOBS)

# --- rpx readiness (run_readiness) -----------------------------------------------------------------

COST_OPTIONS = (
    Option("params_m", "--params-m", "float", None, minimum=0.0, help="Parameters, millions."),
    Option("flops_g", "--flops-g", "float", None, minimum=0.0, help="GFLOPs per sample."),
    Option("latency_ms", "--latency-ms", "float", None, minimum=0.0,
           help="Latency per sample, ms."),
    Option("actmem_gb", "--actmem-gb", "float", None, minimum=0.0,
           help="Peak activation memory, GB (fp16)."),
)
MODEL_NAME = Option("model_name", "--model-name", "str", None, metavar="NAME",
                    help="The model's name.")
