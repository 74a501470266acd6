"""kvtier.inputs.readers: bounded, strict readers of the YAML and JSON files a user hands kvtier.

The catalogue (tests/commands/test_bad_input.py) drives these through the command line; here
each limit is checked at its edge, on the functions themselves.
"""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.readers import MAX_BYTES, MAX_DEPTH, load_json, load_yaml, read_text_bounded


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 10)
    assert read_text_bounded(path, "test file", limit=10) == "x" * 10
    path.write_bytes(b"x" * 11)
    with pytest.raises(KvtierError, match=r"^.*f\.txt: test file is larger than 10 bytes; refused$"):
        read_text_bounded(path, "test file", limit=10)
    assert MAX_BYTES == 1_048_576  # 1 << 20: 1 MiB


def test_missing_directory_and_non_utf8_files_are_named(tmp_path):
    with pytest.raises(KvtierError, match=r"nope\.yaml: assumptions file not found$"):
        read_text_bounded(tmp_path / "nope.yaml", "assumptions file")
    with pytest.raises(KvtierError, match=r": assumptions file is not a regular file$"):
        read_text_bounded(tmp_path, "assumptions file")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"ab\xff")
    with pytest.raises(KvtierError, match=r"bad\.yaml: assumptions file is not UTF-8 text \(byte 2\)$"):
        read_text_bounded(bad, "assumptions file")


def test_yaml_reads_plain_mappings_and_refuses_aliases_duplicates_and_depth(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\nb: [x, y]\n")
    assert load_yaml(path, "set") == {"a": 1, "b": ["x", "y"]}
    for text, message in (
        ("a: &x 1\nb: *x\n", r"YAML anchors and aliases \(& and \*\) are not accepted \(line 1\)"),
        ("a: 1\na: 2\n", r"duplicate key 'a' \(line 2\)"),
        ("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", rf"nested more than {MAX_DEPTH} levels deep"),
    ):
        path.write_text(text)
        with pytest.raises(KvtierError, match=message):
            load_yaml(path, "set")


def test_yaml_of_only_comments_is_none_and_blank_is_empty(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("# only a comment\n")
    assert load_yaml(path, "set") is None
    path.write_text("  \n")
    with pytest.raises(KvtierError, match=r"s\.yaml: set is empty$"):
        load_yaml(path, "set")


def test_json_reads_objects_and_refuses_duplicates_malformed_and_depth(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"hidden_size": 64}')
    assert load_json(path, "model config file") == {"hidden_size": 64}
    path.write_text('{"a": 1, "a": 2}')
    with pytest.raises(KvtierError, match=r"^my-preset: duplicate key 'a'$"):
        load_json(path, "model config file", where="my-preset")
    path.write_text('{"a": 1,\n "b": }')
    with pytest.raises(KvtierError, match=r"malformed JSON at line 2 column 7$"):
        load_json(path, "model config file")
    path.write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    expected: list = []
    for _ in range(MAX_DEPTH - 1):  # 32 lists, each holding the next: exactly the deepest accepted
        expected = [expected]
    assert load_json(path, "x") == expected
    path.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(KvtierError, match=r"nested more than 32 levels deep$"):
        load_json(path, "x")
