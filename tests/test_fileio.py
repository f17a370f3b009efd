"""fastbpe.fileio: atomic writes leave the permissions a plain open() would."""
import os
import stat

import pytest

from fastbpe.fileio import write_atomic


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask():
    """Set the umask for one test; the earlier one comes back afterwards."""
    before = os.umask(0o022)
    os.umask(before)
    yield lambda mask: os.umask(mask)
    os.umask(before)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_files_get_the_mode_open_gives_under_the_umask(tmp_path, umask, mask):
    umask(mask)
    write_atomic(tmp_path / "atomic.json", b"{}")
    with open(tmp_path / "plain.json", "w") as f:
        f.write("{}")
    assert mode(tmp_path / "atomic.json") == mode(tmp_path / "plain.json") == 0o666 & ~mask
    assert (tmp_path / "atomic.json").read_bytes() == b"{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.json", "plain.json"]


def test_replacing_a_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "shared.json"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and mode(path) == 0o640


def test_a_saved_tokenizer_is_readable_by_the_group_under_umask_022(tmp_path, umask):
    import fastbpe

    umask(0o022)
    tok = fastbpe.train("the cat sat on the mat " * 20, num_merges=5, progress=False)
    tok.save(tmp_path / "tok.json")
    tok.to_huggingface(tmp_path / "hf.json")
    assert mode(tmp_path / "tok.json") == mode(tmp_path / "hf.json") == 0o644


KILLED_MID_WRITE = """
import os, sys, time
from fastbpe import fileio

os.fsync = lambda fd: time.sleep(600)  # hold the writer between its write and its rename
fileio.write_atomic(sys.argv[1], b"new " * 1000)
"""


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX signals to kill the writer")
def test_the_temporary_of_a_killed_writer_goes_with_the_next_write_of_that_file(tmp_path):
    """SIGKILL between write and rename leaves the temporary file (nothing can remove it then);
    the next write of the same file removes it, and a later one finds nothing to remove."""
    import signal
    import subprocess
    import sys
    import time

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = tmp_path / "tokenizer.json"
    target.write_bytes(b"old")
    writer = subprocess.Popen([sys.executable, "-c", KILLED_MID_WRITE, str(target)],
                              env={**os.environ, "PYTHONPATH": root})
    try:
        deadline = time.monotonic() + 60
        while not _temporaries(tmp_path) and writer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        left = _temporaries(tmp_path)
        assert left, "the writer never made its temporary file"
        assert os.path.getsize(tmp_path / left[0]) == 4000  # written, held before the rename
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert _temporaries(tmp_path) == left and target.read_bytes() == b"old"
    write_atomic(target, b"newer")
    assert _temporaries(tmp_path) == [] and target.read_bytes() == b"newer"
    write_atomic(target, b"newest")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json"]


def test_temporaries_of_running_writers_and_of_other_files_are_left_alone(tmp_path):
    import subprocess
    import sys

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead, running = ended.pid, os.getppid()
    names = {
        "dead, same file": f".tmp-{dead}-0123456789abcdef-a.json",
        "dead, other file": f".tmp-{dead}-0123456789abcdef-b.json",
        "dead, a longer name": f".tmp-{dead}-0123456789abcdef-a.json.bak",
        "running, same file": f".tmp-{running}-0123456789abcdef-a.json",
        "this process, same file": f".tmp-{os.getpid()}-0123456789abcdef-a.json",
        "not one of ours": ".tmp-a.json",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    write_atomic(tmp_path / "a.json", b"{}")
    removed = {what for what, name in names.items() if not (tmp_path / name).exists()}
    assert removed == {"dead, same file"}


def test_a_long_file_name_still_gets_a_temporary_name_the_system_accepts(tmp_path):
    name = "é" * 120 + ".json"  # 245 bytes: at the limit, with no room for a prefix
    write_atomic(tmp_path / name, b"{}")
    assert os.listdir(tmp_path) == [name]


def test_a_payload_in_pieces_is_written_in_order(tmp_path):
    import numpy as np

    ids = np.arange(300, dtype="<u2")
    write_atomic(tmp_path / "ids.bin", [b"head", memoryview(ids).cast("B"), bytearray(b"tail")])
    assert (tmp_path / "ids.bin").read_bytes() == b"head" + ids.tobytes() + b"tail"
    assert os.listdir(tmp_path) == ["ids.bin"]


def test_a_folder_or_a_missing_folder_is_named_in_the_error_and_nothing_is_left(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(IsADirectoryError, match=r"is a folder.*'.*out'$"):
        write_atomic(tmp_path / "out", b"{}")
    with pytest.raises(FileNotFoundError) as raised:
        write_atomic(tmp_path / "missing" / "t.json", b"{}")
    assert raised.value.filename == str(tmp_path / "missing" / "t.json") and ".tmp-" not in str(raised.value)
    assert os.listdir(tmp_path) == ["out"] and os.listdir(tmp_path / "out") == []


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null (a POSIX system)")
def test_a_device_or_a_pipe_is_written_into_not_replaced(tmp_path):
    """``-o /dev/null``: a file renamed over a device replaced it (as root, /dev/null itself).
    A device, or a pipe a reader holds open, is written into, as a shell's redirection writes
    it, and stays what it was."""
    import threading

    write_atomic("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    read = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_bytes()))
    reader.start()
    write_atomic(pipe, [b"through ", b"the pipe"])
    reader.join(10)
    assert read == [b"through the pipe"] and stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_a_symbolic_link_stays_and_the_file_it_names_is_replaced(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "t.json").write_bytes(b"old")
    link = tmp_path / "t.json"
    link.symlink_to(os.path.join("real", "t.json"))
    write_atomic(link, b"new")
    assert link.is_symlink() and (tmp_path / "real" / "t.json").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path / "real")) == ["t.json"] and sorted(os.listdir(tmp_path)) == ["real", "t.json"]
    dangling = tmp_path / "d.json"
    dangling.symlink_to("made.json")  # (a link to a file yet to be written: written there)
    write_atomic(dangling, b"made")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_bytes() == b"made"


def test_an_error_of_the_file_s_own_names_the_output_and_leaves_nothing(tmp_path):
    """A full disk, a file size limit, a device that refuses: raised by a write, a flush or
    the fsync, said with the name asked for (not the temporary file's, nor none)."""
    from fastbpe.fileio import AtomicWriter

    (tmp_path / "out.bin").write_bytes(b"old")
    writer = AtomicWriter(tmp_path / "out.bin")
    writer.write(b"x" * 100)
    os.close(writer._file.fileno())  # (its descriptor gone: every later system call fails, EBADF)
    with pytest.raises(OSError) as raised:
        writer.write(b"y" * (1 << 20))  # (past the buffer: written now)
        writer.commit()
    writer.abort()
    assert raised.value.filename == str(tmp_path / "out.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"] and (tmp_path / "out.bin").read_bytes() == b"old"
