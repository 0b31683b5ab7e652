"""``python -m llm`` (with examples/ on the path): the same as examples/llm/main.py."""

import sys

from .cli import main

sys.exit(main())
