"""Build helpers for kiln extensions: setuptools commands that build a CMake project.

In an extension's ``setup.py``::

    from kiln import extension
    from setuptools import setup

    setup(
        name="my_extension",
        ext_modules=[extension.CMakeExtension("my_extension._ext")],
        cmdclass={"build_ext": extension.CMakeBuild},
        packages=["my_extension"],
        package_data={"my_extension": ["*.so"]},
    )

``CMakeBuild`` configures the project (the directory of ``setup.py`` unless the extension
says otherwise) with ``Kiln_DIR`` set to kiln's CMake package (``python -m kiln
--cmake-dir``), ``Python_EXECUTABLE`` to the running interpreter, ``pybind11_DIR`` when
pybind11 is installed, and ``CMAKE_LIBRARY_OUTPUT_DIRECTORY`` to the extension's package
directory, so that every shared library the project builds lands next to the module. Extra
arguments for CMake come from the ``CMAKE_ARGS`` environment variable; ``build_ext -j N``
or ``CMAKE_BUILD_PARALLEL_LEVEL`` sets the build's parallelism, ``--debug`` a Debug build.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension
from setuptools.command.build_ext import build_ext

__all__ = ["CMakeExtension", "CMakeBuild"]


class CMakeExtension(Extension):
    """A Python extension module built by a CMake project.

    Args:
        name: The module's full name, e.g. ``"my_extension._ext"``; the CMake project must
            build a module of that (last) name.
        sourcedir: The directory of the project's ``CMakeLists.txt`` (default: the current
            directory, where ``setup.py`` runs).
    """

    def __init__(self, name: str, sourcedir: str = "") -> None:
        super().__init__(name, sources=[])
        self.sourcedir = os.fspath(pathlib.Path(sourcedir).resolve())


class CMakeBuild(build_ext):
    """``build_ext`` for :class:`CMakeExtension`: configures, builds, and (with
    ``--inplace``) copies every shared library the project built into the source package."""

    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CMakeExtension):
            return super().build_extension(ext)
        from kiln.__main__ import cmake_dir

        kiln_dir = cmake_dir()
        if kiln_dir is None:
            raise RuntimeError(
                "kiln's CMake package (KilnConfig.cmake) was not found: install kiln with pip, "
                "or set KILN_CMAKE_DIR to the build directory of kiln."
            )
        extdir = pathlib.Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_temp = pathlib.Path(self.build_temp).resolve() / ext.name
        build_temp.mkdir(parents=True, exist_ok=True)
        config = "Debug" if self.debug else "Release"

        args = [
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={extdir}{os.sep}",
            f"-DCMAKE_BUILD_TYPE={config}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DKiln_DIR={kiln_dir}",
            "-DBUILD_SHARED_LIBS=ON",
        ]
        try:
            import pybind11

            args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass  # the project finds its own binding library
        if not os.environ.get("CMAKE_GENERATOR") and shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))

        build_args = ["--config", config]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ and self.parallel:
            build_args += ["-j", str(self.parallel)]

        subprocess.run(["cmake", "-S", ext.sourcedir, "-B", str(build_temp), *args], check=True)
        subprocess.run(["cmake", "--build", str(build_temp), *build_args], check=True)
        self._cmake_outputs = getattr(self, "_cmake_outputs", []) + [(ext, extdir)]

    def run(self) -> None:
        super().run()
        # setuptools builds in build_lib and copies back only each module's own file for
        # --inplace; the libraries beside it (e.g. the extension's C++ library) go too.
        if not self.inplace:
            return
        build_py = self.get_finalized_command("build_py")
        for ext, extdir in getattr(self, "_cmake_outputs", []):
            package = ".".join(ext.name.split(".")[:-1])
            target = pathlib.Path(build_py.get_package_dir(package)).resolve()
            if target == extdir:
                continue
            for lib in extdir.iterdir():
                if lib.is_file() and (lib.suffix == ".so" or ".so." in lib.name):
                    self.copy_file(str(lib), str(target / lib.name), level=self.verbose)
