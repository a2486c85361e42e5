"""Hadoop's local file system without forks (java/sqlwin/hadoop/, sqlwin.session()'s LOCAL_FS).

The jar is what java/ builds; a local session uses it; and it answers as Hadoop's own local file
system does -- the same file and directory modes, the same link status for a file, a directory, a
symbolic link, a dangling link and a missing path -- checked side by side through the JVM.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import sys

import pytest

import sqlwin

sqlwin.session  # noqa: B018 - the package's lazy attribute binds the function (see thriftserver._session_module)
LOCAL_FS, LOCAL_FS_JAR = sys.modules["sqlwin.session"].LOCAL_FS, sys.modules["sqlwin.session"].LOCAL_FS_JAR
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (shutil.which("javac") and shutil.which("jar")), reason="needs a JDK to build java/")
def test_the_shipped_jar_is_built_from_the_sources(tmp_path):
    rebuilt = tmp_path / "rebuilt.jar"
    subprocess.run([str(ROOT / "java" / "build.sh"), str(rebuilt)], check=True, capture_output=True,
                   env={**os.environ, "PYTHON": os.environ.get("PYSPARK_PYTHON", "python")})
    assert rebuilt.read_bytes() == LOCAL_FS_JAR.read_bytes(), "sqlwin/jars/ is stale: run java/build.sh"


def test_a_local_session_uses_it(spark):
    jvm = spark._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in LOCAL_FS.items():
        assert conf.get(key.removeprefix("spark.hadoop.")) == value
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == "sqlwin.hadoop.NioLocalFileSystem"
    assert fs.getRawFileSystem().getClass().getName() == "sqlwin.hadoop.NioRawLocalFileSystem"
    context = jvm.org.apache.hadoop.fs.FileContext.getLocalFSFileContext(conf)
    assert context.getDefaultFileSystem().getClass().getName() == "sqlwin.hadoop.NioLocalFs"


def _hadoops(spark):
    """(sqlwin's, Hadoop's own) local file systems, both checksummed."""
    jvm = spark._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    ours = jvm.sqlwin.hadoop.NioLocalFileSystem()
    theirs = jvm.org.apache.hadoop.fs.LocalFileSystem()
    for fs in (ours, theirs):
        fs.initialize(jvm.java.net.URI("file:///"), conf)
    return ours, theirs


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_files_and_directories_get_hadoops_modes(spark, tmp_path):
    jvm = spark._jvm
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission
    modes = {}
    for name, fs in zip(("ours", "theirs"), _hadoops(spark)):
        root = tmp_path / name
        def at(*parts):
            return jvm.org.apache.hadoop.fs.Path(str(root.joinpath(*parts)))
        fs.create(at("a", "b", "file")).close()  # parents made on the way
        fs.mkdirs(at("dir"))
        fs.mkdirs(at("private"), permission(0o700))
        (root / "chmod").write_text("x")
        fs.setPermission(at("chmod"), permission(0o640))
        fs.mkdirs(at("sticky"))
        fs.setPermission(at("sticky"), permission(0o1777))
        modes[name] = {str(p.relative_to(root)): _mode(p) for p in sorted(root.rglob("*"))}
    assert modes["ours"] == modes["theirs"]
    # written out (a test that would pass with every mode 0): what Hadoop's umask 022 gives
    assert modes["ours"]["a/b/file"] == 0o644 and modes["ours"]["dir"] == 0o755
    assert modes["ours"]["private"] == 0o700 and modes["ours"]["chmod"] == 0o640
    assert modes["ours"]["sticky"] == 0o1777


def test_link_status_is_hadoops(spark, tmp_path):
    jvm = spark._jvm
    (tmp_path / "file").write_text("twelve bytes")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dead").symlink_to(tmp_path / "missing")
    ours, theirs = _hadoops(spark)

    def status(fs, name):
        try:
            found = fs.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(str(tmp_path / name)))
        except Exception as err:  # noqa: BLE001 - py4j's error: its Java class is the answer
            return type(err).__name__, str(err.java_exception.getClass().getName())
        target = str(found.getSymlink()) if found.isSymlink() else None
        return found.isDirectory(), found.isSymlink(), found.getLen() if not found.isSymlink() else None, \
            target, str(found.getPath())

    for name in ("file", "dir", "link", "dead", "missing"):
        assert status(ours, name) == status(theirs, name), name
    assert status(ours, "file")[:3] == (False, False, 12)
    assert status(ours, "link")[1:4] == (True, None, f"file:{tmp_path / 'file'}")
    assert status(ours, "missing") == ("Py4JJavaError", "java.io.FileNotFoundException")


def test_only_a_master_that_runs_tasks_in_this_jvm_gets_it():
    choose = sys.modules["sqlwin.session"].local_file_system_settings
    assert choose("local[2]", {})["spark.hadoop.fs.file.impl"] == "sqlwin.hadoop.NioLocalFileSystem"
    assert choose("local[*]", {})["spark.driver.extraClassPath"] == str(LOCAL_FS_JAR)
    assert choose("local", {}) != {}
    for master in ("local-cluster[2,1,1024]", "spark://127.0.0.1:7077", "yarn"):
        assert choose(master, {}) == {}, master
    assert choose("local[2]", {"spark.hadoop.fs.file.impl": "mine"}) == {}  # the user's own wins
    kept = choose("local[2]", {"spark.driver.extraClassPath": "/opt/a.jar"})["spark.driver.extraClassPath"]
    assert kept == f"/opt/a.jar{os.pathsep}{LOCAL_FS_JAR}"
