"""Hostile behaviour documents: every one must be refused with a clear, content-free message."""

from __future__ import annotations

SENTINEL = "SENTINEL-hostile-9d2f"
_GOOD_TAIL = "resources:\n  m: {mutation: partition_replace, date_field: d}\n"

BEHAVIOUR_CORPUS: dict[str, bytes] = {
    "invalid_yaml_date": b"name: x\nlimits: {max_rows: 2026-13-45}\n" + _GOOD_TAIL.encode(),
    "huge_integer": ("name: x\n" + _GOOD_TAIL + "limits: {max_rows: " + "9" * 5000 + "}\n").encode(),
    "yaml_nested_2000": b"name: x\nrules: " + b"[" * 2000 + b"]" * 2000 + b"\n",
    "json_nested_2000": b'{"name": "x", "rules": ' + b'{"a": ' * 2000 + b"1" + b"}" * 2000 + b"}",
    "json_array_nested_100000": b"[" * 100_000,
    "duplicate_key": b"name: a\nname: b\n" + _GOOD_TAIL.encode(),
    "duplicate_nested_key": b"name: a\nresources:\n  m: {mutation: partition_replace, mutation: x, date_field: d}\n",
    "invalid_utf8": b"name: \xff\xfe\n" + _GOOD_TAIL.encode(),
    "utf16": "name: x\n".encode("utf-16"),
    "too_large": b"name: x\n" + b"#" * 1_100_000 + b"\n",
    "alias_bomb": (b"a: &a [x, x, x, x, x, x, x, x, x]\n"
                   + b"".join(b"%s: &%s [*%s, *%s, *%s, *%s]\n" % ((bytes([98 + i]),) * 2 + (bytes([97 + i]),) * 4)
                              for i in range(10))),
    "lone_surrogate_yaml": b'name: "\\ud800"\n' + _GOOD_TAIL.encode(),
    "lone_surrogate_json": b'{"name": "x", "description": "\\udfff", "resources": '
                           b'{"m": {"mutation": "partition_replace", "date_field": "d"}}}',
    "infinite_float": ("name: x\n" + _GOOD_TAIL + "sync: {fence: {type: idempotency_key, retention_seconds: .inf}}\n"
                       ).encode(),
    "nan_float": ("name: x\n" + _GOOD_TAIL + "rules:\n- {name: r, match: {endpoints: [sync_submit]}, "
                  "when: {probability: .nan}, action: {kind: job_failure}}\n").encode(),
    "python_tag": b"name: !!python/object/apply:os.system ['true']\n" + _GOOD_TAIL.encode(),
    "binary_tag": b"name: !!binary aGVsbG8=\n" + _GOOD_TAIL.encode(),
    "custom_tag": b"name: !secret x\n" + _GOOD_TAIL.encode(),
    "merge_key": b"base: &b {mutation: partition_replace}\nname: x\nresources:\n  m: {<<: *b, date_field: d}\n",
    "non_string_key": b"1: x\nname: x\n" + _GOOD_TAIL.encode(),
    "top_level_list": b"- name: x\n",
    "top_level_scalar": b"just text\n",
    "empty": b"",
    "two_documents": b"name: x\n---\nname: y\n",
    "nul_byte": b"name: x\x00\n" + _GOOD_TAIL.encode(),
    "unclosed_flow": b"name: [unclosed\n",
    "bad_int_for_tag": b"name: x\nlimits: {max_rows: !!int abc}\n" + _GOOD_TAIL.encode(),
    "sentinel_unknown_field": ("name: x\n" + _GOOD_TAIL + f"surprise: {SENTINEL}\n").encode(),
    "sentinel_bad_phase": ("name: x\n" + _GOOD_TAIL + "async_jobs: {resource: m, phases: {pending: '"
                           + SENTINEL + " with spaces'}}\n").encode(),
    "huge_phase_name": ("name: x\n" + _GOOD_TAIL + "async_jobs: {resource: m, phases: {pending: "
                        + "p" * 100_000 + "}}\n").encode(),
}
