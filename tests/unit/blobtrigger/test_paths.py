"""Path patterns as the extension parses and matches them (blob-trigger spec 6.1-6.3)."""

from __future__ import annotations

import pytest

from funchost.triggers.blob.paths import PathPatternError, parse_trigger_path


@pytest.mark.parametrize("pattern, container, name, expected", [
    ("input/{name}", "input", "a/b.txt", {"name": "a/b.txt"}),
    ("input/{blobname}.{blobextension}", "input", "original-Blob1.txt",
     {"blobname": "original-Blob1", "blobextension": "txt"}),
    ("input/{name}.{ext}", "input", "a.b.c", {"name": "a.b", "ext": "c"}),
    ("input/original-{name}", "input", "original-Blob1.txt", {"name": "Blob1.txt"}),
    ("samples/{name}.png", "samples", "x.PNG", None),
    ("images/{{20140101}}-{name}", "images", "{20140101}-soundfile.mp3", {"name": "soundfile.mp3"}),
    ("input/{name}", "other", "a.txt", None),
    ("input/{name}", "input", "line\nbreak", None),
    ("input", "input", "any/thing", {}),
    ("input/exact.txt", "input", "exact.txt", {}),
    ("input/exact.txt", "input", "exact.TXT", None),
])
def test_matching(pattern, container, name, expected):
    assert parse_trigger_path(pattern).match(container, name) == expected


@pytest.mark.parametrize("path, message", [
    (None, "Blob paths must not be null."),
    ("/x", "Invalid blob trigger path '/x'. Paths must be in the format 'container/blob'."),
    ("c/", "Invalid blob trigger path 'c/'. Paths must be in the format 'container/blob'."),
    ("a\\b/x", "Invalid blob trigger path 'a\\b/x'. Paths must be in the format 'container/blob'."),
    ("{c}/x", "Invalid blob trigger path '{c}/x'. Container paths cannot contain {resolve} tokens."),
    ("input/{name", "Invalid template 'input/{name'. Missing closing bracket at position 7."),
    ("input/name}", "Invalid template 'input/name}'. Missing opening bracket at position 11."),
    ("input/{}", "Invalid template 'input/{}'. The parameter name at position 7 is empty."),
    ("input/{1x}", "Invalid template 'input/{1x}'. Invalid template expression '1x"),
    ("input/{a-b}", "Invalid template 'input/{a-b}'. The parameter name 'a-b' is invalid."),
    ("input/{a.b}", "Capture expressions can't include dot operators"),
    ("Input/file.txt", "Invalid container name: Input"),
    ("input/file.", "The given blob name 'file.' has an invalid suffix."),
])
def test_rejected_paths(path, message):
    with pytest.raises(PathPatternError) as caught:
        parse_trigger_path(path)
    assert str(caught.value).startswith(message)


def test_parameters_and_container():
    pattern = parse_trigger_path("images/{folder}/{name}.{ext}")
    assert (pattern.container, pattern.parameters, pattern.is_fixed) == ("images", ("folder", "name", "ext"), False)
    assert pattern.match("IMAGES", "a/b/c.d.e") is None  # the container compares case-insensitively,
    # but the whole-path regex is case-sensitive, so an upper-case container never matches
