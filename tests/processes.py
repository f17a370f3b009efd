"""Finding the processes a test started, and the ones they started, through Linux's /proc."""
import os
from typing import List, Optional

__all__ = ["proc_stat", "alive", "children", "session_members"]


def proc_stat(pid: int) -> Optional[List[str]]:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, session, ...),
    or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and waiting to be reaped, does not)."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z"


def _live_where(index: int, value: int) -> List[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[index]) == value:
                found.append(int(entry))
    return found


def children(pid: int) -> List[int]:
    """Pids of the live processes whose parent is ``pid``."""
    return _live_where(1, pid)


def session_members(session: int) -> List[int]:
    """Pids of the live processes of session ``session``: a process started with
    ``start_new_session=True`` leads the session numbered by its pid, and every process it
    starts joins it, reparented or not."""
    return _live_where(3, session)
