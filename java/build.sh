#!/bin/sh
# Rebuild sqlwin/jars/sqlwin-local-fs.jar from java/sqlwin/hadoop/*.java (needs a JDK 17 and the
# venv's PySpark for Hadoop's classes); `build.sh OUT.jar` writes elsewhere. Reproducible: the same
# javac gives the same bytes. tests/test_local_fs.py checks the jar matches these sources.
set -e
here=$(cd "$(dirname "$0")" && pwd)
jars=$("${PYTHON:-$here/../.venv/bin/python}" -c "import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")
out=$(mktemp -d)
javac --release 17 -nowarn -cp "$(ls "$jars"/hadoop-client-api-*.jar)" -d "$out" "$here"/sqlwin/hadoop/*.java
jar --create --date=2026-01-01T00:00:00Z --file "${1:-$here/../sqlwin/jars/sqlwin-local-fs.jar}" -C "$out" sqlwin
rm -rf "$out"
