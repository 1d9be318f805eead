"""Writing files so that a failed run never destroys what was there.

Every writer of the package (CLI outputs, :func:`~nx_gsm.interop.files.write_graph`, benchmark
reports) writes a temporary file in the target's folder and renames it over the target only when
the whole file was written: an error, a full disk or Ctrl-C leaves an existing file byte for byte
as it was, and no half-written file ever carries the target's name. The rename is atomic on POSIX
and Windows because both names are in one folder (one file system).
"""

from __future__ import annotations

import contextlib
import os
import secrets

__all__ = ["AtomicFile", "atomic_open", "atomic_path"]


class AtomicFile:
    """A temporary file beside ``path`` that :meth:`commit` renames over ``path``.

    Parameters
    ----------
    path : str or path-like
        The target. A symbolic link is followed, so the file it points to is replaced.

    Attributes
    ----------
    path : str
        The target (links resolved).
    tmp : str
        The temporary file to write: same folder, same extension (so tools that pick a format
        by extension, such as Matplotlib's ``savefig``, pick the target's), created empty with
        the mode a new file gets, or the target's mode when it exists.

    Examples
    --------
    >>> import os, tempfile
    >>> from nx_gsm.interop.atomic import AtomicFile
    >>> target = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> f = AtomicFile(target)
    >>> with open(f.tmp, "w") as fh:
    ...     _ = fh.write("done")
    >>> os.path.exists(target)
    False
    >>> f.commit()
    >>> open(target).read()
    'done'
    """

    def __init__(self, path):
        self.path = os.path.realpath(os.fspath(path))
        folder, base = os.path.split(self.path)
        ext = os.path.splitext(base)[1]
        # O_EXCL on a random name: never another process's file; mode 0o666 lets the umask
        # decide, as for any new file
        while True:
            tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp{ext}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            break
        os.close(fd)
        self.tmp = tmp
        self.done = False

    def commit(self):
        """Rename the temporary file over the target (keeping the target's permissions)."""
        if self.done:
            return
        with contextlib.suppress(FileNotFoundError):
            os.chmod(self.tmp, os.stat(self.path).st_mode & 0o7777)
        os.replace(self.tmp, self.path)
        self.done = True

    def discard(self):
        """Remove the temporary file; the target stays as it was."""
        if self.done:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)
        self.done = True


@contextlib.contextmanager
def atomic_path(path):
    """A temporary path to write in place of ``path``; it replaces ``path`` only if the block
    finishes without an exception (otherwise it is removed).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    context manager yielding str

    Examples
    --------
    >>> import os, tempfile
    >>> from nx_gsm.interop.atomic import atomic_path
    >>> target = os.path.join(tempfile.mkdtemp(), "fig.png")
    >>> with atomic_path(target) as tmp:
    ...     tmp.endswith(".png")
    True
    """
    f = AtomicFile(path)
    try:
        yield f.tmp
    except BaseException:
        f.discard()
        raise
    f.commit()


@contextlib.contextmanager
def atomic_open(path, mode="w", **kwargs):
    """:func:`open` for writing, through :func:`atomic_path`: the target changes only once the
    file is complete and closed.

    Parameters
    ----------
    path : str or path-like
    mode : str
        A writing mode (``"w"``, ``"wb"``).
    **kwargs
        Passed to :func:`open` (``encoding``, ``newline``...).

    Returns
    -------
    context manager yielding the open file

    Examples
    --------
    >>> import os, tempfile
    >>> from nx_gsm.interop.atomic import atomic_open
    >>> target = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> with atomic_open(target, encoding="utf-8") as fh:
    ...     _ = fh.write("x")
    >>> open(target).read()
    'x'
    """
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh
