"""Blob trigger path patterns: parsing at load, matching a blob against them (blob-trigger spec 6.1-6.4).

The extension's `BlobPathSource` / `BindingTemplateParser` with their messages: ``container/{name}``,
``input/{name}.{ext}`` (greedy captures, in order), literal prefixes (``input/original-{name}``),
``{{`` / ``}}`` for literal braces, and fixed paths (``container/exact.txt``, or a container alone,
which matches every blob in it). Captures span ``/``; literals are case-sensitive; the container
is compared case-insensitively for parameterized patterns.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from funchost.storage.blob_rules import MAX_BLOB_NAME

# The extension's container rule (BlobNameValidationAttribute), QUIRKs of its character class kept.
_CONTAINER = re.compile(r"^(\$root|\$web|[a-z0-9](([a-z0-9\-[^\-])){1,61}[a-z0-9])$")
_NAME_TAIL_CATEGORIES = {"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Nd", "Pc", "Mn", "Mc", "Cf"}


class PathPatternError(ValueError):
    """A trigger path the extension rejects at indexing (FormatException): the function is in error."""


@dataclass(frozen=True)
class Token:
    literal: str | None  # text, or None for a parameter
    name: str | None = None


def _template_error(template: str, detail: str) -> PathPatternError:
    return PathPatternError(f"Invalid template '{template}'. {detail}")


def _check_parameter_name(template: str, expression: str) -> str:
    """BindingTemplateToken.IsValidIdentifier, then the first dotted part has no '-'."""
    name = expression.split(":", 1)[0]
    valid = bool(name) and (unicodedata.category(name[0]).startswith("L") or name[0] == "_") and all(
        c in ".-" or unicodedata.category(c) in _NAME_TAIL_CATEGORIES for c in name[1:])
    if not valid:
        raise _template_error(template, f"Invalid template expression '{expression}")
    first = name.split(".", 1)[0]
    if "-" in first:
        raise _template_error(template, f"The parameter name '{first}' is invalid.")
    return name


def tokenize(template: str) -> list[Token]:
    """``{{``/``}}`` literal braces, ``{name}`` parameters, other runs literal; lone braces are errors."""
    tokens: list[Token] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char == "{" and template[i + 1:i + 2] == "{":
            literal.append("{")
            i += 2
        elif char == "}" and template[i + 1:i + 2] == "}":
            literal.append("}")
            i += 2
        elif char == "{":
            end = template.find("}", i + 1)
            if end < 0 or "{" in template[i + 1:end]:
                raise _template_error(template, f"Missing closing bracket at position {i + 1}.")
            expression = template[i + 1:end]
            if not expression:
                raise _template_error(template, f"The parameter name at position {i + 1} is empty.")
            if literal:
                tokens.append(Token("".join(literal)))
                literal = []
            tokens.append(Token(None, _check_parameter_name(template, expression)))
            i = end + 1
        elif char == "}":
            raise _template_error(template, f"Missing opening bracket at position {i + 1}.")
        else:
            literal.append(char)
            i += 1
    if literal:
        tokens.append(Token("".join(literal)))
    return tokens


def check_trigger_container_name(name: str) -> None:
    if not _CONTAINER.match(name):
        raise PathPatternError(f"Invalid container name: {name}")


def check_trigger_blob_name(name: str) -> None:
    """BlobClientExtensions.ValidateBlobName, messages as written there."""
    tail = "A blob name must be at least one character long and cannot be more than 1,024 characters long."
    if not name:
        raise PathPatternError(f"The given blob name '{name}' is too short. {tail}")
    if len(name) > MAX_BLOB_NAME:
        raise PathPatternError(f"The given blob name '{name}' is too long. {tail}")
    if name.endswith((".", "/")):
        raise PathPatternError(f"The given blob name '{name}' has an invalid suffix. Avoid blob names that end "
                               "with a dot ('.'), a forward slash ('/'), or a sequence or combination of the two.")
    if "\\" in name:
        raise PathPatternError(f"The given blob name '{name}' contain illegal characters. A blob name cannot "
                               "the following character(s): '\\'.")


@dataclass(frozen=True)
class BlobPathPattern:
    """A parsed trigger path: `container` is literal; `blob_tokens` empty = the whole container."""

    path: str
    container: str
    blob_tokens: tuple[Token, ...]
    parameters: tuple[str, ...]
    _regex: re.Pattern[str] | None = None

    @property
    def is_fixed(self) -> bool:
        return not self.parameters

    def match(self, container: str, blob_name: str) -> dict[str, str] | None:
        """The captured parameters when the blob matches, else None (the blob is skipped)."""
        if self._regex is None:
            if not self.blob_tokens:
                return {} if container == self.container else None
            return {} if f"{container}/{blob_name}" == self.path else None
        if container.lower() != self.container.lower():
            return None
        found = self._regex.match(f"{container}/{blob_name}")
        if found is None:
            return None
        return dict(zip(self.parameters, found.groups(), strict=True))

    def __str__(self) -> str:
        return self.path


def parse_trigger_path(path: str | None) -> BlobPathPattern:
    """BlobPathSource.Create: raise PathPatternError with the extension's message."""
    if path is None:
        raise PathPatternError("Blob paths must not be null.")
    container, sep, blob = path.partition("/")
    bad_format = f"Invalid blob trigger path '{path}'. Paths must be in the format 'container/blob'."
    if (sep and (not container or not blob)) or "\\" in container:
        raise PathPatternError(bad_format)
    if "{" in container:
        raise PathPatternError(f"Invalid blob trigger path '{path}'. Container paths cannot contain {{resolve}} tokens.")
    tokens = tokenize(path)
    parameters = tuple(t.name for t in tokens if t.name is not None)
    if any("." in name for name in parameters):
        raise PathPatternError("Capture expressions can't include dot operators")
    if not container:
        raise PathPatternError(bad_format)
    if not parameters:
        check_trigger_container_name(container)
        if sep:
            check_trigger_blob_name(blob)
        return BlobPathPattern(path, container, tuple(tokenize(blob)) if sep else (), ())
    # Parameterized: regex over "container/blob", literals escaped, each parameter greedy `.*`.
    regex = "^" + "".join(re.escape(t.literal) if t.literal is not None else "(.*)" for t in tokens) + "$"
    blob_tokens = tuple(tokenize(blob)) if sep else ()
    return BlobPathPattern(path, container, blob_tokens, parameters, re.compile(regex))

