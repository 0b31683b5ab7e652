"""A tiny progress bar (tqdm may be absent): `for x in progress(items, "label"): ...`.

On a terminal it redraws one line on stderr. Otherwise (logs, CI) it draws nothing while
running and, with `summary`, prints the finished bar once, so captured output stays short."""

import sys
import time


def progress(iterable, label, total=None, summary=True, width=30, stream=None):
    """Yields the items of `iterable`, drawing `label [#####.....] i/n  elapsed`."""
    stream = stream or sys.stderr
    total = len(iterable) if total is None else total
    live = stream.isatty()
    start = time.perf_counter()
    done = 0

    def line():
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        return f"  {label} [{bar}] {done}/{total}  {time.perf_counter() - start:.1f} s"

    for item in iterable:
        yield item
        done += 1
        if live:
            stream.write("\r" + line())
            stream.flush()
    if live:
        stream.write("\r" + line() + "\n" if summary else "\r" + " " * len(line()) + "\r")
        stream.flush()
    elif summary:
        stream.write(line() + "\n")
