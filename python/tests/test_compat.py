"""MLX-style scripts (tests/compat/) run unchanged with `import kiln.core as mx`: each
imports nothing else from kiln, asserts its own results and ends by printing "ok"."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

SCRIPTS = sorted((pathlib.Path(__file__).parent / "compat").glob("*.py"))


def test_scripts_exist():
    assert len(SCRIPTS) >= 4


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_compat_script(script):
    source = script.read_text()
    kiln_imports = re.findall(r"^[ \t]*(?:import|from)[ \t]+kiln\S*.*$", source, re.MULTILINE)
    assert kiln_imports == ["import kiln.core as mx"], kiln_imports
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "ok", result.stdout
