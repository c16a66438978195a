"""The TOML line locator: tables, dotted and quoted keys, arrays of tables, multi-line values."""

from __future__ import annotations

import tomllib

from tobe.toml_lines import key_lines, line_of

DOCUMENT = """\
# a comment
data_dir = "/x"   # trailing comment
[provider]
kind = "openai"
note = \"\"\"multi
line "" string with [brackets] and key = "value"
\"\"\"
api.key = 'x'
arr = [
  1, # a comment inside
  "]",
]

[[provider.models]]
id = "a"
[[provider.models]]
"quoted id" = "b"
[provider.models.sub]
x = 1
[[profiles.profile]]
name = "p"
[mind]
listen = "x"
"""


def test_every_key_is_found_on_its_line() -> None:
    tomllib.loads(DOCUMENT)  # the locator reads only documents tomllib accepts
    lines = key_lines(DOCUMENT)
    assert lines[("data_dir",)] == 2
    assert lines[("provider", "kind")] == 4
    assert lines[("provider", "api", "key")] == 8
    assert lines[("provider", "arr")] == 9
    assert lines[("provider", "models", 0)] == 14
    assert lines[("provider", "models", 0, "id")] == 15
    assert lines[("provider", "models", 1, "quoted id")] == 17
    assert lines[("provider", "models", 1, "sub", "x")] == 19
    assert lines[("profiles", "profile", 0, "name")] == 21
    assert lines[("mind", "listen")] == 23


def test_a_path_not_written_is_located_at_its_nearest_ancestor() -> None:
    lines = key_lines(DOCUMENT)
    assert line_of(lines, ("provider", "models", 0, "context_window")) == 14
    assert line_of(lines, ("scheduler", "time_zone")) is None
