"""The radial-velocity subcommands of the command line: clperiod rv search / evaluate."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from clperiod import cli, kepler
from clperiod.io import RV_EXAMPLES, example_path, read_rv

HD164922 = example_path("ida").parent / RV_EXAMPLES["hd164922"]
PLANET = (12.3, 20.0, 0.1, 1.0, 2.0)  # P [d], K [m/s], e, w, M0 at t = 100 d


def _cli(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def one_planet(tmp_path, cpu_device):
    """40 velocities (sigma 1 m/s) of one planet plus a 5 m/s offset, HIRES layout."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 200, 40))
    v = kepler.radial_velocity(t, np.array([[PLANET]]), t_ref=100.0, device=cpu_device)[0]
    v += 5.0 + rng.normal(0, 1.0, t.size)
    lines = ["time mnvel errvel tel"] + [f"{a!r} {b!r} 1.0 x" for a, b in zip(t.tolist(),
                                                                          v.tolist())]
    path = tmp_path / "star.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_search_finds_the_planet_and_writes_it(one_planet, capsys, cpu_device):
    device = cpu_device.label.split()[0]
    status, out, err = _cli(capsys, "rv", "search", one_planet, "--period", 2, 100, "--n-models",
                            20000, "--refine", 1, "--seed", 1, "--device", device)
    assert (status, err) == (0, "")
    path = one_planet.with_name("star.planets.csv")
    assert "1 planet(s) from 40 velocities (20,000 trial orbits per search)" in out
    assert str(path) in out and "offsets: x: " in out
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 1 and list(rows[0]) == ["planet", "period", "k", "e", "w", "m0", "t_ref",
                                                "chi2", "offset_x"]
    found = {name: float(value) for name, value in rows[0].items()}
    assert found["period"] == pytest.approx(PLANET[0], rel=2e-3)
    assert found["k"] == pytest.approx(PLANET[1], rel=0.1)
    assert found["offset_x"] == pytest.approx(5.0, abs=1.5)
    data = read_rv(one_planet)
    assert found["t_ref"] == 0.5 * (data.t.min() + data.t.max())
    # the written orbit and offset give the written chi^2
    chi2 = kepler.chi2(data.t, data.v, data.sigma,
                       np.array([[[found[k] for k in ("period", "k", "e", "w", "m0")]]]),
                       t_ref=found["t_ref"], offsets=[found["offset_x"]], precision="fp64",
                       device=cpu_device)[0]
    assert chi2 == pytest.approx(found["chi2"], rel=1e-4)
    assert chi2 < 3 * data.t.size  # a good fit: 40 points with sigma 1


def test_evaluate_matches_the_library(tmp_path, capsys, cpu_device):
    data = read_rv(HD164922)
    rng = np.random.default_rng(2)
    params = np.stack([rng.uniform([1000, 5, 0, 0, 0], [1300, 9, 0.3, 6, 6], (6, 5)),
                       rng.uniform([70, 1, 0, 0, 0], [80, 3, 0.3, 6, 6], (6, 5))], axis=1)
    params[4, 0, 2] = 1.5  # e >= 1: an invalid model
    text = tmp_path / "grid.csv"
    text.write_text("# two planets per row\nper1,k1,e1,w1,m01,per2,k2,e2,w2,m02\n"
                    + "\n".join(",".join(map(repr, row)) for row in params.reshape(6, 10).tolist()))
    np.save(tmp_path / "grid.npy", params)
    options = {"t_ref": 2453784.3, "instrument": data.instrument, "device": cpu_device,
               "offsets": {"a": 1.2, "j": 0.2, "k": 0.2}, "jitter": {"a": 3.0, "j": 3.0, "k": 3.0}}
    argv = ["--t-ref", 2453784.3, "--offsets", "a=1.2, j=0.2,k=0.2", "--jitter", 3,
            "--device", cpu_device.label.split()[0]]
    status, out, err = _cli(capsys, "rv", "evaluate", HD164922, text, *argv)
    assert (status, err) == (0, "")
    chi2 = np.load(tmp_path / "grid.chi2.npy")
    expected = kepler.chi2(data.t, data.v, data.sigma, params, **options)
    np.testing.assert_array_equal(chi2, expected)
    assert np.isnan(chi2[4]) and np.isfinite(np.delete(chi2, 4)).all()
    best = int(np.nanargmin(expected))
    assert out == (f"6 models (2 planet(s)) written to {tmp_path / 'grid.chi2.npy'}; best chi2 "
                   f"{expected[best]:.6g} (model {best}); 1 invalid model(s) (NaN)\n")
    status, _, _ = _cli(capsys, "rv", "evaluate", HD164922, tmp_path / "grid.npy", *argv,
                        "--statistic", "loglike", "--precision", "fp64", "-o", tmp_path / "l.csv")
    assert status == 0
    loglike = np.loadtxt(tmp_path / "l.csv", skiprows=1)
    assert (tmp_path / "l.csv").read_text().startswith("loglike\n")
    np.testing.assert_array_equal(
        loglike, kepler.loglike(data.t, data.v, data.sigma, params, precision="fp64", **options))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "{data}", "{bad}"], r"bad\.txt: expected 5 numbers per planet"),
        (["evaluate", "{data}", "{good}", "--offsets", "a=1,q=2"],
         r"offsets: unknown instruments \['a', 'q'\]"),
        (["evaluate", "{data}", "{good}", "--jitter", "x=abc"], "--jitter takes a number or"),
        (["evaluate", "{data}", "{good}", "-o", "{tmp}/out.fits"], "must end in .npy, .csv"),
        (["search", "{data}", "--period", "0", "10"], "period range must be positive"),
        (["search", "{data}", "--period", "1", "10", "--planets", "0"], "--planets must be >= 1"),
        (["search", "{data}", "--period", "1", "10", "-o", "{data}"], "is the input .*overwrites"),
        (["evaluate", "{data}", "{good}", "-o", "{good}"], "-o .*good.txt is the input"),
        (["evaluate", "{data}", "{good}", "-o", "{data}"], "is the input .*never overwrites"),
    ],
)
def test_bad_rv_input_exits_1_with_a_message(one_planet, tmp_path, capsys, argv, message):
    (tmp_path / "bad.txt").write_text("1 2 3 4 5 6 7\n")
    (tmp_path / "good.txt").write_text("12.3 20 0.1 1 2\n")
    names = {"data": one_planet, "bad": tmp_path / "bad.txt", "good": tmp_path / "good.txt",
             "tmp": tmp_path}
    status, _, err = _cli(capsys, "rv", *(a.format(**names) for a in argv))
    assert status == 1
    assert err.startswith("clperiod: error: ")
    assert re.search(message, err), err
