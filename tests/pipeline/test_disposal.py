"""Removal in the background: renames at once, deletions later, nothing left over."""

import os
import re

import pytest

from clperiod.io.disposal import dispose, hidden_name, released_on_replace, wait_for_disposals
from clperiod.io.results import remove_temporaries


def test_dispose_moves_a_directory_away_at_once_and_deletes_it(tmp_path):
    work = tmp_path / "out.parquet.parts"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "part.arrow").write_bytes(b"x" * 10_000)
    (work / "manifest.json").write_text("{}")
    dispose(work)
    assert not work.exists()
    wait_for_disposals()
    assert list(tmp_path.iterdir()) == []


def test_dispose_ignores_a_missing_path_and_removes_files(tmp_path):
    dispose(tmp_path / "absent")
    (tmp_path / "file.txt").write_text("x")
    dispose(tmp_path / "file.txt")
    wait_for_disposals()
    assert list(tmp_path.iterdir()) == []


def test_released_on_replace_keeps_the_old_version_linked_until_replaced(tmp_path):
    target, new = tmp_path / "out.parquet", tmp_path / "new.tmp"
    target.write_text("old")
    new.write_text("new")
    inode = target.stat().st_ino
    with released_on_replace(target):
        links = [p for p in tmp_path.iterdir() if p.stat().st_ino == inode]
        assert len(links) == 2 and target.stat().st_nlink == 2
        os.replace(new, target)
    assert target.read_text() == "new"
    wait_for_disposals()
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_released_on_replace_leaves_the_file_alone_on_error(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), released_on_replace(target):
        raise RuntimeError("failed run")
    wait_for_disposals()
    assert target.read_text() == "old" and target.stat().st_nlink == 1
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with released_on_replace(tmp_path / "absent.csv"):  # nothing to link
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_remove_temporaries_removes_what_an_ended_process_left(tmp_path):
    target = tmp_path / "out.parquet"
    (tmp_path / ".out.parquet.tmp-1-0-old" / "x").mkdir(parents=True)
    (tmp_path / ".out.parquet.tmp-1-1-old").write_text("old link")
    (tmp_path / ".out.parquet.tmp-1").write_text("half written")
    (tmp_path / ".other.parquet.tmp-1").write_text("not ours")
    remove_temporaries(target)
    assert [p.name for p in tmp_path.iterdir()] == [".other.parquet.tmp-1"]


def test_hidden_names_cannot_be_guessed_and_a_planted_one_is_left_alone(tmp_path):
    target = tmp_path / "out.parquet"
    target.write_text("old")
    names = {hidden_name(target).name for _ in range(3)}
    assert len(names) == 3
    assert all(re.fullmatch(rf"\.out\.parquet\.tmp-{os.getpid()}-[0-9a-f]{{16}}-old", n)
               for n in names)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    planted = tmp_path / f".out.parquet.tmp-{os.getpid()}-0-old"  # the old, counted name
    planted.symlink_to(victim)
    dispose(target)
    wait_for_disposals()
    assert victim.read_text() == "precious" and planted.is_symlink() and not target.exists()
