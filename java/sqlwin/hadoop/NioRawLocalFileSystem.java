package sqlwin.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per file.
 *
 * Without Hadoop's native library (pip's PySpark has none), RawLocalFileSystem runs `chmod` for
 * every file and directory it creates and `readlink` for every getFileLinkStatus (FileContext's
 * create and rename): a fork of the JVM each, about a dozen per streaming micro-batch (offsets,
 * commits, state changelogs, their .crc files, the sink's files). This class does the same two
 * things through java.nio; everything else, and every case it does not cover (a sticky bit, a
 * symbolic link), is Hadoop's own code.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  /** Bit i of a POSIX mode (0 = others' execute ... 8 = owner's read). */
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    if ((mode & ~0777) != 0) {
      super.setPermission(p, permission);
      return;
    }
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        set.add(BITS[bit]);
      }
    }
    Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    java.nio.file.Path path = pathToFile(f).toPath();
    if (Files.isSymbolicLink(path)) {
      return super.getFileLinkStatus(f);
    }
    if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
      throw new FileNotFoundException("File " + f + " does not exist");
    }
    return getFileStatus(f);
  }
}
