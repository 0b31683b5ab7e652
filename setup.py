"""Builds the kiln._core extension module (and libkiln) with CMake for `pip install .`.

CMake configures the repository with only the library and the bindings, builds the module
target, and installs the CMake components "python" and "development" into the package
directory: kiln/_core*.so and kiln/lib/libkiln.so (found through the module's $ORIGIN/lib
RPATH), kiln/include/ and kiln/lib/cmake/Kiln/ (the CMake package extensions build against).
Extra CMake arguments can be passed in the CMAKE_ARGS environment variable (e.g.
"-DKILN_CUDA=OFF"); the build directory is under setuptools' build_temp.
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).parent.resolve()


def version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(kiln VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        package_dir = pathlib.Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        args = [
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DKILN_PYTHON_OUTPUT_DIR={build_dir / 'module'}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DKILN_BUILD_PYTHON=ON",
            "-DKILN_BUILD_TESTS=OFF",
            "-DKILN_BUILD_EXAMPLES=OFF",
            "-DKILN_BUILD_BENCHMARKS=OFF",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build_dir), *args])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_core", "-j", jobs])
        # "development": headers and the CMake package, for extensions (python -m kiln --cmake-dir).
        for component in ("python", "development"):
            subprocess.check_call(
                ["cmake", "--install", str(build_dir), "--component", component, "--prefix", str(package_dir)]
            )


setup(
    version=version(),
    license="MIT",
    license_files=["LICENSE"],
    packages=["kiln", "kiln.core"],
    package_dir={"": "python"},
    package_data={"kiln": ["py.typed"], "kiln.core": ["*.pyi"]},
    ext_modules=[CMakeExtension("kiln._core")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
