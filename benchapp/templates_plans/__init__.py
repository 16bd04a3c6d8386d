"""The five reference scenarios (../shared/scenarios.md) as plan templates.

Each YAML file here is the scenario's plan verbatim; the first comment line
is its title. S1 and S3 provision cloud resources: they load into the
builder like the others and run once provisioning is configured.
"""

from __future__ import annotations

from pathlib import Path

from runners.plan import load_plan

FOLDER = Path(__file__).resolve().parent


def plan_templates() -> list[dict]:
    """[{"slug", "title", "document"}] sorted by file name (S1..S5)."""
    return [_read(path) for path in sorted(FOLDER.glob("*.yaml"))]


def get_template(slug: str) -> dict | None:
    path = FOLDER / f"{slug}.yaml"
    if not slug.replace("-", "").isalnum() or not path.is_file():
        return None
    return _read(path)


def _read(path: Path) -> dict:
    text = path.read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    # load_plan's plain document: YAML 1.1 reads `on:` as True, load_plan as "on".
    return {"slug": path.stem, "title": title, "document": load_plan(text).document}
