"""Rule documentation, generated from the rules' docstrings: ``shapeflow rules``, docs/rules.md and
the SARIF rule descriptions all come from here, so they cannot drift apart.

    python -m shapeflow.render.docs                  # print docs/rules.md
    python -m shapeflow.render.docs -o docs/rules.md # write it
    python -m shapeflow.render.docs --check docs/rules.md   # exit 1 when the file is stale
"""

from __future__ import annotations

import argparse
import re
import sys

from ..rules import ALL_RULES, Rule

REFUSAL_NOTE = ("onnxruntime refuses a model with this finding: no file of the repository (config, "
                "baseline, cache entry, marker in the model) can hide it, only the command line "
                "(docs/threat-model.md).")
GENERATED_NOTE = "<!-- Generated from the rule docstrings by `python -m shapeflow.render.docs -o docs/rules.md`; do not edit. -->"


def sections(rule: type[Rule]) -> dict[str, str]:
    """The docstring's parts: ``summary`` (its first paragraph) and one entry per ``## Heading``."""
    out: dict[str, str] = {}
    current = "summary"
    lines: list[str] = []
    for line in rule.doc().splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            out[current] = "\n".join(lines).strip()
            current, lines = m.group(1), []
        else:
            lines.append(line)
    out[current] = "\n".join(lines).strip()
    return out


def flat(text: str) -> str:
    """Paragraphs joined into lines (docstrings wrap at 100 columns; renderers wrap themselves)."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return "\n\n".join(paragraphs)


def plain(text: str) -> str:
    """Markdown code marks removed, for plain-text fields (SARIF text)."""
    return re.sub(r"``(.+?)``|`(.+?)`", lambda m: m.group(1) or m.group(2), text)


def full_description(rule: type[Rule]) -> str:
    """What the rule does, as one text: the "What it does" section (the summary when absent)."""
    parts = sections(rule)
    return flat(parts.get("What it does") or parts["summary"])


def rule_markdown(rule: type[Rule], level: int = 2) -> str:
    """One rule's documentation in Markdown, headings starting at ``level``."""
    h = "#" * level
    parts = sections(rule)
    lines = [
        f"{h} {rule.code} {rule.name}",
        "",
        f"Severity: **{rule.severity.value}**. Fixable: **{'yes' if rule.fixable else 'no'}**."
        + (f" {REFUSAL_NOTE}" if rule.refusal else ""),
        "",
        flat(parts["summary"]),
    ]
    for title, body in parts.items():
        if title == "summary":
            continue
        lines += ["", f"{h}# {title}", "", flat(body)]
    return "\n".join(lines) + "\n"


def rule_text(rule: type[Rule]) -> str:
    """``shapeflow rules CODE``: a header line, then the docstring as written."""
    fixable = ", fixable" if rule.fixable else ""
    note = f"\n{plain(REFUSAL_NOTE)}" if rule.refusal else ""
    return f"{rule.code} {rule.name} ({rule.severity.value}{fixable}){note}\n\n{rule.doc()}\n"


def rules_table_rows() -> list[list[str]]:
    return [[r.code, r.name, r.severity.value, "yes" if r.fixable else ""] for r in ALL_RULES]


def rules_markdown() -> str:
    """The whole of docs/rules.md."""
    lines = [
        GENERATED_NOTE,
        "",
        "# shapeflow rules",
        "",
        "Every finding of `shapeflow lint` (and `shapeflow infer`) comes from one of these rules. Codes are",
        "fixed: a code is never renumbered. SF0xx are about the file and its graph, SF1xx about axes and",
        "shapes, SF2xx report what `shapeflow optimize` would rewrite. Select and ignore them with",
        "`--select`/`--ignore` (a code, a prefix such as `SF1`, or a name), change a severity with",
        "`--severity SF105=error`, or set the same under `[tool.shapeflow]` in `pyproject.toml`.",
        "",
        "| code | name | severity | fixable | flags |",
        "|---|---|---|---|---|",
    ]
    for r in ALL_RULES:
        summary = flat(sections(r)["summary"]).replace("|", "\\|")
        lines.append(f"| [{r.code}](#{r.code.lower()}-{r.name}) | {r.name} | {r.severity.value} | "
                     f"{'yes' if r.fixable else ''} | {summary} |")
    lines.append("")
    for r in ALL_RULES:
        lines.append(rule_markdown(r))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shapeflow.render.docs", description="Generate docs/rules.md.")
    parser.add_argument("-o", "--output", help="write here instead of printing")
    parser.add_argument("--check", metavar="FILE", help="exit 1 when FILE differs from what would be generated")
    args = parser.parse_args(argv)
    text = rules_markdown()
    if args.check:
        try:
            with open(args.check, encoding="utf-8") as f:
                current = f.read()
        except OSError as exc:
            print(f"{args.check}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        if current != text:
            print(f"{args.check} is stale; regenerate it with: python -m shapeflow.render.docs -o {args.check}",
                  file=sys.stderr)
            return 1
        return 0
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
