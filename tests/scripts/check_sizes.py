#!/usr/bin/env python3
"""Size limits of the sources: no C++ file in src/ or apps/ over 400 lines, no
function (C++ there, Python anywhere in the repository) over 60 lines.

Files and functions still over a limit are listed below with the size they have
now: they may shrink, never grow, and a new one may not join them. Exit 1 with
one line per breach; --report prints every size over a limit.

  tests/scripts/check_sizes.py [--root DIR] [--report]
"""
import argparse
import ast
import pathlib
import re
import sys

FILE_LIMIT = 400
FUNCTION_LIMIT = 60

# path -> lines it may still have (none left: issue 15 split the last ones).
LARGE_FILES = {}
# "path:function" -> lines it may still have.
LONG_FUNCTIONS = {
}

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\b\s*(\(|\{|$)")


def strip_code(text):
    """C++ text without comments, string and character literals (same line count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()):  # digit separator 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cpp_functions(text):
    """(name, first line, lines) of each function body at namespace or class level."""
    code = strip_code(text)
    stack, found = [], []
    head_start = 0  # where the text that precedes the next brace begins
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == ";" and all(kind != "func" for kind, _, _ in stack):
            head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            outer = [kind for kind, _, _ in stack]
            if "func" in outer or "other" in outer and outer[-1] == "other":
                kind = "inner"
            elif re.search(r"\bnamespace\b", head) or re.search(r'extern\s*""', head):
                kind = "ns"
            elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", head):
                kind = "class"
            elif ")" in head and not CONTROL.search(head.strip().split("\n")[-1]) and not head.rstrip().endswith("="):
                kind = "func"
            else:
                kind = "other"
            name = ""
            if kind == "func":
                m = re.search(r"([~\w:]+|operator\s*\S+)\s*\(", head)
                name = m.group(1) if m else "?"
            stack.append((kind, line, name))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "func":
                    found.append((name, start, line - start + 1))
            if all(kind != "func" for kind, _, _ in stack):
                head_start = i + 1
    return found


def python_functions(text):
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def measure(root):
    """Yields (key, size, limit) for every file and function measured."""
    for path in sorted(list(root.glob("src/**/*.[ch]pp")) + list(root.glob("apps/**/*.[ch]pp"))):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        yield rel, text.count("\n"), LARGE_FILES.get(rel, FILE_LIMIT)
        for name, start, lines in cpp_functions(text):
            key = f"{rel}:{name}"
            yield f"{key} (line {start})", lines, LONG_FUNCTIONS.get(key, FUNCTION_LIMIT)
    skip = ("build", ".git", ".mirror")
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0].startswith(skip):
            continue
        for name, start, lines in python_functions(path.read_text()):
            key = f"{rel}:{name}"
            yield f"{key} (line {start})", lines, LONG_FUNCTIONS.get(key, FUNCTION_LIMIT)


def self_test():
    """The measures on known text, so that a checker that finds nothing fails."""
    body = "\n".join(f"  x += {i};" for i in range(58))
    cpp = ("namespace avb {\nstruct S {\n  int f() const {\n    return 1;\n  }\n};\n"
           "int long_one(int x) {\n" + body + "\n  return x;\n}\n"
           "auto table = std::vector<int>{\n1,\n2};\n}  // namespace avb\n")
    found = {name: lines for name, _, lines in cpp_functions(cpp)}
    assert found == {"f": 3, "long_one": 61}, found
    py = "def g():\n" + "\n".join(f"    y = {i}" for i in range(61)) + "\n"
    assert [(n, l) for n, _, l in python_functions(py)] == [("g", 62)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parents[2], type=pathlib.Path)
    parser.add_argument("--report", action="store_true", help="print every size over the limits")
    args = parser.parse_args()
    self_test()
    breaches = over = 0
    for key, size, limit in measure(args.root):
        base = FILE_LIMIT if ":" not in key else FUNCTION_LIMIT
        if size > limit:
            breaches += 1
            print(f"check_sizes: {key}: {size} lines, over its limit of {limit}")
        elif size > base:
            over += 1
            if args.report:
                print(f"check_sizes: known: {key}: {size} lines (limit {base})")
    print(f"check_sizes: {breaches} breach(es); {over} known file(s) or function(s) still over the limits")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
