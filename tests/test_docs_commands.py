"""Every command shown in README.md and docs/*.md runs on the committed fixtures.

Each ```sh block of a page is run in order, from a folder that looks like the repository
root (its entries linked), so files a block writes land in a temporary folder and later
lines of the page can read them. A command exits 0 — or 3 where the block's comment says
a gate fails (``# exit 3``). Illustrative snippets that are not commands go in ```text or
```console blocks.

A page whose commands use ``s3://`` gets a real S3-compatible server on 127.0.0.1 (moto's
server mode) with the usual ``AWS_*`` variables, and its ``aws s3 mb|sync|cp`` lines are
done with s3fs; a page that uses ``--executor dask`` gets a two-worker
``distributed.LocalCluster`` as ``DASK_SCHEDULER_ADDRESS``. No credential may appear in any
output or object of such a page.
"""

from __future__ import annotations

import re
import shlex
from contextlib import ExitStack
from pathlib import Path

import pytest
from helpers import ROOT, run_shell_line, shell_commands
from s3_server import CREDENTIALS, filesystem, s3_server, upload

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def services(text: str, stack: ExitStack, monkeypatch: pytest.MonkeyPatch):
    """What the page's commands need: an S3 server (returns its s3fs filesystem) and a
    Dask cluster."""
    fs = None
    if "s3://" in text:
        import s3fs

        server = stack.enter_context(s3_server())
        for key, value in server.environ().items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        s3fs.S3FileSystem.clear_instance_cache()  # none bound to an earlier server
        stack.callback(s3fs.S3FileSystem.clear_instance_cache)
        fs = filesystem(server.environ())
    if "--executor dask" in text:  # started after the AWS variables: the workers get them
        from distributed import LocalCluster

        cluster = stack.enter_context(LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=":0"))
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    return fs


def run_aws(fs, line: str, cwd: Path) -> None:
    """``aws s3 mb|sync|cp`` against the test's server (the AWS CLI is not installed)."""
    words = shlex.split(line)
    assert fs is not None and words[:2] == ["aws", "s3"], line
    if words[2] == "mb":
        fs.mkdir(words[3].removeprefix("s3://"))
    elif words[2] == "sync":
        upload(fs, cwd / words[3], words[4])
    elif words[2] == "cp":
        fs.pipe_file(words[4].removeprefix("s3://"), (cwd / words[3]).read_bytes())
    else:
        raise AssertionError(f"an aws command this test cannot do: {line}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_command_in_the_docs_runs(rpx, page: Path, tmp_path: Path, monkeypatch) -> None:
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    outputs: list[str] = []

    def run(args, **kwargs):
        done = rpx(args, **kwargs)
        outputs.extend((done.stdout, done.stderr))
        return done

    failed = []
    with ExitStack() as stack:
        fs = services("\n".join(blocks(page)), stack, monkeypatch)
        for block in blocks(page):
            for line in shell_commands(block):
                assignment = re.fullmatch(r"([A-Z_]+)=(\S+)", line)
                if assignment:  # F=fixtures/...: later lines use $F
                    monkeypatch.setenv(*assignment.groups())
                    continue
                if line.startswith(("python", ".venv/bin/pip", "pip ", "pipx ", "python3 ")):
                    continue  # set-up lines: the README's two commands are run by CI itself
                if line.startswith("aws "):
                    run_aws(fs, line, tmp_path)
                    continue
                line = re.sub(r"^\.venv/bin/", "", line).replace("&& .venv/bin/rpx", "&& rpx")
                expected = 3 if "exit 3" in block.split(line, 1)[-1].split("\n", 1)[0] else 0
                for command, code in run_shell_line(run, line, tmp_path):
                    if command.startswith("rpx") and code != expected:
                        failed.append((command, code))
        if fs is not None:  # the reports written to the bucket
            keys = [key for bucket in fs.ls("") for key in fs.find(bucket)]
            outputs += [fs.cat_file(key).decode("utf-8", "replace") for key in keys
                        if key.endswith((".json", ".html"))]
            assert any(key.endswith("report.json") for key in keys)
    assert not failed, failed
    for secret in CREDENTIALS:
        assert not any(secret in text for text in outputs), "a credential was written"
