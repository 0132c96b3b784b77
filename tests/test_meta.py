"""Meta-tests: layering, docs coverage, version, start-up imports, packaging."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from helpers import ROOT

from rpx_cli import __version__
from rpx_cli.cli.main import cli

PACKAGE = ROOT / "rpx_cli"

# package/module -> rpx_cli modules it may import (docs/architecture.md, "Layers")
ALLOWED = {
    "errors": set(),
    "io": {"errors", "io", "native"},
    "ops": {"errors", "ops", "native"},
    "native": {"_native"},  # the native core's Python face: which path runs (no numpy import)
    "params": {"errors", "params", "io", "tasks"},  # tasks: type hints only (TYPE_CHECKING)
    "tasks": {"io", "ops", "errors", "params", "tasks", "distributions"},
    "deploy": {"tasks", "ops", "io", "params", "errors", "deploy", "engine"},
    "engine": {"io", "tasks", "errors", "allocator", "engine"},
    "allocator": set(),
    "distributions": set(),  # installed versions and entry points, without importlib.metadata
    # deploy: its declarations only (DECLARATIONS)
    "report": {"tasks", "params", "errors", "report", "__init__", "distributions", "deploy", "native"},
    "console": {"errors"},  # escaped(): names shown as ls -b does
    "run": {"engine", "io", "ops", "params", "tasks", "report", "errors", "deploy", "run", "native"},
    "api": {"run"},
    "cli": {"*"},
    "__init__": {"api", "tasks"},
    "__main__": {"cli"},
    "testing": {"tasks"},
}
# third-party modules only one layer may import
OWNED = {"click": "cli", "rich": "console", "orjson": "report", "imageio": "io", "PIL": "io",
         "jsonschema": "report", "referencing": "report", "shapely": "ops"}
# the optional extra rpx-eval[geometry] (--geometry polygon): imported by these modules only
SHAPELY = {"ops/polygons.py", "ops/geometry.py"}
# the optional extras' modules: one file each may import them (and only when used)
OPTIONAL = {"fsspec": "io/remote.py", "s3fs": "io/remote.py", "gcsfs": "io/remote.py",
            "adlfs": "io/remote.py", "distributed": "run/dask_executor.py",
            "dask": "run/dask_executor.py"}
# what report/ may read of deploy/: the deployment reports' declared figures (a readiness
# report has no metric_info), never the workflows themselves
DECLARATIONS = {"report": {"rpx_cli.deploy.figures"}}
# the one exception: io/json.py *parses* large JSON with orjson (a 28 MB COCO results
# file: 0.21 s against the stdlib's 0.58 s); serialising stays in report/
READERS = {"orjson": {"io/json.py"}}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports_of(path: Path, package: list[str] | None = None) -> list[str]:
    """Absolute names of everything ``path`` imports; relative imports (``from . import x``,
    ``from ..ops import y``) are resolved against the module's own package."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if package is None:
        package = ["rpx_cli", *path.relative_to(PACKAGE).parent.parts]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module == "rpx_cli" or (node.level and not node.module):
                names += [f"{module}.{alias.name}" for alias in node.names]
            else:
                names.append(module)
    return names


# the task protocol: what every task may import from rpx_cli.tasks
PROTOCOL = {"base", "stats", "registry", "calculators"}


@pytest.mark.parametrize("path", sorted((PACKAGE / "tasks").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_task_imports_another(path: Path) -> None:
    """A task (a module or a sub-package of rpx_cli/tasks) imports the protocol and its own
    parts, never another task: what tasks share lives below them (io, ops, params)."""
    rel = path.relative_to(PACKAGE / "tasks")
    own = rel.parts[0].removesuffix(".py")
    for name in imports_of(path):
        parts = name.split(".")
        if parts[:2] == ["rpx_cli", "tasks"] and len(parts) > 2:
            assert parts[2] in PROTOCOL | {own}, f"{rel} imports the task {parts[2]}"


def test_imports_of_resolves_relative_imports(tmp_path: Path) -> None:
    module = tmp_path / "base.py"
    module.write_text("from . import stats\nfrom ..ops import reduce\nfrom .registry import TASKS\n")
    assert imports_of(module, ["rpx_cli", "tasks"]) == [
        "rpx_cli.tasks.stats", "rpx_cli.ops", "rpx_cli.tasks.registry"]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_layers_point_one_way(path: Path) -> None:
    layer = layer_of(path)
    allowed = ALLOWED[layer]
    for name in imports_of(path):
        top = name.split(".")[0]
        if top == "rpx_cli":
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else "__init__"
            if target == "__version__":
                target = "__init__"
            assert "*" in allowed or target in allowed, f"{layer} must not import rpx_cli.{target}"
            if target == "deploy" and layer in DECLARATIONS:
                assert name in DECLARATIONS[layer], f"{layer} reads deploy/'s declarations only, not {name}"
        elif top in OWNED and str(path.relative_to(PACKAGE)) in READERS.get(top, ()):
            assert "orjson.dumps" not in path.read_text(), "only report/ serialises JSON"
        elif top in OWNED:
            assert OWNED[top] == layer, f"only {OWNED[top]} may import {top} (found in {layer})"
            if top == "shapely":
                assert str(path.relative_to(PACKAGE)) in SHAPELY, f"{path.name} imports shapely"
        elif top in OPTIONAL:
            assert str(path.relative_to(PACKAGE)) == OPTIONAL[top], f"only {OPTIONAL[top]} imports {top}"


def test_the_test_extra_has_what_the_remote_and_dask_tests_need() -> None:
    """CI installs '.[test]' (.ci/run, README): a real S3 server (moto[server]) with s3fs,
    and distributed for a LocalCluster; the extras users install name them too."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {key: {re.split(r"[<>=;]", spec)[0].strip() for spec in specs}
             for key, specs in extras.items()}
    assert {"fsspec", "s3fs", "moto[server]", "distributed"} <= names["test"]
    assert {"fsspec", "s3fs"} <= names["remote"] and "distributed" in names["dask"]
    assert "-e '.[test]'" in (ROOT / ".ci" / "run").read_text()


def test_no_module_cites_a_document_outside_the_repository() -> None:
    """Code may point readers to README.md and docs/*.md (which must exist), never to the
    team's design documents that do not ship with rpx."""
    outside = re.compile(r"\bSPEC\b|PERF-NOTES|STYLE\.md|seeds/")
    cited = re.compile(r"\b(docs/[\w./-]+\.md|README\.md)")
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "tools").glob("*.py"), *(ROOT / "benchmarks").glob("*.py")]
    for path in files:
        text = path.read_text()
        assert not outside.search(text), f"{path.relative_to(ROOT)} cites {outside.search(text)[0]}"
        for name in cited.findall(text):
            assert (ROOT / name).is_file(), f"{path.relative_to(ROOT)} cites {name}, which is missing"


def test_every_command_has_help_and_is_in_the_readme(rpx) -> None:
    readme = (ROOT / "README.md").read_text()
    for name in cli.commands:
        run = rpx([name, "--help"])
        assert run.exit_code == 0, name
        assert "Example" in run.stdout, f"rpx {name} --help has no example"
        assert f"rpx {name}" in readme, f"rpx {name} is not documented in README.md"


def test_readme_documents_every_exit_code() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"):
        assert code in readme


def test_version_matches_package_metadata() -> None:
    assert metadata.version("rpx-eval") == __version__
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{__version__}"' in pyproject


def test_version_and_help_import_nothing_heavy() -> None:
    code = (
        "import contextlib, io, sys; from rpx_cli.cli.main import cli\n"
        "for args in (['--help'], ['--version']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        cli(args, standalone_mode=False)\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'imageio', 'scipy', 'rich', 'PIL', 'orjson', 'jsonschema'})\n"
        "heavy += ['importlib.metadata'] if 'importlib.metadata' in sys.modules else []\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_a_task_command_imports_its_task_module_only() -> None:
    """`rpx eval depth` (and its --help) loads the depth task, not the registry's every
    module (~50 ms of start-up); listing the tasks loads them all."""
    code = (
        "import contextlib, io, sys; from rpx_cli.cli.main import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli(['eval', 'depth', '--help'], standalone_mode=False)\n"
        "print(','.join(sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                      if m.startswith('rpx_cli.tasks.'))))\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli(['eval', '--help'], standalone_mode=False)\n"
        "print('rpx_cli.tasks.tracking' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = done.stdout.split()
    assert first.split(",") == ["base", "calculators", "depth", "registry", "stats"]
    assert second == "True"
    # a task with a command of its own: built from its declarations, importing that task only
    code = (
        "import contextlib, io, sys; from rpx_cli.cli.main import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli(['saliency-mb', '--help'], standalone_mode=False)\n"
        "print(','.join(sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                      if m.startswith('rpx_cli.tasks.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[0].split(",") == ["base", "calculators", "registry", "saliency_mb",
                                                  "stats"]


def test_task_commands_short_help_is_the_tasks_own() -> None:
    """`rpx --help` lists saliency-mb and coherence without importing them: the line it shows
    is the task's own help."""
    from rpx_cli.cli.main import TASK_COMMANDS
    from rpx_cli.tasks import TASKS

    own = {name for name, task in TASKS.items() if task.report_schema != "rpx.eval"}
    assert set(TASK_COMMANDS) == own
    for name, line in TASK_COMMANDS.items():
        assert TASKS[name].help == line


def test_lazy_commands_short_help_is_the_commands_own() -> None:
    """`rpx --help` lists every command but eval without importing it: the line it shows is
    the one the command would show itself, at every width; `rpx eval ...` imports none."""
    import click

    from rpx_cli.cli.main import LAZY_COMMANDS, cli

    ctx = click.Context(cli)
    listed = set(cli.list_commands(ctx))
    for name, (_, _, line) in LAZY_COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command.name == name and name in listed
        for width in (30, 45, 80, 120, 400):
            assert click.Command(name, help=line).get_short_help_str(width) == \
                command.get_short_help_str(width), (name, width)
    code = ("import sys\n"
            "from rpx_cli.cli.main import cli\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('rpx_cli.cli.'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert not {"rpx_cli.cli.inspect", "rpx_cli.cli.workflow", "rpx_cli.cli.readiness",
                "rpx_cli.cli.stability", "rpx_cli.cli.report"} & set(done.stdout.split())


@pytest.mark.slow
def test_wheel_ships_the_schemas(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    wheel = next(tmp_path.glob("rpx_eval-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for schema in sorted((ROOT / "schemas").glob("*.json")):
        assert f"rpx_cli/schemas/{schema.name}" in names
    assert "rpx_cli/cli/main.py" in names


def test_ruff_is_clean() -> None:
    ruff = pytest.importorskip("ruff")
    del ruff
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "rpx_cli", "tests", "benchmarks",
                           "fixtures", "tools"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_committed_schemas_are_what_the_generator_writes(tmp_path: Path) -> None:
    """schemas/*.json come from tools/make_schemas.py: edit the generator, not the files."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_schemas.py"), str(tmp_path)],
                   check=True)
    written = sorted(p.name for p in tmp_path.glob("*.json"))
    assert written == sorted(p.name for p in (ROOT / "schemas").glob("*.json"))
    for name in written:
        assert (tmp_path / name).read_text() == (ROOT / "schemas" / name).read_text(), name
