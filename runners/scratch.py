"""A size-capped scratch directory: a file system of its own, mounted on it.

A root worker mounts a fresh ext4 image of the operator's size
(BENCHBOARD_SANDBOX_SCRATCH_MB) on a cell's scratch directory, through a loop
device: the tool writes a disk as it did before (fio on the scratch
directory still measures a disk, not memory as a tmpfs would), and a tool
that fills it gets ENOSPC in its own file system while the worker's disk is
untouched. The image is sparse (it takes only what was written) and is
deleted with the directory.

Where no image can be mounted (not root, no loop device, no mkfs.ext4),
Scratch.mount() returns None and the tool gets RLIMIT_FSIZE instead
(runners/cgroups.py): each file is capped, not the directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from runners.limits import MB

# ext4's own overhead (journal, inode tables, lost+found): the image is this
# much larger than the limit, so the limit's worth of files fits.
OVERHEAD_MB = 16
OVERHEAD_SHARE = 0.06
# Below this much free space after a failed run, the scratch was full.
FULL_BYTES = 4 * MB


class Scratch:
    """An ext4 image mounted on a directory (see the module docstring)."""

    def __init__(self, path: str, image: str, limit_mb: int):
        self.path, self.image, self.limit_mb = path, image, limit_mb

    @classmethod
    def mount(cls, path: str, limit_mb: int, ids: tuple[int, int] | None) -> Scratch | None:
        """Mount a limit_mb file system on the (empty) directory path; None when not possible."""
        if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
            return None
        image = path.rstrip("/") + ".scratch"
        size = int(limit_mb * (1 + OVERHEAD_SHARE) + OVERHEAD_MB) * MB
        uid, gid = ids or (0, 0)
        owner = f"{uid}:{gid}"
        try:
            fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.ftruncate(fd, size)
            os.close(fd)
            _quiet(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={owner}", image])
            _quiet(["mount", "-o", "loop,nosuid,nodev", image, path])
        except (OSError, subprocess.SubprocessError):
            _unlink(image)
            return None
        os.chmod(path, 0o700)
        try:
            os.rmdir(os.path.join(path, "lost+found"))
        except OSError:
            pass
        return cls(path, image, limit_mb)

    def full(self) -> bool:
        """True when (almost) nothing is left: a failed write was ENOSPC."""
        try:
            stats = os.statvfs(self.path)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < FULL_BYTES

    def breach(self) -> str:
        return f"scratch directory full: limit {self.limit_mb} MB (BENCHBOARD_SANDBOX_SCRATCH_MB)"

    def describe(self) -> str:
        return f"scratch {self.limit_mb} MB"

    def unmount(self) -> None:
        """Unmount (lazily if still busy), then delete the image and its loop device."""
        try:
            _quiet(["umount", self.path])
        except (OSError, subprocess.SubprocessError):
            try:
                _quiet(["umount", "-l", self.path])
            except (OSError, subprocess.SubprocessError):
                pass
        _unlink(self.image)


def _quiet(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
