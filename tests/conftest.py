"""One SparkSession for the whole test run, the Gherkin step library and the deploy tests' servers
(tests/support/deploy.py: one standalone cluster per run, a Connect server per module).

The session is local[2], UTC, two shuffle partitions and no UI (see sqlwin.session()).
"""

from __future__ import annotations

import pytest

import sqlwin

# tests.support.ahead before the steps: tests.steps.streams imports it (a plugin imported before pytest
# registers it is not assertion-rewritten, and pytest warns)
pytest_plugins = ["tests.support.ahead", "tests.steps.tables", "tests.steps.queries", "tests.steps.streams",
                  "tests.support.deploy", "tests.support.background"]


@pytest.fixture(scope="session")
def spark():
    session = sqlwin.session(app_name="sqlwin-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sw(spark):
    return sqlwin.attach(spark)


def pytest_configure(config):
    """Gherkin tags (@BW-04, @QX-08, ...) become pytest markers: `pytest -m QX-08` runs one item."""
    import re
    from pathlib import Path

    features = Path(__file__).resolve().parent.parent / "features"
    tags = set()
    for feature in features.rglob("*.feature"):
        tags.update(re.findall(r"@([\w-]+)", feature.read_text()))
    for tag in sorted(tags):
        config.addinivalue_line("markers", f"{tag}: scenarios tagged @{tag}")
