#!/usr/bin/env python3
"""scripts/check-nodelay-guard.py SRC [PATCH] - every sockets identifier the
Pascal set-tcp-nodelay patch uses is declared, under the patch's guard, on
every target fcl-web builds fphttpserver for.

SRC is an FPCSource tree (default build/fpc-trunk/src): its
packages/rtl-extra/src holds the sockets unit of every target.  PATCH
defaults to patches/fpc/set-tcp-nodelay.patch.  The targets, and which
files make each one's sockets unit, are repro/fpc/fphttpserver-targets.json
(read from FPCSource's fpmake files, which the snapshot does not all hold).

The patch's lines in fphttpserver.pp (context and added, in order) are read
with their {$if}/{$ifdef}/{$ifndef}/{$else}/{$endif} nesting; a guard is
evaluated per target: declared(X) is true where X is declared in that
target's sockets files, defined(X) where the target defines X.  A sockets
identifier (declared in some target's sockets unit) that not every target
declares is per-target.  TEST lines:
  nodelay-guard TARGET      each per-target identifier the patch reaches
                            on TARGET (guard true, or no guard) is declared
                            there; says whether TCP_NODELAY is set there
  nodelay-guard everywhere  TCP_NODELAY is set on every target that declares
                            the per-target identifiers the call uses
  nodelay-guard can-fail    the same check on the patch with its declared()
                            guards taken as true fails on the targets that
                            lack the identifiers
Exit: 0 passed, 1 a check failed, 4 skipped (no SRC or no patch).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
TARGETS = json.loads((TOP / "repro/fpc/fphttpserver-targets.json").read_text())["targets"]
UNIT = "packages/fcl-web/src/base/fphttpserver.pp"
DIRECTIVE = re.compile(r"\{\$(if|ifdef|ifndef|else|elseif|endif|ifend)\b\s*([^}]*)\}", re.I)
CALL = "TCP_NODELAY"    # what the patch is for: the option it sets
# Words of the language, never a sockets unit's (a case label "True:" in one
# of them is no declaration).
PASCAL = {"true", "false", "nil", "not", "and", "or", "begin", "end", "if", "then",
          "else", "var", "const", "type", "integer", "boolean", "sizeof", "string",
          "pointer", "default", "read", "write", "property", "procedure", "function"}


def declared(src: Path, files: list[str]) -> set[str]:
    """Identifiers a target's sockets files declare (constants, types,
    variables, functions and procedures), lower-cased."""
    out: set[str] = set()
    for f in files:
        text = (src / "packages/rtl-extra/src" / f).read_text(encoding="latin-1")
        text = re.sub(r"\{[^}$][^}]*\}|\(\*.*?\*\)|//[^\n]*", " ", text, flags=re.S)
        out |= {m.lower() for m in re.findall(r"^\s*([A-Za-z_]\w*)\s*(?:=|:[^=])", text, re.M)}
        out |= {m.lower() for m in re.findall(r"\b(?:function|procedure)\s+([A-Za-z_]\w*)", text, re.I)}
    return out


def patch_lines(patch: str) -> list[tuple[str, str]]:
    """(kind, text) of the patch's lines in fphttpserver.pp, context (' ')
    and added ('+'), in order; a hunk starts with ('@', '')."""
    out, inside = [], False
    for line in patch.splitlines():
        if line.startswith("diff --git") or line.startswith("--- "):
            inside = False
        if line.startswith("+++ "):
            inside = line.endswith(UNIT)
            continue
        if not inside:
            continue
        if line.startswith("@@"):
            out.append(("@", ""))
        elif line[:1] in (" ", "+"):
            out.append((line[:1], line[1:]))
    return out


def guard_value(expr: str, target: str, decl: set[str] | None) -> bool:
    """A {$if} expression of declared()/defined(), and, or, not; decl None:
    every declared() is true (the patch as if it had no such guard)."""
    defs = {d.lower() for d in TARGETS[target]["defines"]}
    py = re.sub(r"\bdeclared\s*\(\s*(\w+)\s*\)",
                lambda m: str(decl is None or m.group(1).lower() in decl), expr, flags=re.I)
    py = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)", lambda m: str(m.group(1).lower() in defs), py, flags=re.I)
    py = re.sub(r"\b(and|or|not)\b", lambda m: m.group(1).lower(), py, flags=re.I)
    if not re.fullmatch(r"[\s()]*(?:(?:True|False|and|or|not)[\s()]*)+", py):
        raise ValueError(f"guard this check cannot evaluate: {{$if {expr}}}")
    return bool(eval(py, {"__builtins__": {}}))  # only True/False/and/or/not/()


def strip_comments(text: str, comment: str) -> tuple[str, str]:
    """A line without its comments and strings (directives kept), and the
    comment still open at its end ('{', '(*' or '') for the next line."""
    out, i = [], 0
    while i < len(text):
        if comment:
            end = text.find("}" if comment == "{" else "*)", i)
            if end < 0:
                return "".join(out), comment
            i, comment = end + len(comment), ""
            out.append(" ")
        elif text.startswith("{$", i):
            end = text.find("}", i)
            end = len(text) if end < 0 else end + 1
            out.append(text[i:end])
            i = end
        elif text[i] == "{" or text.startswith("(*", i):
            comment = "{" if text[i] == "{" else "(*"
            i += len(comment)
        elif text.startswith("//", i):
            break
        elif text[i] == "'":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
            out.append("''")
        else:
            out.append(text[i])
            i += 1
    return "".join(out), comment


def reached(lines: list[tuple[str, str]], target: str, decl: set[str] | None) -> list[tuple[str, str]]:
    """The added lines' code that TARGET compiles: comments and strings
    out, directives evaluated (a hunk starts outside any directive)."""
    out, stack, comment = [], [], ""
    for kind, text in lines:
        if kind == "@":
            stack, comment = [], ""
            continue
        code, comment = strip_comments(text, comment)
        for m in DIRECTIVE.finditer(code):
            word, arg = m.group(1).lower(), m.group(2).strip()
            if word == "if":
                stack.append(guard_value(arg, target, decl))
            elif word in ("ifdef", "ifndef"):
                on = arg.split()[0].lower() in {d.lower() for d in TARGETS[target]["defines"]}
                stack.append(on if word == "ifdef" else not on)
            elif word == "else" and stack:
                stack[-1] = not stack[-1]
            elif word in ("endif", "ifend") and stack:
                stack.pop()
        code = DIRECTIVE.sub(" ", code)
        if kind == "+" and all(stack):
            out.append((text.strip(), code))
    return out


def check(src: Path, patch: str, label: str, quiet: bool = False,
          unguarded: bool = False) -> dict[str, str]:
    """Per target: '' when every per-target identifier it reaches is
    declared there, else what is missing; prints TEST lines unless quiet.
    unguarded: every declared() guard taken as true."""
    decls = {t: declared(src, d["sockets"]) for t, d in TARGETS.items()}
    union = set().union(*decls.values()) - PASCAL
    common = set.intersection(*decls.values())
    lines = patch_lines(patch)
    problems, sets = {}, {}
    for t in TARGETS:
        code = reached(lines, t, None if unguarded else decls[t])
        words = {w.lower() for _, c in code for w in re.findall(r"[A-Za-z_]\w*", c)}
        per_target = (words & union) - common
        missing = sorted(per_target - decls[t])
        sets[t] = CALL.lower() in words
        problems[t] = ", ".join(missing)
        if quiet:
            continue
        if missing:
            print(f"TEST: nodelay-guard {t} [FAIL] {label}: uses {problems[t]}, "
                  f"which {t}'s sockets unit ({', '.join(TARGETS[t]['sockets'])}) does not declare")
        else:
            print(f"TEST: nodelay-guard {t} [ OK ] "
                  + ("sets TCP_NODELAY" if sets[t] else "leaves TCP_NODELAY out (not declared there)"))
    if not quiet:
        # Everywhere the option exists: targets that declare every per-target
        # identifier the patch uses anywhere must reach the call.
        used = set()
        for t in TARGETS:
            used |= {w.lower() for _, c in reached(lines, t, None) for w in re.findall(r"[A-Za-z_]\w*", c)}
        needs = (used & union) - common
        left = [t for t in TARGETS if needs <= decls[t] and not sets[t]]
        if not needs or CALL.lower() not in needs:
            print(f"TEST: nodelay-guard everywhere [FAIL] {label}: the patch does not use {CALL}")
            problems["everywhere"] = "no call"
        elif left:
            print(f"TEST: nodelay-guard everywhere [FAIL] {label}: {', '.join(left)} declare "
                  f"{', '.join(sorted(needs))} but the guard leaves the call out")
            problems["everywhere"] = "left out"
        else:
            on = sorted(t for t in TARGETS if sets[t])
            print(f"TEST: nodelay-guard everywhere [ OK ] TCP_NODELAY set on the {len(on)} targets "
                  f"that declare {', '.join(sorted(needs))}; left out on "
                  f"{', '.join(sorted(set(TARGETS) - set(on))) or 'none'}")
    return problems


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else TOP / "build/fpc-trunk/src"
    patch_path = Path(argv[1]) if len(argv) > 1 else TOP / "patches/fpc/set-tcp-nodelay.patch"
    if not (src / "packages/rtl-extra/src").is_dir() or not patch_path.is_file():
        print(f"TEST: nodelay-guard [SKIP] no {src}/packages/rtl-extra/src or no {patch_path}")
        return 4
    patch = patch_path.read_text(encoding="latin-1")
    try:
        problems = check(src, patch, patch_path.name)
        # The proof that it can fail: the same patch with every declared()
        # guard taken as true, as if the call were unguarded.
        bad = sorted(t for t, why in check(src, patch, "unguarded", quiet=True,
                                           unguarded=True).items() if why)
    except (OSError, ValueError) as e:
        print(f"TEST: nodelay-guard [FAIL] {e}")
        return 1
    if bad:
        print(f"TEST: nodelay-guard can-fail [ OK ] without its guard the patch fails on {', '.join(bad)}")
    else:
        print("TEST: nodelay-guard can-fail [FAIL] without its guard the patch still passes: "
              "the check sees nothing")
    failed = any(problems.values()) or not bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
