"""``shapeflow rules``: every lint rule, or one rule's full documentation."""

from __future__ import annotations

import json

import click

from ..render.docs import flat, rule_markdown, rule_text, rules_markdown, rules_table_rows, sections
from ..errors import UsageError
from ..render import table
from ..rewrites import deprecated
from ..rules import ALL_RULES, Rule, rule_by_code, rules_for_alias


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
        chosen = [found] if found is not None else rules_for_alias(rule)
        if not chosen:
            raise UsageError(f"unknown rule {rule!r} (see `shapeflow rules`)")
        if found is None:  # a former name: what it means now, then each rule's documentation
            click.echo(f"shapeflow: warning: {deprecated(rule.strip().lower(), [r.name for r in chosen])}", err=True)
        if fmt == "json":
            docs = [_rule_json(r) for r in chosen]
            click.echo(json.dumps(docs[0] if found is not None else docs, indent=2))
        elif fmt == "markdown":
            click.echo("\n".join(rule_markdown(r) for r in chosen), nl=False)
        else:
            click.echo("\n".join(rule_text(r) for r in chosen), nl=False)
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
