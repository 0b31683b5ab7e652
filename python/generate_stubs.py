"""Regenerates the type stubs of kiln.core (python/kiln/core/*.pyi) from the built
extension module, with pybind11-stubgen (a development tool: pip install pybind11-stubgen).

    PYTHONPATH=python python python/generate_stubs.py

Run it after adding or changing a binding; the stubs are committed so that editors and type
checkers complete the API without building kiln.
"""

import inspect
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TARGET = HERE / "kiln" / "core"


def clean_docstrings(text):
    """Dedents each docstring (the bindings write them indented like the C++ around them)."""

    def fix(match):
        indent, body = match.group(1), match.group(2)
        lines = inspect.cleandoc(body).splitlines()
        inner = "\n".join(indent + line if line else "" for line in lines)
        return f'{indent}"""\n{inner}\n{indent}"""'

    return re.sub(r'^([ \t]*)"""(.*?)"""', fix, text, flags=re.MULTILINE | re.DOTALL)


# CustomKernel.__call__ parses its keywords itself (python/src/fast.cpp), so pybind11 only
# sees *args, **kwargs: the stub spells the keywords out for editors.
KERNEL_CALL = (
    "def __call__(self, *, inputs: list | dict, output_shapes: list | dict, "
    "output_dtypes: list | dict, grid: tuple[int, int, int], "
    "threadgroup: tuple[int, int, int], template: list | dict | None = None, "
    "init_value: float | None = None, verbose: bool = False, "
    "ensure_row_contiguous: bool | None = None, "
    "stream: kiln.core.Stream | kiln.core.Device | None = None"
    ") -> list[kiln.core.array] | dict[str, kiln.core.array]:"
)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pybind11_stubgen", "kiln._core", "-o", tmp,
             "--ignore-unresolved-names", "typing_extensions.CapsuleType"],
            check=True,
        )
        generated = pathlib.Path(tmp) / "kiln" / "_core"
        for stub in sorted(generated.glob("*.pyi")):
            text = stub.read_text()
            # The compiled module is re-exported as kiln.core.
            text = re.sub(r"\bkiln\._core\b", "kiln.core", text)
            text = text.replace("from kiln.core import", "from . import")
            text = text.replace("typing_extensions.CapsuleType", "typing.Any")
            text = clean_docstrings(text)
            text = re.sub(r"^_build_dir: str = .*$", "_build_dir: str", text, flags=re.MULTILINE)
            if stub.name == "fast.pyi":
                text = text.replace("def __call__(self, *args, **kwargs) -> typing.Any:",
                                    KERNEL_CALL)
            out = TARGET / stub.name
            out.write_text(text)
            print(f"wrote {out.relative_to(HERE.parent)}")
    (HERE / "kiln" / "py.typed").touch()


if __name__ == "__main__":
    if shutil.which("pybind11-stubgen") is None:
        try:
            import pybind11_stubgen  # noqa: F401
        except ImportError:
            sys.exit("pybind11-stubgen is not installed: pip install pybind11-stubgen")
    main()
