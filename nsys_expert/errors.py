"""The one exception type that reaches the user as a one-line message and exit code 2."""
from __future__ import annotations


class InputError(Exception):
    """Bad input or usage: printed as one line on stderr, exit code 2, no traceback.

    `path` names the file (or folder) at fault, `hint` says what to do about it.
    """

    def __init__(self, message: str, path: str | None = None, hint: str | None = None):
        self.message = message
        self.path = path
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split())


class RuleError(InputError):
    """A rule pack that does not validate (file, rule id and what is wrong)."""
