"""The rewrites: one spec per file, ``sfNNN_name.py``, discovered here.

Each file defines one :class:`~shapeflow.passes.Rewrite` subclass: its code and name, its
documentation, its pattern, check and replacement (see ``shapeflow/passes/spec.py``). Nothing else
lists them: the registry imports every ``sf*.py`` module of this package, and the lint rule of each
rewrite, ``optimize --rules``, ``shapeflow rules`` and docs/rules.md all come from what it finds.
Adding a rewrite is adding a file (and its test).

On one root the rewrites are tried in ``order``, lowest first, and the first that matches fires.
The bands:

* 100s folds: they remove the most (a fold of the last node of a chain takes the whole chain);
* 200s chain rewrites of Squeeze/Unsqueeze: cancels (two nodes go), merges, the shape slice (its
  Unsqueeze may fold or cancel instead), the fan-out merge (a node read by one Squeeze/Unsqueeze
  is the chain rules');
* 300s Reshape/Expand: a round trip (two nodes) before a no-op before a constant target;
* 400s arithmetic and concatenation;
* 500s clean-ups rooted at other ops (Constant, Cast, Identity);
* 900s duplicates, tried last of all (on a Constant, becoming an initializer comes first).

Repairs (``repair = True``: SF104's, for ``lint --fix``) are found the same way and kept apart.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from typing import Collection, Iterable, Sequence

from ..errors import DeprecatedNameWarning, UsageError
from ..passes.spec import Rewrite
from ..passes.sweep import DeadNodes

_FILE = re.compile(r"^sf(\d{3})_([a-z0-9_]+)$")


def discover(package: str = __name__, path: Iterable[str] | None = None) -> tuple[type[Rewrite], ...]:
    """The rewrite specs of ``package`` (one per ``sfNNN_name.py`` module), in priority order.
    A module must define exactly one spec, whose code and name its file name spells."""
    found: list[type[Rewrite]] = []
    for info in sorted(pkgutil.iter_modules(list(path) if path is not None else __path__), key=lambda i: i.name):
        m = _FILE.match(info.name)
        if m is None:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        specs = [v for v in vars(module).values()
                 if isinstance(v, type) and issubclass(v, Rewrite) and v.__module__ == module.__name__
                 and v.code is not None]
        if len(specs) != 1:
            raise ImportError(f"{module.__name__} defines {len(specs)} rewrite specs; a file holds exactly one")
        spec = specs[0]
        code = spec.code
        assert code is not None
        if (code.code, code.name) != (f"SF{m.group(1)}", m.group(2).replace("_", "-")):
            raise ImportError(f"{module.__name__}: the file name says SF{m.group(1)} {m.group(2)}, "
                              f"the spec {code.code} {code.name}")
        found.append(spec)
    return tuple(sorted(found, key=lambda r: (r.order, r.name)))


ALL: tuple[type[Rewrite], ...] = discover()
# What optimize runs (and lint --fix, for the selected codes), in priority order.
REWRITES: tuple[type[Rewrite], ...] = tuple(r for r in ALL if not r.repair)
# Repairs of error-level findings: ``lint --fix`` runs them before the rewrites; ``optimize`` never
# does (it refuses a model with errors rather than repair it on the way).
REPAIRS: tuple[type[Rewrite], ...] = tuple(r for r in ALL if r.repair)
NAMES: tuple[str, ...] = tuple(r.name for r in REWRITES)
# The code of each rewrite (``SF201``...), and the former names that now mean one or more of them.
CODES: tuple[str, ...] = tuple(r.code.code for r in REWRITES if r.code is not None)
ALIASES: dict[str, tuple[str, ...]] = {}
for _r in REWRITES:
    for _alias in _r.aliases:
        ALIASES[_alias] = (*ALIASES.get(_alias, ()), _r.name)
del _r, _alias


def for_codes(wanted: Collection[str], *, repairs: bool = False) -> list[Rewrite]:
    """The rewrites (or, with ``repairs``, the repairs) whose code is in ``wanted``, in priority
    order: what ``lint --fix`` runs for the codes the user's selection allows."""
    return [r() for r in (REPAIRS if repairs else REWRITES) if r.code is not None and r.code.code in wanted]


def names_for(selector: str) -> list[str]:
    """The rewrites a selector names (``SF201``, a prefix such as ``SF2``, a name such as
    ``cancel-unsqueeze-squeeze`` or ``cancel_unsqueeze_squeeze``, or a former name, which warns),
    in priority order; ``[]`` when it names none."""
    raw = selector.strip()
    name = raw.lower().replace("_", "-")
    if name in NAMES:
        return [name]
    if name in ALIASES:
        warnings.warn(deprecated(name, ALIASES[name]), DeprecatedNameWarning, stacklevel=2)
        return list(ALIASES[name])
    prefix = raw.upper()
    if prefix.startswith("SF"):
        return [r.name for r in REWRITES if r.code is not None and r.code.code.startswith(prefix)]
    return []


def deprecated(alias: str, names: Sequence[str]) -> str:
    codes = {r.name: r.code.code for r in REWRITES if r.code is not None}
    now = " and ".join(f"{codes[n]} {n}" for n in names)
    return f"rule name '{alias}' is deprecated; it now means {now} (see the CHANGELOG)"


def select(selectors: Sequence[str] | None = None) -> list[Rewrite]:
    """The rewrites ``selectors`` name (see ``names_for``), in priority order whatever the order
    given; all of them for None. A selector naming no rewrite is a usage error, and so is the
    dead-node sweep (SF205), which always follows the chosen rewrites."""
    if selectors is None:
        return [r() for r in REWRITES]
    wanted: set[str] = set()
    sweep = DeadNodes.code.code if DeadNodes.code is not None else ""
    for raw in selectors:
        s = raw.strip()
        if not s:
            continue
        if s.lower().replace("_", "-") == DeadNodes.name or s.upper() == sweep:
            raise UsageError(f"--rules {s}: not a rule to select; nodes a rewrite leaves unread are "
                             "always removed, and a model with nothing to rewrite has none")
        found = names_for(s)
        if not found:
            raise UsageError(f"unknown rule '{s}'; choose codes (SF201), prefixes (SF2) or names: "
                             f"{', '.join(NAMES)}")
        wanted.update(found)
    return [r() for r in REWRITES if r.name in wanted]


__all__ = [
    "ALIASES", "ALL", "CODES", "NAMES", "REPAIRS", "REWRITES", "deprecated", "discover", "for_codes", "names_for",
    "select",
]
