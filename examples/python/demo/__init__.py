"""The parts of kiln's main demo (examples/python/demo.py), importable on their own: the
digits data set, the MLP with a fused custom-kernel activation, Adam, the Llama-style MLP
block, a progress bar and the checks of what the machine has."""
