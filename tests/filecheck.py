"""A small FileCheck: checks written as comments in a test file, matched in order against a text
(LLVM's FileCheck semantics for the directives the pass tests use; no dependency).

    # CHECK: text            the next line, at or after the last match, that contains text
    # CHECK-NEXT: text       the line right after the last match contains it
    # CHECK-SAME: text       the last match's line contains it, after the last match
    # CHECK-NOT: text        no line between the last match and the next match (or the end) has it
    # CHECK-LABEL: text      as CHECK; it starts a new block (CHECK-NOT does not look back past it)

``CHECK`` is the prefix (``checks(source, "BEFORE")`` reads ``# BEFORE:``, ``# BEFORE-NOT:``...).
A pattern matches literally, except that a run of spaces matches any run of spaces and tabs and
``{{regex}}`` is a regular expression.
"""
from __future__ import annotations

import re
from typing import NamedTuple, NoReturn

__all__ = ["Check", "CheckFailure", "checks", "match"]

class Check(NamedTuple):
    kind: str  # "", "NEXT", "SAME", "NOT", "LABEL"
    pattern: str
    line: int  # of the directive in its file


class CheckFailure(AssertionError):
    """A check that does not hold: which, and where in the text matching stood."""


def checks(source: str, prefix: str = "CHECK") -> list[Check]:
    """The directives with ``prefix`` in ``source``'s comments, in order."""
    found: list[Check] = []
    directive = re.compile(rf"#\s*{re.escape(prefix)}(-NEXT|-SAME|-NOT|-LABEL)?:\s?(.*)$")
    for number, line in enumerate(source.splitlines(), 1):
        m = directive.search(line)
        if m:
            found.append(Check((m.group(1) or "").lstrip("-"), m.group(2).rstrip(), number))
    return found


def _regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    for i, piece in enumerate(re.split(r"\{\{(.*?)\}\}", pattern)):
        if i % 2:
            parts.append(f"(?:{piece})")
        else:
            parts.append(r"[ \t]+".join(re.escape(word) for word in re.split(r" +", piece)))
    return re.compile("".join(parts))


def match(text: str, directives: list[Check], where: str = "") -> None:
    """Raises ``CheckFailure`` at the first directive that does not hold over ``text``."""
    lines = text.splitlines()
    row, col = 0, 0  # where the last match ended
    pending_not: list[Check] = []

    def fail(check: Check, why: str) -> NoReturn:
        shown = "\n".join(f"{'>' if i == row else ' '} {lines[i]}" for i in range(max(0, row - 3), min(len(lines), row + 8)))
        raise CheckFailure(f"{where}:{check.line}: CHECK{'-' + check.kind if check.kind else ''}: "
                           f"{check.pattern!r} {why}\nnear:\n{shown}")

    def check_nots(upto_row: int, upto_col: int) -> None:
        for c in pending_not:
            rx = _regex(c.pattern)
            for i in range(row, min(upto_row, len(lines) - 1) + 1 if lines else 0):
                start = col if i == row else 0
                end = upto_col if i == upto_row else len(lines[i])
                if rx.search(lines[i], start, end):
                    raise CheckFailure(f"{where}:{c.line}: CHECK-NOT: {c.pattern!r} found on line {i + 1}: {lines[i]}")
        pending_not.clear()

    first = True
    for c in directives:
        rx = _regex(c.pattern)
        if c.kind == "NOT":
            pending_not.append(c)
            continue
        if c.kind == "SAME":
            if first:
                fail(c, "has no line before it to continue")
            m = rx.search(lines[row], col) if row < len(lines) else None
            if not m:
                fail(c, "is not on the line of the last match")
            check_nots(row, m.start())
            col = m.end()
            continue
        if c.kind == "NEXT":
            if first:
                fail(c, "has no line before it to follow")
            target = row + 1
            m = rx.search(lines[target]) if target < len(lines) else None
            if not m:
                fail(c, "is not on the next line")
            check_nots(target, m.start())
            row, col = target, m.end()
            continue
        for i in range(row, len(lines)):
            m = rx.search(lines[i], col if i == row and not first else 0)
            if m:
                check_nots(i, m.start())
                row, col = i, m.end()
                break
        else:
            fail(c, "is not found")
        first = False
    if pending_not:
        check_nots(len(lines) - 1, len(lines[-1]) if lines else 0)
