#!/usr/bin/env python3
"""Fails when a test would never run: a target the workspace does not compile as a test
(`test = false` in its Cargo.toml) whose sources hold a unit test, or one rustdoc does
not run over (`doctest = false`) whose doc comments hold a code example. Those settings
keep the test command's build short; this keeps them from hiding a test."""

import json
import os
import re
import subprocess
import sys

meta = json.loads(subprocess.check_output(["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"]))
unit = re.compile(r"#\[(tokio::)?test\b|#\[cfg\(test\)\]")
example = re.compile(r"^\s*//[/!].*```")
found = []
for pkg in meta["packages"]:
    for t in pkg["targets"]:
        kinds = set(t["kind"])
        if not kinds & {"lib", "bin", "rlib", "cdylib"}:
            continue
        checks = []
        if not t.get("test", True):
            checks.append(("a unit test", unit))
        if "lib" in kinds and not t.get("doctest", True):
            checks.append(("a doc example", example))
        root = os.path.dirname(t["src_path"])
        for dirpath, _, files in os.walk(root):
            for f in files:
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as src:
                    for n, line in enumerate(src, 1):
                        for what, pattern in checks:
                            if pattern.search(line):
                                found.append(f"{os.path.relpath(path)}:{n}: {what} in {pkg['name']}'s {t['name']}, which is not built as a test; remove its `test = false`/`doctest = false`")
for f in found:
    print(f)
sys.exit(1 if found else 0)
