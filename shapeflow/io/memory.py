"""Memory as a limit: what a step is about to allocate, checked against ``--max-memory`` and the
address-space limit (``ulimit -v``) before it allocates.

Running out in the middle of protobuf's parser or serializer does not end well: a MemoryError at
best, an ``EncodeError`` or a crash at worst. The large allocations of shapeflow are few and their
sizes known in advance (the file read, the parse, the serialized output), so each is checked first.
"""

from __future__ import annotations

from ..errors import LimitExceededError
from ..limits import Limits


def memory_in_use() -> tuple[int, int]:
    """(resident, address space) of this process in bytes, from /proc (0, 0 where unreadable)."""
    rss = vsz = 0
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmSize:"):
                    vsz = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return rss, vsz


def memory_room(max_memory: int) -> tuple[int, str]:
    """(bytes that may still be allocated, the flag that raises the bound): what ``max_memory``
    leaves on top of what the process holds, or what the address-space limit leaves, the lower."""
    rss, vsz = memory_in_use()
    flag = Limits.FLAGS["max_memory"]
    room = max_memory - rss
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return room, flag
    if soft != resource.RLIM_INFINITY and soft - vsz < room:
        return soft - vsz, f"{flag} and ulimit -v"
    return room, flag


def require_memory(need: int, max_memory: int, shown: str | None) -> None:
    """Raise ``LimitExceededError`` (SF006, exit 2) when ``need`` more bytes would not fit in
    ``max_memory`` on top of what the process holds, or in the address-space limit."""
    rss, vsz = memory_in_use()
    flag = Limits.FLAGS["max_memory"]
    if rss + need > max_memory:
        raise LimitExceededError("max-memory", rss + need, flag, file=shown)
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return
    if soft != resource.RLIM_INFINITY and vsz + need > soft:
        raise LimitExceededError("max-memory", vsz + need, f"{flag} and ulimit -v", file=shown)
