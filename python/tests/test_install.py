# SPDX-License-Identifier: Apache-2.0
"""pip installs the package: the project's pyproject.toml and setup.py, copied with the package
sources into a scratch directory (so the test writes nothing into the source tree), install into a
fresh venv; the installed package imports from elsewhere, carries its stubs, and exports and runs
the bundled model. The extension comes from the build tree ctest runs in (STATICLM_BUILD_DIR, passed
to setup.py as STATICLM_CMAKE_BUILD_DIR), so the test spends no time recompiling the library."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

BUILD_DIR = os.environ.get("STATICLM_BUILD_DIR")


def _venv_available():
    done = subprocess.run([sys.executable, "-c", "import ensurepip, venv, setuptools"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not BUILD_DIR, reason="needs STATICLM_BUILD_DIR (ctest sets it)")
@pytest.mark.skipif(not _venv_available(), reason="needs python3-venv and python3-setuptools")
def test_pip_installs_a_package_that_runs_the_bundled_model(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "python" / "staticlm", source / "python" / "staticlm")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    environment = dict(os.environ, STATICLM_CMAKE_BUILD_DIR=BUILD_DIR, PIP_NO_INDEX="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1")
    environment.pop("PYTHONPATH", None)  # the build tree's package must not shadow the installed one
    done = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", str(source)],
                          capture_output=True, text=True, env=environment, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    program = tmp_path / "kjv.slm"
    script = (
        "import pathlib, sys, staticlm\n"
        "package = pathlib.Path(staticlm.__file__).parent\n"
        "assert str(package).startswith(sys.prefix), package\n"
        "assert (package / '__init__.pyi').is_file() and (package / 'py.typed').is_file()\n"
        f"staticlm.export({str(ROOT / 'models' / 'kjv-llama-6m')!r}, {str(program)!r},"
        " prefill_len=32, max_cache_len=128)\n"
        f"runner = staticlm.runner_for({str(program)!r}, threads=1)\n"
        "result = runner.generate('In the beginning', staticlm.GenerationConfig(max_new_tokens=8))\n"
        "assert len(result.tokens) == 8, result\n"
        "print(result.text)\n")
    environment.pop("STATICLM_CMAKE_BUILD_DIR")
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, env=environment,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
