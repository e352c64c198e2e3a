# SPDX-License-Identifier: Apache-2.0
"""Builds the staticlm extension module with the project's CMake (no tests, no benchmarks) for
the interpreter running pip, and packages it with python/staticlm. pyproject.toml holds the
metadata; docs/python.md says how to install."""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # STATICLM_CMAKE_BUILD_DIR: a configured build tree of this source (build/release) whose
        # _staticlm target is built as it is configured, instead of configuring one of its own.
        existing = os.environ.get("STATICLM_CMAKE_BUILD_DIR")
        build_dir = pathlib.Path(existing) if existing else pathlib.Path(self.build_temp).resolve() / "cmake"
        if not existing:
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
                                   "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DSTATICLM_BUILD_TESTS=OFF",
                                   "-DSTATICLM_BUILD_BENCHMARKS=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_staticlm", "-j",
                               str(os.cpu_count() or 2)])
        built = next((build_dir / "python" / "staticlm").glob("_staticlm*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(ext_modules=[Extension("staticlm._staticlm", sources=[])], cmdclass={"build_ext": CMakeBuild})
