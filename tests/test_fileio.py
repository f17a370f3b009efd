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
