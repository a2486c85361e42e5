"""features/README.md's table of covered inventory IDs agrees with the scenarios' tags."""

from __future__ import annotations

import re
from pathlib import Path

FEATURES = Path(__file__).resolve().parent.parent / "features"


def listed() -> dict[str, tuple[str, str]]:
    rows = re.findall(r"^\| ([A-Z]{2}-\d{2}) \| (\S+\.feature) \| (.+?) \|$", (FEATURES / "README.md").read_text(), re.M)
    return {item: (file, scenario) for item, file, scenario in rows}


def tagged() -> dict[str, dict[str, list[str]]]:
    """ID -> feature file -> scenario names carrying its tag."""
    found: dict[str, dict[str, list[str]]] = {}
    for feature in FEATURES.glob("*.feature"):
        tags: list[str] = []
        for line in feature.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("@"):
                tags += re.findall(r"@([A-Z]{2}-\d{2})", stripped)
            elif stripped.startswith(("Scenario:", "Scenario Outline:")):
                name = stripped.split(":", 1)[1].strip()
                for tag in tags:
                    found.setdefault(tag, {}).setdefault(feature.name, []).append(name)
                tags = []
    return found


def test_every_listed_id_has_its_scenario():
    scenarios = tagged()
    for item, (file, scenario) in listed().items():
        assert scenario in scenarios.get(item, {}).get(file, []), f"{item}: no scenario '{scenario}' tagged in {file}"


def test_every_tag_is_listed():
    assert set(tagged()) <= set(listed()), f"tags missing from features/README.md: {set(tagged()) - set(listed())}"
