"""``shapeflow rules``: every lint rule, or one rule's full documentation."""

from __future__ import annotations

import json

import click

from ..docs import flat, rule_markdown, rule_text, rules_markdown, rules_table_rows, sections
from ..errors import UsageError
from ..render import table
from ..rules import ALL_RULES, Rule, rule_by_code


@click.command("rules", epilog="""\b
Examples:
  shapeflow rules                 list code, name, severity and fixable for every rule
  shapeflow rules SF104           the full documentation of one rule (code or name)
  shapeflow rules --format markdown > docs/rules.md

Exit codes: 0 done, 2 unknown rule or usage error.""")
@click.argument("rule", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
def command(rule: str | None, fmt: str) -> int:
    """List the lint rules, or document RULE (a code such as SF104, or a name)."""
    if rule is not None:
        found = rule_by_code(rule)
        if found is None:
            raise UsageError(f"unknown rule {rule!r} (see `shapeflow rules`)")
        if fmt == "json":
            click.echo(json.dumps(_rule_json(found), indent=2))
        elif fmt == "markdown":
            click.echo(rule_markdown(found), nl=False)
        else:
            click.echo(rule_text(found), nl=False)
        return 0
    if fmt == "json":
        click.echo(json.dumps([_rule_json(r) for r in ALL_RULES], indent=2))
    elif fmt == "markdown":
        click.echo(rules_markdown(), nl=False)
    else:
        click.echo(table(["code", "name", "severity", "fixable"], rules_table_rows()))
    return 0


def _rule_json(rule: type[Rule]) -> dict[str, object]:
    return {"code": rule.code, "name": rule.name, "severity": rule.severity.value, "fixable": rule.fixable,
            "refusal": rule.refusal, "summary": flat(sections(rule)["summary"]), "doc": rule.doc()}
