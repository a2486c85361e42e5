#!/bin/sh
# The venv benchmarks/flink_nexmark.py runs in (Flink 2.3's PyFlink; Java 17 on the PATH or in
# JAVA_HOME). Its own venv, not sqlwin's .venv: apache-flink pins py4j, numpy and pandas
# versions that clash with pyspark. Then:
#   PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/nexmark.py --flink /work/flinkenv/bin/python
set -eu
VENV=${1:-/work/flinkenv}
PYTHON=${PYTHON:-python3.11}  # apache-flink 2.3.0 says Requires-Python >= 3.9; used here with 3.11
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip
"$VENV/bin/pip" install apache-flink==2.3.0
"$VENV/bin/python" -c "import pyflink, pyarrow; print('PyFlink', pyflink.version.__version__, 'pyarrow', pyarrow.__version__)"
java -version
