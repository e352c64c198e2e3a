# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the repository's paths and the CLI binary the build tree made (ctest passes
STATICLM_CLI and STATICLM_SOURCE_DIR; run by hand, they default to the release preset's)."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(os.environ.get("STATICLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
CLI = os.environ.get("STATICLM_CLI", str(ROOT / "build" / "release" / "bin" / "staticlm"))


@pytest.fixture
def fixture_dir():
    return lambda family: str(ROOT / "tests" / "fixtures" / family)


@pytest.fixture
def cli():
    """Runs the staticlm CLI; returns (exit code, stdout bytes, stderr text)."""
    def run(*args):
        done = subprocess.run([CLI, *args], capture_output=True)
        return done.returncode, done.stdout, done.stderr.decode()
    return run


@pytest.fixture
def qnn_sdk(monkeypatch):
    """Sets (or clears, with None) the QNN SDK version the qnn backend sees."""
    def set_version(version):
        monkeypatch.delenv("QNN_SDK_ROOT", raising=False)
        if version is None:
            monkeypatch.delenv("QNN_SDK_VERSION", raising=False)
        else:
            monkeypatch.setenv("QNN_SDK_VERSION", version)
    return set_version
