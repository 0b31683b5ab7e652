"""Command-line helpers.

    python -m kiln --cmake-dir    the directory holding kiln's CMake package, for
                                  `cmake -DKiln_DIR=$(python -m kiln --cmake-dir)` in
                                  extensions (find_package(Kiln CONFIG))
"""

import argparse
import os
import pathlib
import sys


def cmake_dir():
    """The directory with KilnConfig.cmake: KILN_CMAKE_DIR if set, else the installed
    package's share/cmake/Kiln, else the build tree the extension module came from."""
    candidates = []
    if os.environ.get("KILN_CMAKE_DIR"):
        candidates.append(pathlib.Path(os.environ["KILN_CMAKE_DIR"]))
    package = pathlib.Path(__file__).resolve().parent
    candidates += [package / "share" / "cmake" / "Kiln", package / "lib" / "cmake" / "Kiln"]
    try:
        from kiln import _core

        build = pathlib.Path(_core._build_dir)
        candidates += [build, build / "cmake", build / "share" / "cmake" / "Kiln"]
    except ImportError:
        pass
    for c in candidates:
        if (c / "KilnConfig.cmake").is_file() or (c / "kiln-config.cmake").is_file():
            return c
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln", description=__doc__.splitlines()[0])
    parser.add_argument("--cmake-dir", action="store_true", help="print the directory of kiln's CMake package")
    args = parser.parse_args(argv)
    if args.cmake_dir:
        found = cmake_dir()
        if found is None:
            print(
                "kiln: KilnConfig.cmake was not found (looked in KILN_CMAKE_DIR, the installed package "
                "and the build tree of the extension module).",
                file=sys.stderr,
            )
            return 1
        print(found)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
