"""Builds and installs kiln_sample_extensions with the CMake rules of CMakeLists.txt.

    python setup.py build_ext -j8 --inplace           # development, in this directory
    python -m pip install --no-build-isolation .      # install (kiln is not on PyPI, so the
                                                      # build uses the environment's kiln)
"""

from kiln import extension
from setuptools import setup

if __name__ == "__main__":
    setup(
        name="kiln_sample_extensions",
        version="0.0.0",
        description="Sample C++ and CUDA extensions for kiln primitives.",
        ext_modules=[extension.CMakeExtension("kiln_sample_extensions._ext")],
        cmdclass={"build_ext": extension.CMakeBuild},
        packages=["kiln_sample_extensions"],
        package_data={"kiln_sample_extensions": ["*.so"]},
        zip_safe=False,
        python_requires=">=3.9",
    )
