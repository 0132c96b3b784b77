"""A real S3-compatible server on 127.0.0.1 for the object-storage tests and benchmark:
moto's server mode (werkzeug, threaded) in this process, started and stopped by its user.

Credentials are made-up values chosen to be easy to find in an output (a test asserts that
no output contains them); nothing here talks to any other address.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "AKIARPXTESTACCESSKEY"
SECRET_KEY = "rpx-test-secret-Vq8NnW2kLx7p"
SESSION_TOKEN = "rpx-test-session-token-3fZ9a"
CREDENTIALS = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)


@dataclass
class S3Server:
    endpoint: str
    server: object

    def environ(self) -> dict[str, str]:
        """What a process needs to reach it: the usual AWS variables."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_SESSION_TOKEN": SESSION_TOKEN, "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's server on 127.0.0.1 (a free port), with no bucket; stopped on exit."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto keeps its buckets per process: an earlier server's are dropped (moto's own API)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"),
                           timeout=30).close()
    try:
        yield S3Server(endpoint, server)
    finally:
        server.stop()


def filesystem(environ: dict[str, str]):
    """A fresh s3fs filesystem for ``environ``'s server and credentials (no cached one)."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    saved = {key: os.environ.get(key) for key in environ}
    os.environ.update(environ)
    try:
        return s3fs.S3FileSystem(skip_instance_cache=True)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def upload(fs, local: Path, url: str) -> None:
    """Every file under ``local`` to the prefix ``url`` (``s3://bucket/prefix``)."""
    base = url.removeprefix("s3://").rstrip("/")
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{base}/{path.relative_to(local).as_posix()}", path.read_bytes())
