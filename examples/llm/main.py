#!/usr/bin/env python3
"""The LLM example's command line (see llm/cli.py):

    python examples/llm/main.py prepare | train | generate | quantize | bench | demo --help

Puts examples/ (for the `llm` package) and, when kiln is not installed, the repository's
python/ folder on the import path, so it runs from a source checkout without PYTHONPATH.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This folder holds data/ and modules with common names: import it only as the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))
try:
    if os.environ.get("LLM_FRAMEWORK", "kiln") == "kiln":
        import kiln.core  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parents[1] / "python"))

from llm.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
