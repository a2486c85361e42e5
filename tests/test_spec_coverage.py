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
    for file, name, tags in scenario_tags():
        for tag in tags:
            if re.fullmatch(r"[A-Z]{2}-\d{2}", tag):
                found.setdefault(tag, {}).setdefault(file, []).append(name)
    return found


def test_every_listed_id_has_its_scenario():
    scenarios = tagged()
    for item, (file, scenario) in listed().items():
        assert scenario in scenarios.get(item, {}).get(file, []), f"{item}: no scenario '{scenario}' tagged in {file}"


# What the specification issue covers: every Bytewax concepts (BW), Quix (QX) and VoltSP (VS)
# item of SPEC_INVENTORY.md and the Bytewax API items without triggers or joins (BX-03 fold,
# BX-04 reduce and BX-08 join_window come with the Apex items in a later issue).
SPECIFIED_ITEMS = (
    [f"BW-{n:02d}" for n in range(1, 14)]
    + [f"QX-{n:02d}" for n in range(1, 26)]
    + [f"VS-{n:02d}" for n in range(1, 18)]
    + [f"BX-{n:02d}" for n in (1, 2, 5, 6, 7, 9, 10)]
)
INVENTORY = FEATURES.parent.parent / "shared" / "SPEC_INVENTORY.md"


def test_every_specified_item_has_a_scenario():
    listed_items, scenarios = listed(), tagged()
    missing = [item for item in SPECIFIED_ITEMS if item not in listed_items or item not in scenarios]
    assert not missing, f"inventory items without a tagged scenario listed in features/README.md: {missing}"


def test_the_specified_items_are_the_inventorys():
    """The list above is the inventory's (checked where the shared documents sit beside the repo)."""
    if not INVENTORY.exists():
        import pytest

        pytest.skip(f"{INVENTORY} is not beside this checkout")
    inventory = set(re.findall(r"\*\*((?:BW|QX|VS|BX)-\d{2})\*\*", INVENTORY.read_text()))
    assert inventory - {"BX-03", "BX-04", "BX-08"} == set(SPECIFIED_ITEMS)


def test_every_tag_is_listed():
    assert set(tagged()) <= set(listed()), f"tags missing from features/README.md: {set(tagged()) - set(listed())}"


# Items whose behaviour depends on arrival order: each needs a scenario run in both modes.
ARRIVAL_ORDER_ITEMS = (
    [f"BW-{n:02d}" for n in (1, 2, 3, 8, 9, 10, 11, 12, 13)]
    + [f"QX-{n:02d}" for n in (3, 4, 6, 11, 15, 16, 17, 18, 19, 20)]
    + [f"BX-{n:02d}" for n in (1, 6, 7)]
    + [f"VS-{n:02d}" for n in range(1, 17)]
)


def modes_by_item() -> dict[str, set[str]]:
    """ID -> the modes (Examples `mode` column values) of its tagged Scenario Outlines."""
    modes: dict[str, set[str]] = {}
    for feature in FEATURES.glob("*.feature"):
        tags: list[str] = []
        current: list[str] = []
        in_examples = False
        header: list[str] | None = None
        for line in feature.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("@"):
                tags += re.findall(r"@([A-Z]{2}-\d{2})", stripped)
            elif stripped.startswith(("Scenario:", "Scenario Outline:")):
                current, tags, in_examples, header = tags, [], False, None
            elif stripped.startswith("Examples:"):
                in_examples, header = True, None
            elif in_examples and stripped.startswith("|"):
                cells = [c.strip() for c in stripped.strip("|").split("|")]
                if header is None:
                    header = cells
                elif "mode" in header:
                    for item in current:
                        modes.setdefault(item, set()).add(cells[header.index("mode")].split()[0])
    return modes


def test_arrival_order_items_run_in_replay_and_streaming():
    modes = modes_by_item()
    missing = {item: sorted(modes.get(item, set())) for item in ARRIVAL_ORDER_ITEMS
               if not {"replay", "streaming"} <= modes.get(item, set())}
    assert not missing, f"items without a scenario in both replay and streaming mode: {missing}"


# Concept tags (features/README.md, "By concept"): what a scenario is about, beside its source.
CONCEPTS = ("tumble", "hop", "cumulate", "session", "slide", "count_window", "global", "late", "emit_early",
            "emit_changes", "retracting", "join", "chain", "idle", "processing_time", "restart", "error",
            "grouping_sets", "top_n")


def scenario_tags() -> list[tuple[str, str, list[str]]]:
    """(feature file, scenario name, the scenario's own tags) for every scenario."""
    found = []
    for feature in sorted(FEATURES.glob("*.feature")):
        tags: list[str] = []
        for line in feature.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("@"):
                tags += re.findall(r"@([\w-]+)", stripped)
            elif stripped.startswith(("Scenario:", "Scenario Outline:")):
                found.append((feature.name, stripped.split(":", 1)[1].strip(), tags))
                tags = []
            elif stripped.startswith("Feature:"):
                tags = []
    return found


def test_every_scenario_has_a_concept_tag():
    untagged = [f"{file}: {name}" for file, name, tags in scenario_tags() if not set(tags) & set(CONCEPTS)]
    assert not untagged, "scenarios without a concept tag: " + "; ".join(untagged)


def test_the_concept_index_lists_each_concepts_scenarios():
    index = sorted(re.findall(r"^\| @(\w+) \| (\S+\.feature) \| (.+?) \|$", (FEATURES / "README.md").read_text(), re.M))
    tagged_rows = sorted((tag, file, name) for file, name, tags in scenario_tags() for tag in tags if tag in CONCEPTS)
    assert index == tagged_rows, (f"missing from features/README.md: {sorted(set(tagged_rows) - set(index))}; "
                                  f"listed but not tagged: {sorted(set(index) - set(tagged_rows))}")
    lowercase = {t for _, _, tags in scenario_tags() for t in tags if re.fullmatch(r"[a-z_]+", t)}
    assert lowercase <= set(CONCEPTS), f"concept tags not in CONCEPTS: {lowercase - set(CONCEPTS)}"
