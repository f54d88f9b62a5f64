#!/usr/bin/env python3
"""Checks that every repository path the docs name still exists (.ci/run calls it).

Looks at README.md and docs/*.md whole, and at the comments of the sources (C, OpenCL C, CUDA:
/* */ and //; shell, Python, Starlark and BUILD files: #). A path is a word that starts with
one of the repository's top-level folders, such as `kernels/gpu/moe.cu`; it holds when the file
or folder is tracked by git, or names a target `bazel query` knows (`tools/replay`, `//tests/hal:comm_test`).
Words with a placeholder (`<family>`, `*`, `{a,b}`, an all-capitals part such as `TARGET`) and
paths inside another tree (under `bazel-bin/`, or relative to a parent folder) are left alone,
as are the string literals of the sources, which name test data and runfiles on purpose.
Prints each dangling path as FILE:LINE: PATH and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)

tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], capture_output=True, text=True,
                         check=True).stdout.split("\n")
tracked = [f for f in tracked if f]
existing = set(tracked)
for f in tracked:  # every folder of a tracked file
    parts = f.split("/")
    for i in range(1, len(parts)):
        existing.add("/".join(parts[:i]))
tops = sorted({f.split("/")[0] for f in tracked if "/" in f and not f.startswith(".")})

# `tools/replay`, `//tests/hal:comm_test`: a folder, then an optional target after `:` or `/`.
PATH = re.compile(r"(?<![\w./$~-])(//)?((?:%s)(?:/[\w.+-]+)*)(:[\w.+-]+)?" % "|".join(tops))
PLACEHOLDER = re.compile(r"[<>*{}]|(^|[/:_])[A-Z][A-Z_]+(?![a-z0-9])")


# Every target Bazel knows, macros' included, as "package:name".
query = subprocess.run(["./bazelw", "query", "--noshow_progress", "//...:*"],
                       capture_output=True, text=True)
if query.returncode != 0:
    sys.exit("check_paths: bazel query //...:* failed:\n" + query.stderr[-2000:])
targets = {t[2:] for t in query.stdout.split("\n") if t.startswith("//")}


def holds(path, target):
    if target:  # //package:name
        return f"{path}{target}" in targets
    if path in existing:
        return True
    parts = path.split("/")  # a target in any package above: hal/core/driver_list.h
    return any("/".join(parts[:i]) + ":" + "/".join(parts[i:]) in targets
               for i in range(1, len(parts)))


C_LIKE = (".c", ".h", ".cl", ".cu", ".cc")
HASH_LIKE = (".sh", ".py", ".bzl", "BUILD", "WORKSPACE", ".bazelrc", "bazelw")


def comment_lines(name, text):
    """(line number, text) of what a reader sees as prose in the file."""
    if name.endswith(".md"):
        yield from enumerate(text.split("\n"), 1)
    elif name.endswith(C_LIKE):
        # Comments only: string and character literals blanked first, line breaks kept.
        for m in re.finditer(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                             text, re.S):
            if m.group(0)[0] in "\"'":
                continue
            line = text.count("\n", 0, m.start()) + 1
            for i, part in enumerate(m.group(0).split("\n")):
                yield line + i, part
    elif name.endswith(HASH_LIKE) or os.path.basename(name) in HASH_LIKE:
        for i, line in enumerate(text.split("\n"), 1):
            at = line.find("#")
            if at >= 0 and not line.startswith("#!"):
                yield i, line[at:]


def sources():
    for f in tracked:
        if f.startswith(("third_party/", "tests/data/", "tests/fuzz/corpus/", "examples/")):
            continue
        if f == "README.md" or f.startswith("docs/") or not f.endswith(".md"):
            yield f


bad = []
for f in sources():
    try:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        continue
    for line, part in comment_lines(f, text):
        for m in PATH.finditer(part):
            label, path, target = m.groups()
            if "/" not in path and not target and not label:
                continue  # a bare word such as "tools" or "tests"
            following = part[m.end():m.end() + 1]
            if PLACEHOLDER.search(path + (target or "") + following):
                continue  # tests/gpu:conv_gpu_test_<driver>, tools/cmd_*.c
            path = path.rstrip("./")  # the end of a sentence, //tests/fuzz/...
            target = target.rstrip(".") if target else target
            if not holds(path, target):
                bad.append(f"{f}:{line}: {(label or '') + path + (target or '')}")

for b in bad:
    print(f"dangling path: {b}", file=sys.stderr)
print(f"check_paths: {len(bad)} dangling path(s) in the docs and the source comments")
sys.exit(1 if bad else 0)
