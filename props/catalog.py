"""Every property name the loader accepts, listed from the loader's own tables (``props.keys``).

The user reference (docs/properties.md) documents exactly this list, and tests/test_docs.py checks
both directions, so the reference follows the loader: a key added to ``GLOBAL_KEYS``,
``SECTION_KEYS``, ``ALIASES``, ``RULE_ATTRS`` or the ignored sets appears here without further
change, and the documentation test fails until the reference describes it.

Families of keys are written with placeholders: ``<T>`` a qualified table name, ``<C>`` a column
name, ``<prefix>`` an XML namespace prefix, ``<name>`` any name, ``<rule>`` an XML rule of any
type, ``<txrule>`` / ``<oprule>`` / ``<colrule>`` one of that type. The loader recognises the
families by their form (``props.loader._section_of``, ``props.sections.common.userdefs`` and
``dateformats``, ``props.sections.xml``); the documentation test loads an instance of each, which
keeps ``FAMILIES`` honest.
"""

from __future__ import annotations

from dataclasses import dataclass

from props.keys import (
    ALIASES,
    GLOBAL_KEYS,
    IGNORED_QUIET,
    JNDI_HEADS,
    JNDI_PREFIX,
    PARSERS,
    RULE_ALIASES,
    RULE_ATTRS,
    SECTION_KEYS,
)

# Keys recognised by their form rather than listed: per-table and per-column date formats,
# user-defined tables and columns (declared by <p>.userdefs.tables), XML namespace prefixes,
# JNDI entries and environment.
FAMILIES: tuple[str, ...] = (
    *(f"{p}.{family}" for p in PARSERS
      for family in ("dateformat.<T>", "dateformat.<T>.<C>", "userdefs.<T>.columns",
                     "userdefs.<T>.<C>")),
    "xml.namespace.<prefix>",
    *(f"{head}.<name>" for head in JNDI_HEADS),
    f"{JNDI_PREFIX}<name>",
)


@dataclass(frozen=True, slots=True)
class PropertyName:
    """One accepted name or family; ``canonical`` is what an alias stands for."""

    name: str
    kind: str  # 'property' | 'alias' | 'ignored'
    canonical: str | None = None


def _holders(attr: str) -> list[str]:
    """``<rule>`` when every rule type has ``attr``, else ``<txrule>``, ``<oprule>``, … that do."""
    types = [t for t, allowed in RULE_ATTRS.items() if attr in allowed]
    return ["<rule>"] if len(types) == len(RULE_ATTRS) else [f"<{t}rule>" for t in types]


def _rule_names() -> list[PropertyName]:
    attrs = sorted({attr for allowed in RULE_ATTRS.values() for attr in allowed})
    names = [PropertyName(f"{holder}.{attr}", "property")
             for attr in attrs for holder in _holders(attr)]
    names += [PropertyName(f"{holder}.{alias}", "alias", f"{holder}.{canonical}")
              for alias, canonical in RULE_ALIASES.items() for holder in _holders(canonical)]
    return names


def accepted_properties() -> tuple[PropertyName, ...]:
    """Every name the loader accepts, sorted by name: properties, families, aliases, ignored."""
    names = [PropertyName(key, "property") for key in GLOBAL_KEYS]
    names += [PropertyName(key, "property") for keys in SECTION_KEYS.values() for key in keys]
    names += [PropertyName(family, "property") for family in FAMILIES]
    names += [PropertyName(alias, "alias", canonical) for alias, canonical in ALIASES.items()]
    names += _rule_names()
    names += [PropertyName(key, "ignored") for key in IGNORED_QUIET]
    return tuple(sorted(names, key=lambda n: n.name))
