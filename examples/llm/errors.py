"""The one exception the LLM example raises for bad input: its message is one line that
says what is missing or wrong and the command that fixes it."""


class LLMError(Exception):
    """Bad input (a missing file, a mismatched checkpoint, no GPU...): ``str(e)`` is the
    one-line message the CLI prints."""
