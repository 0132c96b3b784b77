"""``rpx eval TASK``: one subcommand per registered evaluation task.

The subcommands and their task-specific flags are built from the task registry (each
task declares its :class:`rpx_cli.params.Option` list; ``--metrics``, the strata and run
options are declared too: :mod:`rpx_cli.params.workflows`), so a plugin task gets a CLI
too. The registry (and numpy) is imported only when ``rpx eval`` itself runs.
"""

from __future__ import annotations

from typing import Any

import click

from rpx_cli.cli.options import SuggestingGroup, click_option, declared_options, pair_options
from rpx_cli.cli.output import run_pair_command


def build_command(task) -> click.Command:
    """The command of a task, from its declarations: ``rpx eval NAME`` (or the task's own
    command, ``rpx saliency-mb``): its options, input files and folders, ``--metrics`` when
    it has families, ``--manifest`` strata for ``rpx.eval`` tasks, and the shared flags."""
    from rpx_cli.params.option import families_option
    from rpx_cli.params.workflows import STRATA_OPTIONS

    evaluates = task.report_schema == "rpx.eval"
    pred_name, gt_name = task.input_names
    families = families_option(task)

    def callback(**kwargs: Any) -> None:
        ctx = click.get_current_context()
        params = {option.param: kwargs.pop(option.param) for option in task.options}
        if families is not None:
            params["metrics"] = kwargs.pop("metrics")
        files = {option.param: kwargs.pop(option.param) for option in task.file_inputs} or None
        aux = {option.param: kwargs.pop(option.param) for option in task.aux_inputs}
        strata = {option.param: kwargs.pop(option.param) for option in STRATA_OPTIONS} \
            if evaluates else None
        pred_dir, gt_dir = kwargs.pop(pred_name), kwargs.pop(gt_name)
        run_pair_command(ctx, task.name, params, pred_dir=pred_dir, gt_dir=gt_dir, files=files,
                         strata=strata, aux=aux, **kwargs)

    for option in reversed((*task.options, *task.file_inputs, *task.aux_inputs)):
        callback = click_option(option)(callback)
    if families is not None:
        callback = click_option(families)(callback)
    if evaluates:  # --manifest strata (deploy/eval_strata.py)
        callback = declared_options(STRATA_OPTIONS)(callback)
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
