"""``rpx eval TASK``: one subcommand per registered evaluation task.

The subcommands and their task-specific flags are built from the task registry (each
task declares its :class:`rpx_cli.tasks.base.Option` list), so a plugin task gets a CLI
too. The registry (and numpy) is imported only when ``rpx eval`` itself runs.
"""

from __future__ import annotations

from typing import Any

import click

from rpx_cli.cli.options import InputFileType, SuggestingGroup, int_range, pair_options
from rpx_cli.cli.output import run_pair_command


class OptionType(click.ParamType):
    """The click type of a task's :class:`~rpx_cli.params.Option`: click hands every value (a
    flag's text, a ``rpx.toml`` value, a default) to :meth:`Option.convert_one`, the very
    check the Python API runs, so a bad value gets the same message on every path (a usage
    error, exit 2)."""

    _METAVARS = {"int": "INTEGER", "float": "FLOAT", "file": "FILE", "dir": "DIR", "str": "TEXT"}

    def __init__(self, option: Any) -> None:
        self.option = option
        self.name = option.kind

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:  # type: ignore[override]
        option = self.option
        if option.metavar:
            return option.metavar
        if option.choices:
            return "[" + "|".join(option.choices) + "]"
        return self._METAVARS.get(option.kind, "VALUE")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from rpx_cli.errors import ParameterError

        try:
            return self.option.convert_one(value)
        except ParameterError as exc:
            raise click.UsageError(str(exc), ctx=ctx) from None

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str):
        from click.shell_completion import CompletionItem

        option = self.option
        if option.choices:
            return [CompletionItem(choice) for choice in option.choices if choice.startswith(incomplete)]
        if option.kind in ("file", "dir"):
            return [CompletionItem(incomplete, type=option.kind)]
        return []


def click_option(option: Any) -> Any:
    """The click option of a task's :class:`~rpx_cli.params.Option`."""
    if option.kind == "flag":  # a value only from rpx.toml: checked by the option too
        return click.option(option.flag, option.param, is_flag=True, type=OptionType(option),
                            default=bool(option.default), help=option.help)
    return click.option(option.flag, option.param, type=OptionType(option), default=option.default,
                        help=option.help, multiple=option.multiple,
                        show_default=option.default not in (None, ()))


def strata_options(func: Any) -> Any:
    """``--manifest`` and the options of the strata it adds (``deploy/strata.py``)."""
    options = [
        click.option("--manifest", type=InputFileType(), default=None,
                     metavar="FILE",
                     help="Per-stem phase/difficulty/sequence metadata (JSON or JSON Lines; RPX "
                          "manifests accepted): adds 'strata' — the primary metric per "
                          "difficulty and phase, the weighted phase score and STR."),
        click.option("--primary-metric", default=None, metavar="NAME",
                     help="The metric the strata use [default: the task's, e.g. absrel, miou, "
                          "f1, mota]."),
        click.option("--bootstrap", type=int_range(0), default=0, show_default=True,
                     metavar="N",
                     help="Add a 95% interval to every stratum figure from N seeded resamples."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the --bootstrap resamples."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


STRATA_KEYS = ("manifest", "primary_metric", "bootstrap", "seed")


def build_command(task) -> click.Command:
    """The command of a task, from its declarations: ``rpx eval NAME`` (or the task's own
    command, ``rpx saliency-mb``): its options, input files and folders, ``--metrics`` when
    it has families, ``--manifest`` strata for ``rpx.eval`` tasks, and the shared flags."""
    evaluates = task.report_schema == "rpx.eval"
    pred_name, gt_name = task.input_names

    def callback(**kwargs: Any) -> None:
        ctx = click.get_current_context()
        params = {option.param: kwargs.pop(option.param) for option in task.options}
        if task.families:
            params["metrics"] = kwargs.pop("metrics")
        files = {option.param: kwargs.pop(option.param) for option in task.file_inputs} or None
        aux = {option.param: kwargs.pop(option.param) for option in task.aux_inputs}
        strata = {key: kwargs.pop(key) for key in STRATA_KEYS} if evaluates else None
        pred_dir, gt_dir = kwargs.pop(pred_name), kwargs.pop(gt_name)
        run_pair_command(ctx, task.name, params, pred_dir=pred_dir, gt_dir=gt_dir, files=files,
                         strata=strata, aux=aux, **kwargs)

    for option in reversed((*task.options, *task.file_inputs, *task.aux_inputs)):
        callback = click_option(option)(callback)
    if task.families:
        names = ",".join(task.families)
        callback = click.option(
            "--metrics", "metrics", default=None, metavar="NAME,...",
            help=f"Run only these metric families ({names}) [default: all]; the others are "
                 "left out of the report and named in params.skipped_metrics.")(callback)
    if evaluates:
        callback = strata_options(callback)
    callback = pair_options(default_missing=task.default_missing,
                            dirs_required=not task.file_inputs or task.files_list_pairs,
                            inputs=tuple(zip(task.input_names, task.input_help, strict=True)),
                            files_ok=task.inputs_may_be_files)(callback)
    return click.command(task.command[-1], help=help_text(task))(callback)


def help_text(task) -> str:
    """``--help`` of ``rpx eval TASK``: the task's help, its input formats, its examples
    (both kept as written: click's ``\\b`` paragraphs)."""
    sections = [task.help or (task.__doc__ or "").strip(), *([task.details] if task.details else [])]
    for title, text in (("Input formats", task.formats), ("Examples", task.example)):
        lines = [line for line in text.strip("\n").splitlines() if line.strip()]
        if lines:
            sections.append("\b\n" + f"{title}:\n" + "\n".join(f"  {line}" for line in lines))
    return "\n\n".join(sections)


class EvalGroup(SuggestingGroup):
    """Subcommands come from the task registry, loaded on first use."""

    noun = "task"

    def suggest(self, ctx: click.Context, name: str) -> str:
        from rpx_cli.tasks import TASKS

        own = TASKS.get(name)
        if own is not None:  # saliency-mb, coherence: a task with a command of its own
            return f"{name} is a command of its own: rpx {' '.join(own.command)} --help"
        return super().suggest(ctx, name)

    def _tasks(self) -> dict[str, Any]:
        from rpx_cli.tasks import TASKS

        return {name: task for name, task in TASKS.items() if task.report_schema == "rpx.eval"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._tasks())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from rpx_cli.tasks.registry import find_task

        task = find_task(name)  # imports that task's module only
        if task is None or task.report_schema != "rpx.eval":
            return None
        return build_command(task)


@click.group("eval", cls=EvalGroup)
def eval_group() -> None:
    """Evaluate a folder of predictions against ground truth for one task.

    Each task has its own flags (rpx eval TASK --help); the pairing, output and error
    flags are shared by all.

    \b
    Example:
      rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt -o report.json
      jq .aggregate.absrel report.json
    """
