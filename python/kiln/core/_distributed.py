"""Process-level support of kiln.core.distributed (installed by ``init`` for groups of
several processes)."""

import os
import sys


def install_abort_hook():
    """Makes an uncaught exception end the process at once (status 1).

    A normal exit finalizes MPI, which waits for every other rank: a rank that dies of an
    exception while the others wait in a collective would hang the whole launch. Exiting
    without finalizing lets mpirun (or kiln.launch) see the failure and stop the others.
    """
    if getattr(sys.excepthook, "_kiln_abort", False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(1)

    hook._kiln_abort = True
    sys.excepthook = hook
