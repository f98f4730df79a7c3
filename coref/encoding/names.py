"""Person-name parsing of the encoding: given names, initials, coauthor keys, venue acronyms."""
from __future__ import annotations

from coref.blocking import normalize_name

__all__ = ["MAX_INITIALS", "acronym", "coauthor_key", "coauthor_key_of", "name_parts"]

#: at most this many given-name initials are kept (5 bits each, packed into an int32)
MAX_INITIALS = 6


def name_parts(name):
    """(full first name or "", initials string, full given string or "") of a person name.

    Given names are every token but the last; hyphenated parts each give an initial
    (``"Tsong-Li"`` -> ``"tl"``) and are joined in the full forms (``"tsongli"``).
    """
    tokens = normalize_name(name).split()
    if len(tokens) < 2:
        return "", "", ""
    given = tokens[:-1]
    initials = "".join(p[0] for g in given for p in g.split("-") if p)[:MAX_INITIALS]
    first = given[0].replace("-", "")
    first = first if len(first) >= 2 else ""
    full = "".join(g.replace("-", "") for g in given) if first else ""
    return first, initials, full


def coauthor_key(name):
    """(initial + last name key, full first name or "") of a coauthor name."""
    return coauthor_key_of(normalize_name(name).replace("-", ""))


def coauthor_key_of(norm):
    """:func:`coauthor_key` of a name already normalised (hyphens dropped)."""
    tokens = norm.split()
    if not tokens:
        return "", ""
    if len(tokens) == 1:
        return tokens[0], ""
    first = tokens[0] if len(tokens[0]) >= 2 else ""
    return tokens[0][0] + " " + tokens[-1], first


def acronym(ws):
    return "".join(w[0] for w in ws) if len(ws) >= 2 else ""
