"""The files a sqlwin command reads and writes: the query file (or standard input), its
`-- sqlwin:table NAME=PATH` comments, --table / --source NAME=PATH registered as views by
extension (.csv, .json / .jsonl, .parquet, a directory), and the result written to --out or
printed as a table."""

from __future__ import annotations

import shutil
import sys
import tempfile
import typing as t
from pathlib import Path

from sqlwin.cli_errors import first_line
from sqlwin.errors import SqlwinUsageError
from sqlwin.sql.text import quote_identifier

FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def read_query(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as err:
        raise SqlwinUsageError(f"Cannot read the query file {path}: {err.strerror}",
                               hint="a path to a .sql file, or - to read standard input") from None


def declared_tables(query: str, query_path: str) -> list[str]:
    """`-- sqlwin:table NAME=PATH` comments, with PATH relative to the query file."""
    base = Path(query_path).parent if query_path != "-" else Path.cwd()
    specs = []
    for line in query.splitlines():
        marker = line.strip().removeprefix("--").strip()
        if marker.startswith("sqlwin:table "):
            name, _, path = marker.removeprefix("sqlwin:table ").strip().partition("=")
            specs.append(f"{name}={base / path}")
    return specs


def parse_tables(specs: list[str], option: str = "--table") -> dict[str, Path]:
    tables: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            example = "events=data/events.csv" if option == "--table" else "events=incoming/"
            raise SqlwinUsageError(f"{option} {spec} is not NAME=PATH", hint=f"{option} {example}")
        if not name.replace("_", "").isalnum():
            raise SqlwinUsageError(f"Table name {name!r} is not a plain identifier", hint="letters, digits and _")
        file = Path(path)
        if not file.exists():
            raise SqlwinUsageError(f"No such file for table {name}: {path}", hint="an existing file or directory")
        format_of(file)
        tables[name] = file
    return tables


def format_of(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None and path.is_dir():
        fmt = "parquet"
    if fmt is None:
        raise SqlwinUsageError(f"Cannot tell the format of {path} from its extension",
                               hint=", ".join(FORMATS) + " (a directory is read as parquet)")
    return fmt


def register_tables(spark, tables: dict[str, Path]) -> None:
    for name, path in tables.items():
        fmt = format_of(path)
        reader = spark.read.format(fmt)
        if fmt == "csv":
            # inferSchema turns ISO timestamps into TIMESTAMP and whole numbers into INT/BIGINT.
            reader = reader.option("header", True).option("inferSchema", True)
        try:
            frame = reader.load(str(path.resolve()))  # the JVM (or a Connect server) may have another cwd
            frame.schema  # noqa: B018 - reading the schema surfaces unreadable files here
        except Exception as err:
            raise SqlwinUsageError(f"Cannot read table {name} from {path}: {first_line(err)}",
                                   hint=f"a readable {fmt} file") from None
        frame.createOrReplaceTempView(quote_identifier(name))


def write_result(frame, out: Path) -> None:
    """Write the result at `out`, which check_out has allowed: absent, or replaceable (--overwrite)."""
    fmt = format_of(out) if out.suffix else "parquet"
    writer_options = {"header": "true"} if fmt == "csv" else {}
    if not out.suffix:
        if out.is_file() or out.is_symlink():
            out.unlink()
        mode = "overwrite" if out.exists() else "errorifexists"  # a directory holding only a previous result
        frame.write.mode(mode).format(fmt).options(**writer_options).save(str(out.resolve()))
        return
    # A path with an extension is one file: write one partition aside, then move it in place.
    with tempfile.TemporaryDirectory(prefix="sqlwin-out-") as tmp:
        frame.coalesce(1).write.mode("errorifexists").format(fmt).options(**writer_options).save(tmp + "/d")
        part = next(Path(tmp, "d").glob("part-*"))
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_dir() and not out.is_symlink():
            shutil.rmtree(out)  # a previous result written as a directory
        shutil.move(str(part), out)


def print_table(frame, limit: int) -> None:
    rows = frame.limit(limit + 1).collect()
    columns = frame.columns
    shown = rows[:limit]
    cells = [[_cell(row[i]) for i in range(len(columns))] for row in shown]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    more = " (more not shown: use --out or --limit)" if len(rows) > limit else ""
    print(f"({len(shown)} row{'s' if len(shown) != 1 else ''}{more})")


def _cell(value: t.Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float) and value.is_integer():
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value)
