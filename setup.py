"""Build of rpx-eval: the metadata is in pyproject.toml; this file adds what it cannot say.

- ``rpx_cli._native``, the native core (docs/architecture.md, "The native core"): plain C99
  against the CPython API, no numpy headers, no third-party code. ``optional=True``: a
  machine without a C compiler still installs rpx, which then runs its numpy path.
  ``RPX_SANITIZE=1`` builds it with ``-fsanitize=address,undefined`` (CI's sanitizer run);
  ``RPX_NATIVE_DEBUG=1`` with ``-O0 -g``.
- the committed JSON Schemas (``schemas/``) shipped inside the package as ``rpx_cli/schemas``.
"""

from __future__ import annotations

import os
from glob import glob

from setuptools import Extension, find_namespace_packages, setup

compile_args = ["-std=c99", "-O3", "-ffp-contract=off", "-fno-strict-aliasing", "-fopenmp-simd",
                "-Wall", "-Wno-unused-function"]
link_args: list[str] = []
if os.environ.get("RPX_NATIVE_DEBUG") == "1":
    compile_args += ["-O0", "-g"]
if os.environ.get("RPX_SANITIZE") == "1":
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                "-fno-omit-frame-pointer", "-g"]
    compile_args += sanitize
    link_args += sanitize

native = Extension(
    "rpx_cli._native",
    sources=sorted(glob("rpx_cli/csrc/*.c")),
    depends=sorted(glob("rpx_cli/csrc/*.h")),
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    optional=True,
)

setup(
    # namespace packages too (rpx_cli/cli has no __init__.py); the C sources are not a package
    packages=[*find_namespace_packages(include=["rpx_cli", "rpx_cli.*"],
                                       exclude=["rpx_cli.csrc", "*.__pycache__"]), "rpx_cli.schemas"],
    package_dir={"rpx_cli.schemas": "schemas"},
    package_data={"rpx_cli.schemas": ["*.json"]},
    exclude_package_data={"rpx_cli": ["csrc/*"]},  # the C sources go in the sdist only
    ext_modules=[native],
)
