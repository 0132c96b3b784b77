"""Object storage: inputs and outputs given as URLs (``s3://``, ``gs://``, ``az://``,
``file://``, ``memory://``), through fsspec (the ``rpx[remote]`` extra).

This module imports only the standard library (and rpx's rules for local files and stems,
:mod:`~rpx_cli.io.local_files`, :mod:`~rpx_cli.io.stems`); fsspec is imported the first
time a URL is used, so a run on local paths never loads it. Everything else rpx does with a file is the
same for an object:

- **Pairing**: :func:`prefix_stems` lists a prefix once (one ``LIST`` per 1,000 objects) and
  gives the same ``stem -> relative path`` map as a folder walk (recursive, hidden names
  ignored, suffixes case-insensitive, two objects with one stem an input error).
- **Reading**: :func:`read` fetches an object whole in one request; the engine's
  :class:`~rpx_cli.io.filebuffer.FileBuffer` digests the bytes it parses, so an object is
  read once and its sha256 is that of the bytes evaluated (equal to the same file on disk).
- **Provenance**: an input's entry keeps the URL and adds the object's ETag (``etag``) or,
  for a prefix, the sha256 of the ``<etag>  <relative path>`` listing of the objects
  evaluated (``etags``), as the store reported them when listing (no extra request).
- **Credentials** come from the store's usual sources (``AWS_*`` variables, profiles,
  ``AWS_ENDPOINT_URL`` for S3-compatible stores, ``GOOGLE_APPLICATION_CREDENTIALS``, ...) or
  from ``--storage-options JSON`` (:func:`configure`). They are never written: messages are
  scrubbed of every credential value rpx can see (:func:`scrub`) and ``--storage-options``
  is recorded in provenance with its secret values masked (:func:`redact`).
- **Errors** (no such bucket or object, access denied, network down, a backend that is not
  installed) are one-line :class:`~rpx_cli.errors.InputError` s naming the URL.
- The digest cache is off for objects (see docs/remote.md): reading an object to evaluate
  it costs far more than hashing it, and an ETag is not a content digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rpx_cli.errors import InputError, ParameterError, first_line
from rpx_cli.io.local_files import read_local
from rpx_cli.io.stems import path_stems

__all__ = ["configure", "glob", "is_url", "prefix_stems", "read", "redact", "scrub", "write"]

EXTRA = "pip install 'rpx-eval[remote]'"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SECRET_KEY = re.compile(r"key|secret|token|password|passwd|credential|sas|signature|"
                         r"connection_string|auth", re.I)
_SECRET_ENV = re.compile(r"^(AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|SECURITY_TOKEN)|"
                         r"AZURE_STORAGE_(KEY|ACCOUNT_KEY|SAS_TOKEN|CONNECTION_STRING)|"
                         r"AZURE_CLIENT_SECRET|GOOGLE_OAUTH_ACCESS_TOKEN)$")
MASK = "***"

_options: dict[str, Any] = {}  # --storage-options, for every URL's filesystem
_etags: dict[str, str | None] = {}  # URL -> ETag, as listed or read in this process
_digests: dict[str, str] = {}  # URL -> sha256 hex of the bytes read by read(..., whole=True)


def is_url(path: object) -> bool:
    """``scheme://...`` (a local path never is one, so it never loads fsspec)."""
    return isinstance(path, str) and "://" in path and _SCHEME.match(path) is not None


def protocol_of(url: str) -> str:
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else "file"


# the stores rpx reads and writes (docs/remote.md): S3 and S3-compatible, Google Cloud
# Storage, Azure, local files and memory. Another fsspec protocol (ftp://, http://, ssh://)
# is refused before any filesystem is made: some fail in their constructor and again in
# their destructor, printing a traceback after rpx's line
SUPPORTED = ("s3", "gs", "gcs", "az", "abfs", "abfss", "file", "memory")


def scheme_problem(url: str) -> str | None:
    """Why ``url`` (``scheme://...``) is not a store rpx reads or writes, or None."""
    protocol = protocol_of(url)
    if protocol in SUPPORTED:
        return None
    return (f"{url}: unsupported scheme {protocol}:// (supported: "
            f"{', '.join(p + '://' for p in SUPPORTED)}; or a local path)")


# --- options and secrets -----------------------------------------------------------------------


def parse_options(text: str | None) -> dict[str, Any]:
    """``--storage-options``: a JSON object of keyword arguments for the filesystem (s3fs'
    ``key``, ``secret``, ``endpoint_url``, ``client_kwargs``, ...)."""
    if text is None or not text.strip():
        return {}
    from rpx_cli.io.json import strict_json

    try:  # a key twice, nesting too deep, a 5,000-digit number: a usage error, never a crash
        value = strict_json(text, "--storage-options")
    except InputError as exc:
        raise ParameterError(f"--storage-options: {str(exc).split(': ', 1)[-1]}") from None
    if not isinstance(value, dict):
        raise ParameterError("--storage-options: expected a JSON object, e.g. "
                             "'{\"endpoint_url\": \"http://127.0.0.1:9000\"}'")
    return value


def configure(options: Mapping[str, Any] | None) -> None:
    """Use ``options`` for every URL's filesystem in this process (``None``: none)."""
    _options.clear()
    _options.update(options or {})


def current_options() -> dict[str, Any]:
    """The options :func:`configure` set (shipped to remote workers with the job)."""
    return dict(_options)


def redact(value: Any) -> Any:
    """``value`` with every secret-looking entry masked (keys naming a key, secret,
    token, password, credential, ...), recursively: what provenance may keep."""
    if isinstance(value, Mapping):
        return {key: MASK if _SECRET_KEY.search(str(key)) and not isinstance(item, Mapping)
                else redact(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def redacted_argv(argv: Iterable[str]) -> list[str]:
    """``argv`` with the value of ``--storage-options`` replaced by its redacted JSON."""
    out: list[str] = []
    pending = False
    for token in argv:
        if pending:
            out.append(_redacted_json(token))
            pending = False
        elif token == "--storage-options":
            out.append(token)
            pending = True
        elif token.startswith("--storage-options="):
            out.append("--storage-options=" + _redacted_json(token.split("=", 1)[1]))
        else:
            out.append(token)
    return out


def _redacted_json(text: str) -> str:
    try:
        return json.dumps(redact(json.loads(text)), sort_keys=True)
    except ValueError:
        return MASK


def _secrets() -> list[str]:
    found: list[str] = []

    def walk(value: Any, secret: bool) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, secret or bool(_SECRET_KEY.search(str(key))))
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item, secret)
        elif secret and value is not None and len(str(value)) >= 4:
            found.append(str(value))

    walk(_options, False)
    found += [value for name, value in os.environ.items()
              if _SECRET_ENV.match(name) and len(value) >= 4]
    return sorted(set(found), key=len, reverse=True)


def scrub(text: str) -> str:
    """``text`` with every credential value rpx can see (``--storage-options`` secrets,
    ``AWS_SECRET_ACCESS_KEY`` and the like, a password in a URL) masked."""
    for secret in _secrets():
        text = text.replace(secret, MASK)
    return re.sub(r"(://[^/@\s:]+):[^/@\s]+@", rf"\1:{MASK}@", text)


# --- the filesystem ----------------------------------------------------------------------------


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem for ``url`` (cached by fsspec per process) and its path."""
    try:
        import fsspec
    except ImportError:
        raise InputError(f"reading or writing URLs needs the remote extra: {EXTRA}",
                         path=url) from None
    protocol = protocol_of(url)
    problem = scheme_problem(url)
    if problem is not None:
        raise ParameterError(problem)
    try:
        fs = fsspec.filesystem(protocol, **_options)
    except ImportError as exc:  # the backend (s3fs, gcsfs, adlfs) is not installed
        raise InputError(f"{protocol}:// needs a package that is not installed "
                         f"({scrub(first_line(exc))}); {EXTRA} installs s3fs and gcsfs",
                         path=url) from None
    except ValueError as exc:
        raise InputError(f"unknown storage protocol {protocol}:// ({scrub(first_line(exc))})",
                         path=url) from None
    except Exception as exc:  # a bad storage option
        raise InputError(f"cannot open the {protocol}:// store: {_reason(exc)}", path=url) from None
    return fs, fs._strip_protocol(url)


def _reason(exc: BaseException) -> str:
    """A store's exception as a short phrase (scrubbed of credentials)."""
    if isinstance(exc, FileNotFoundError):
        text = first_line(exc)
        return "no such bucket" if "bucket" in text.lower() else "not found"
    if isinstance(exc, PermissionError):
        return f"access denied ({scrub(first_line(exc))})"
    return f"{type(exc).__name__}: {scrub(first_line(exc))}"


def _failed(exc: BaseException, url: str, doing: str = "cannot read") -> InputError:
    if isinstance(exc, InputError):
        return exc
    return InputError(f"{doing}: {_reason(exc)}", path=url)


def _etag(info: Mapping[str, Any]) -> str | None:
    for key in ("ETag", "etag", "e_tag"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return None


# --- listing, reading, writing -----------------------------------------------------------------


def prefix_stems(root: str, suffixes: Iterable[str]) -> dict[str, str]:
    """The objects under the prefix ``root`` as :func:`~rpx_cli.io.stems.folder_stems`
    gives a folder's files (stem -> relative path); their ETags are kept for provenance."""
    fs, path = _filesystem(root)
    base = path.rstrip("/")
    try:
        listing = fs.find(base, detail=True)
    except Exception as exc:
        raise _failed(exc, root, "cannot list") from None
    prefix = base + "/"
    rels = {}
    for name, info in listing.items():
        if not name.startswith(prefix) or info.get("type", "file") != "file":
            continue
        rel = name[len(prefix):]
        rels[rel] = info
    if not rels:
        try:
            is_file = fs.isfile(base)
        except Exception:
            is_file = False
        raise InputError("is an object, not a folder (prefix)" if is_file
                         else "no such folder (no object under this prefix)", path=root)
    found = path_stems(root, sorted(rels), suffixes)
    join = root.rstrip("/") + "/"
    for rel in found.values():
        _etags[join + rel] = _etag(rels[rel])
    return found


def is_object(url: str) -> bool:
    """Whether ``url`` names one object (not a prefix of several)."""
    fs, path = _filesystem(url)
    try:
        return bool(fs.isfile(path.rstrip("/")))
    except Exception as exc:
        raise _failed(exc, url) from None


def read(url: str) -> bytes:
    """The whole object, in one request (``file://``: a regular file only, as on disk)."""
    if protocol_of(url) == "file":
        return read_local(_local(url))
    fs, path = _filesystem(url)
    # s3fs asks for the size first (a HEAD) to fetch big objects in parallel ranges: one
    # GET per object is what a folder of maps wants
    options = {"max_concurrency": 1} if protocol_of(url) in ("s3", "s3a") else {}
    try:
        return fs.cat_file(path, **options)
    except Exception as exc:
        raise _failed(exc, url) from None


def read_whole(url: str) -> bytes:
    """An object read by itself (a manifest, a COCO file, a report part): its ETag is
    asked for and its sha256 kept, so provenance needs no second read."""
    if protocol_of(url) != "file" and url not in _etags:
        fs, path = _filesystem(url)
        try:
            _etags[url] = _etag(fs.info(path))
        except Exception as exc:
            raise _failed(exc, url) from None
    data = read(url)
    _digests[url] = hashlib.sha256(data).hexdigest()
    return data


def sha256_of(url: str) -> str:
    """The sha256 of an object read by :func:`read_whole` (read now if it was not)."""
    if url not in _digests:
        read_whole(url)
    return _digests[url]


def write(url: str, data: bytes) -> None:
    """Write an object whole: one ``PUT``, which a reader sees entirely or not at all
    (``file://``: a temporary file and a rename, as for a local report)."""
    if protocol_of(url) == "file":
        _write_local(_local(url), data)
        return
    fs, path = _filesystem(url)
    try:
        fs.pipe_file(path, data)
    except Exception as exc:
        raise _failed(exc, url, "cannot write") from None


def glob(pattern: str) -> list[str]:
    """The objects matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``), as URLs, sorted."""
    fs, path = _filesystem(pattern)
    try:
        names = fs.glob(path)
    except Exception as exc:
        raise _failed(exc, pattern, "cannot list") from None
    return sorted(fs.unstrip_protocol(name) for name in names)


def _write_local(path: str, data: bytes) -> None:
    from rpx_cli.io.atomic_files import write_atomic

    try:
        write_atomic(path, data)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None


def _local(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(url).path)


# --- provenance --------------------------------------------------------------------------------


def describe_file(entry: dict[str, Any]) -> dict[str, Any]:
    """A file input's provenance entry for a URL: it exists (it was read) and its ETag."""
    return {**entry, "exists": True, "etag": _etags.get(entry["path"])}


def describe_folder(entry: dict[str, Any], rels: Iterable[str]) -> dict[str, Any]:
    """A folder input's provenance entry for a prefix URL: ``etags``, the sha256 of the
    ``<etag>  <relative path>`` lines (sorted by path) of the objects evaluated, or None
    when the store gives no ETags (``file://``, ``memory://``)."""
    join = entry["path"].rstrip("/") + "/"
    lines = []
    for rel in sorted(rels):
        etag = _etags.get(join + rel)
        if etag is None:
            return {**entry, "exists": True, "etags": None}
        lines.append(f"{etag}  {rel}\n")
    text = "".join(lines).encode("utf-8", "surrogateescape")
    return {**entry, "exists": True, "etags": hashlib.sha256(text).hexdigest()}
