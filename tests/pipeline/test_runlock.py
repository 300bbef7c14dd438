"""clperiod.pipeline.runlock: one writer per output, released however the writer ends."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from clperiod.pipeline.runlock import OutputLockedError, lock_path, locked_outputs

_HOLD = textwrap.dedent("""
    import sys, time
    from clperiod.pipeline.runlock import locked_outputs

    with locked_outputs(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(600)
""")


def _holder(path) -> subprocess.Popen:
    """Another process holding the lock of ``path`` (until killed)."""
    process = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)],
                               stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout.readline() == "locked\n"
    return process


@pytest.mark.slow
def test_a_locked_output_is_refused_until_its_holder_dies(tmp_path):
    output = tmp_path / "out.parquet"
    holder = _holder(output)
    try:
        with pytest.raises(OutputLockedError) as refused:
            with locked_outputs(tmp_path / "power.h5", output):
                pass
        message = str(refused.value)
        assert re.fullmatch(rf"another run \(pid {holder.pid} on .+\) is writing {output} "
                            rf"\(lock file {tmp_path / '.out.parquet.lock'}\); wait for it to "
                            r"finish, or write to another file", message)
        assert not (tmp_path / ".power.h5.lock").exists()  # the other lock was given back
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert lock_path(output).exists()  # left by the killed holder, and not held
    with locked_outputs(output, tmp_path / "power.h5"):
        assert lock_path(output).read_text().startswith(f"pid {os.getpid()} on ")
        assert sorted(p.name for p in tmp_path.iterdir()) == [".out.parquet.lock",
                                                              ".power.h5.lock"]
    assert list(tmp_path.iterdir()) == []


def test_one_process_cannot_take_an_output_twice(tmp_path):
    with locked_outputs(tmp_path / "a.csv"):
        with pytest.raises(OutputLockedError, match=rf"pid {os.getpid()} on "):
            with locked_outputs(tmp_path / "a.csv"):
                pass
        assert lock_path(tmp_path / "a.csv").exists()


def test_a_lock_file_replaced_while_waiting_is_taken_afresh(tmp_path, monkeypatch):
    """A finishing run removes its lock file after another process opened it:
    that process must not keep a lock on the removed file."""
    from clperiod.pipeline import runlock

    output = tmp_path / "out.csv"
    opened = []
    real_open = os.open

    def open_then_lose_the_name(path, flags, mode=0o777):
        descriptor = real_open(path, flags, mode)
        if not opened:  # the first open: its file is removed (and the name made anew)
            os.unlink(path)
            os.close(real_open(path, os.O_CREAT | os.O_WRONLY, 0o666))
        opened.append(os.fstat(descriptor).st_ino)
        return descriptor

    monkeypatch.setattr(runlock.os, "open", open_then_lose_the_name)
    with locked_outputs(output):
        assert len(opened) == 2 and lock_path(output).stat().st_ino == opened[1]


def test_a_symbolic_link_in_place_of_the_lock_file_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock_path(tmp_path / "out.csv").symlink_to(victim)
    with pytest.raises(OSError):
        with locked_outputs(tmp_path / "out.csv"):
            pass
    assert victim.read_text() == "precious"
