"""Lease owners: who holds a row, and whether that holder is provably dead.

An owner string is `host|pid|start|space`: `start` is the process's start
time as the kernel reports it (field 22 of /proc/<pid>/stat, clock ticks
since boot) and `space` names the pid space the pid is valid in — the
kernel's boot id and the pid namespace's inode. Two containers may share a
hostname while their pids mean different processes; only a holder in the
*same* pid space whose pid is gone, or now belongs to a process started at
another time (a reused pid), is dead: its lease counts as expired at once.
Any other holder — another host, another container, an owner written by an
older version without a space — is never judged; its lease runs out by the
clock.

The start time is read from /proc, not psutil: owner strings are stored in
ledgers, and psutil gives a process's start as seconds since the epoch
(boot time plus these ticks, as a float), so an owner written with ticks by
a running holder would no longer compare equal and a live holder could be
judged dead. The pid space (boot id, pid namespace) has no psutil call
either, and on a kernel without /proc nobody is judged, as now.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["LeaseOwner", "holder_alive", "lane_owner", "lanes_process", "pid_space", "this_process"]


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split
    # after its closing parenthesis, then field 22 is the 20th field there.
    fields = stat.rsplit(")", 1)[-1].split()
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        # A zombie (killed, not yet reaped) holds nothing any more.
        return None
    return fields[19]


@dataclass(frozen=True, slots=True)
class LeaseOwner:
    host: str
    pid: int
    start: str
    space: str | None = None

    def __str__(self) -> str:
        return f"{self.host}|{self.pid}|{self.start}|{self.space or ''}"

    @classmethod
    def parse(cls, text: str) -> LeaseOwner | None:
        parts = text.split("|")
        if len(parts) not in (3, 4) or not parts[1].isdigit():
            return None
        space = parts[3] if len(parts) == 4 and parts[3] else None
        return cls(parts[0], int(parts[1]), parts[2], space)


@lru_cache(maxsize=1)
def pid_space() -> str | None:
    """This process's pid space: boot id + pid namespace, or None where the
    kernel does not say (then no holder is ever judged dead)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip().replace("-", "")[:16]
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    inode = namespace.partition("[")[2].rstrip("]")
    if not boot or not inode.isdigit():
        return None
    return f"{boot}.{inode}"


@lru_cache(maxsize=1)
def _host() -> str:
    """This host's name in owner strings. RECLAIM_OWNER_HOST overrides it:
    hosts that share a hostname (cloned VMs, containers with a fixed name)
    must not share an identity, and the tests run "several hosts" on one."""
    return os.environ.get("RECLAIM_OWNER_HOST") or socket.gethostname()


def this_process(tag: str = "") -> LeaseOwner:
    """The owner identity of the running process.

    Without /proc (not Linux), a random token stands in for the start time:
    liveness then cannot be proven, so such leases only expire by the clock.
    `tag` tells apart several engines inside one process (tests).
    """
    pid = os.getpid()
    start = _start_ticks(pid) or f"u{uuid.uuid4().hex[:12]}"
    return LeaseOwner(_host(), pid, start + (f"-{tag}" if tag else ""), pid_space())


def holder_alive(owner_text: str) -> bool | None:
    """True/False when provable on this host; None when it cannot be known."""
    owner = LeaseOwner.parse(owner_text)
    if owner is None or owner.host != _host() or owner.start.startswith("u"):
        return None
    here = pid_space()
    if owner.space is None or here is None or owner.space != here:
        return None  # its pid means another process here, or nothing: cannot judge
    start = owner.start.split("-", 1)[0]
    current = _start_ticks(owner.pid)
    if current is None:
        return False
    if current != start:
        return False
    # Same process. An in-process tag (tests) cannot be judged further.
    return True


def lane_owner(owner: str, lane: int) -> str:
    """The owner of a process's lane `lane` (1, 2 …; core/engine/lanes.py):
    `owner` with `-lane<n>` after its start time, so the lane is judged
    alive or dead with its process (`holder_alive` reads the start up to
    the first `-`). An owner that does not parse gets the tag at its end."""
    if LeaseOwner.parse(owner) is None:
        return f"{owner}-lane{lane}"
    parts = owner.split("|")
    parts[2] = f"{parts[2]}-lane{lane}"
    return "|".join(parts)


def lanes_process(owner: str) -> str:
    """The owner of the process a lane's `owner` belongs to (itself when it
    is no lane's): the fleet counts a process's lanes as its own leases."""
    if LeaseOwner.parse(owner) is None:
        return _untagged(owner)
    parts = owner.split("|")
    parts[2] = _untagged(parts[2])
    return "|".join(parts)


def _untagged(text: str) -> str:
    """`text` without a lane's `-lane<n>` at its end."""
    head, tag, number = text.rpartition("-lane")
    return head if tag and number.isdigit() else text
