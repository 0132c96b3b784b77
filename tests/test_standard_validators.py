"""The JSON Schemas work in standard validators: check-jsonschema (which resolves nothing
outside the schema file) validates a report of every kind against ``rpx schema KIND`` and
against the committed ``schemas/*.json``; a report missing a key the envelope always has
fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, ROOT, command_of, golden_cases

from rpx_cli.report import schema_catalogue
from rpx_cli.report.schemas import schema_kinds

check_jsonschema = pytest.importorskip("check_jsonschema.cli.main_command")

KITCHEN = FIXTURES / "stability" / "kitchen"


def check(schema: Path, *instances: Path) -> tuple[int, str]:
    """``check-jsonschema --schemafile SCHEMA INSTANCE...`` (its own CLI, in-process)."""
    result = CliRunner().invoke(check_jsonschema.main,
                                ["--schemafile", str(schema), *map(str, instances)])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, list[Path]]:
    """Report kind -> files: every golden case, a --shard part and its merge, a manifest,
    strata, stability, readiness, compare, and the provenance of a report."""
    from conftest import with_one_job

    from rpx_cli.cli.main import cli

    out = tmp_path_factory.mktemp("reports")
    kinds: dict[str, list[Path]] = {}

    def run(argv: list[str], path: Path, cwd: Path = ROOT) -> Path:
        here = os.getcwd()
        os.chdir(cwd)
        try:
            result = CliRunner().invoke(cli, with_one_job([*map(str, argv), "-o", str(path)]),
                                        catch_exceptions=False)
        finally:
            os.chdir(here)
        assert result.exit_code == 0, result.output
        kind = json.loads(path.read_text())["schema"].removeprefix("rpx.")
        kinds.setdefault(kind, []).append(path)
        return path

    for case in golden_cases():
        run(command_of(case), out / f"{case.parent.name}-{case.name}.json", cwd=case)
    depth = ["eval", "depth", "--pred-dir", FIXTURES / "depth/indoor/pred",
             "--gt-dir", FIXTURES / "depth/indoor/gt"]
    parts = [run([*depth, "--shard", f"{k}/3"], out / f"part{k}.json") for k in (1, 2, 3)]
    run(["merge", *parts], out / "merged.json")
    strata = run(["eval", "depth", "--pred-dir", KITCHEN / "pred/depth",
                  "--gt-dir", KITCHEN / "gt/depth", "--manifest", KITCHEN / "manifest.json"],
                 out / "strata.json")
    stability = run(["stability", "--task", "depth", "--pred-dir", KITCHEN / "pred/depth",
                     "--manifest", KITCHEN / "manifest.json"], out / "stability.json")
    coherence = kinds["coherence"][0]
    run(["readiness", "--eval", strata, "--stability", stability, "--coherence", coherence,
         "--latency-ms", "12"], out / "readiness.json")
    run(["compare", out / "merged.json", out / "depth-indoor.json", "--force"], out / "compare.json")
    for path in kinds["eval"]:  # each eval task's own schema (rpx schema depth)
        kinds.setdefault(json.loads(path.read_text())["task"], []).append(path)
    kinds["manifest"] = [KITCHEN / "manifest.json"]
    kinds["provenance"] = []
    for source in (strata, out / "compare.json"):  # with and without input digests
        provenance = out / f"provenance-{source.stem}.json"
        provenance.write_text(json.dumps(json.loads(source.read_text())["run_provenance"]))
        kinds["provenance"].append(provenance)
    return kinds


def test_every_kind_has_reports(reports) -> None:
    assert sorted(reports) == sorted(schema_kinds())
    from rpx_cli.tasks import TASKS

    tasks = {json.loads(p.read_text())["task"] for p in reports["eval"]}
    assert tasks == {name for name, task in TASKS.items() if task.kind == "eval"}
    assert tasks <= set(schema_kinds())
    assert any("state" in json.loads(p.read_text()) for p in reports["eval"])


@pytest.mark.parametrize("kind", schema_kinds())
def test_check_jsonschema_validates_with_the_printed_schema(rpx, reports, kind: str,
                                                            tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    printed = rpx(["schema", kind])
    assert printed.exit_code == 0
    schema.write_text(printed.stdout)
    code, output = check(schema, *reports[kind])
    assert code == 0, output


def committed_kinds() -> list[str]:
    """The report kinds with a committed schema: every kind but a test-only task's own."""
    from rpx_cli.tasks.registry import builtin_tasks

    return [kind for kind in schema_kinds() if kind in schema_catalogue.kinds(builtin_tasks())]


@pytest.mark.parametrize("kind", committed_kinds())
def test_check_jsonschema_validates_with_the_committed_schema(reports, kind: str) -> None:
    from rpx_cli.tasks.registry import builtin_tasks

    builtin = builtin_tasks()
    files = [p for p in reports[kind] if json.loads(p.read_text()).get("task", "") in
             (*builtin, "")] if kind == "eval" else reports[kind]
    code, output = check(ROOT / "schemas" / schema_catalogue.file_name(kind, builtin), *files)
    assert code == 0, output


def test_every_committed_schema_is_self_contained() -> None:
    for path in sorted((ROOT / "schemas").glob("*.json")):
        text = path.read_text()
        refs = {part.split('"')[0] for part in text.split('"$ref": "')[1:]}
        assert all(ref.startswith("#/") for ref in refs), (path.name, refs)


# keys a v1 kind gained after files of it were written: every rpx since writes them, the
# schema does not require them (a comparison from before presentation_params_differ is valid)
ADDED_TO_V1 = {"compare": {"presentation_params_differ", "pooled_bootstrap"}}


@pytest.mark.parametrize("kind", [kind for kind in committed_kinds() if kind != "manifest"])
def test_a_report_without_an_always_present_key_fails(reports, kind: str, tmp_path: Path) -> None:
    """Every key ``required`` lists is in every report of the kind, and dropping any one of
    them fails check-jsonschema; a full eval report needs ``aggregate``, a --shard part not."""
    from rpx_cli.tasks.registry import builtin_tasks

    schema_file = ROOT / "schemas" / schema_catalogue.file_name(kind, builtin_tasks())
    schema = json.loads(schema_file.read_text())

    full = [p for p in reports[kind] if "state" not in json.loads(p.read_text())]
    document = next(d for d in map(json.loads, (p.read_text() for p in full))
                    if d.get("task") in builtin_tasks() or kind != "eval")
    always = set.intersection(*(set(json.loads(p.read_text())) for p in full))
    conditional = set((schema.get("then") or {}).get("required", ()))
    later = ADDED_TO_V1.get(kind, set())  # written always, required never: older files stay valid
    assert later.isdisjoint(schema["required"])
    assert always - {"rows", "dataset", "gates", "strata"} - later <= set(schema["required"]) | conditional
    broken = {}
    for key in [*schema["required"], *conditional]:
        broken[key] = tmp_path / f"without-{key}.json"
        broken[key].write_text(json.dumps({k: v for k, v in document.items() if k != key}))
    code, output = check(schema_file, *broken.values())  # one error per file
    assert code == 1
    for key, path in broken.items():
        assert f"{path}::$: '{key}' is a required property" in output, (key, output)


def test_a_shard_part_may_lack_aggregate(reports, tmp_path: Path) -> None:
    part = next(p for p in reports["eval"] if "state" in json.loads(p.read_text()))
    document = json.loads(part.read_text())
    document.pop("aggregate", None)
    document.pop("dataset", None)
    empty = tmp_path / "empty-part.json"
    empty.write_text(json.dumps(document))
    code, output = check(ROOT / "schemas" / "rpx-eval.v1.schema.json", empty)
    assert code == 0, output
