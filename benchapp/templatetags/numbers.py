"""Number filters for templates, the same formats as the pivot tables
(benchapp.analysis.tables.fmt): `{{ value|num }}` gives "3,732" or "10,170.4" (never
"1.017e+04"); `{{ fraction|pct }}` gives "-34.4 %" for -0.344."""

from django import template

from benchapp.analysis.tables import fmt

register = template.Library()


@register.filter
def num(value) -> str:
    """4 significant digits, thousands separated; "" for None or text."""
    return fmt(value) if isinstance(value, (int, float)) else ""


@register.filter
def pct(value) -> str:
    """A signed relative change as a percentage with one decimal."""
    return f"{value * 100:+.1f} %" if isinstance(value, (int, float)) else ""
