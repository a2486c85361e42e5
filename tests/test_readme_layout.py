"""The README's `## Layout` names every module under sqlwin/, each on a line of its own, and no
module that is not there.

A module is every `.py` file under sqlwin/; an empty `__init__.py` (a package marker with nothing
in it) is left out, one with code or a docstring is a module like any other. A line names a module
when it starts with the module's path from the repository's root (`sqlwin/sql/plan.py  ...`).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMED = re.compile(r"^(sqlwin/\S+\.py)\s")
MENTIONED = re.compile(r"\bsqlwin/[\w/]+\.py\b")


def layout_section(readme: str) -> str:
    start = readme.index("\n## Layout\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end >= 0 else len(readme)]


def named_modules(section: str) -> list[str]:
    return [m.group(1) for line in section.splitlines() if (m := NAMED.match(line))]


def modules(root: Path) -> set[str]:
    found = set()
    for path in (root / "sqlwin").rglob("*.py"):
        if path.name == "__init__.py" and not path.read_text(encoding="utf-8").strip():
            continue
        found.add(path.relative_to(root).as_posix())
    return found


def test_the_layout_names_each_module_once_and_only_modules_that_exist():
    section = layout_section((ROOT / "README.md").read_text(encoding="utf-8"))
    named = named_modules(section)
    actual = modules(ROOT)
    assert sorted(actual - set(named)) == [], "modules the README's Layout does not name"
    assert sorted(set(named) - actual) == [], "the README's Layout names modules that do not exist"
    assert sorted(p for p in set(named) if named.count(p) > 1) == [], "named on more than one line"
    assert sorted(set(MENTIONED.findall(section)) - actual) == [], "mentioned in passing, but not there"


def test_the_reading_of_the_section(tmp_path):
    # A tree and a README written here, so that the checks above are seen to catch what they say.
    for name, text in [("sqlwin/__init__.py", ""), ("sqlwin/a.py", "x = 1\n"), ("sqlwin/sub/__init__.py", '"""doc"""\n'),
                       ("sqlwin/sub/b.py", ""), ("sqlwin/sub/__pycache__/b.cpython-311.pyc", "")]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert modules(tmp_path) == {"sqlwin/a.py", "sqlwin/sub/__init__.py", "sqlwin/sub/b.py"}
    readme = ("# x\n\n## Layout\n\n```\nthe first layer:\nsqlwin/a.py        what a holds\n"
              "sqlwin/sub/b.py    what b holds, beside sqlwin/a.py\n                   (a second line of b)\n```\n"
              "\n## Docs\n\nsqlwin/c.py  outside the section\n")
    section = layout_section(readme)
    assert named_modules(section) == ["sqlwin/a.py", "sqlwin/sub/b.py"]
    assert MENTIONED.findall(section) == ["sqlwin/a.py", "sqlwin/sub/b.py", "sqlwin/a.py"]
