"""Single-pulse search on the CPU device: injections, noise calibration,
chunking, device arrays, clustering and bad input (issue 5)."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from clperiod import singlepulse as sp
from clperiod.engine.devices import get_queue, select_devices
from clperiod.testing import inject_pulse, pulse_plane

TSAMP = 64e-6


def keys(cands):
    return sorted(zip(cands["dm_index"].tolist(), cands["sample"].tolist(),
                      cands["width"].tolist()))


def test_plan_widths():
    assert [lv.level for lv in sp.boxcar_plan(32)] == [0]
    dit = sp.boxcar_plan(4096)
    assert len(dit) == 8 and sum(len(lv.widths) for lv in dit) == 32 + 16 * 7
    native = np.concatenate([lv.widths << lv.level for lv in dit])
    assert native[:32].tolist() == list(range(1, 33))
    assert native[32:48].tolist() == list(range(34, 65, 2)) and native[-1] == 4096
    assert sp.boxcar_plan(100)[-1].widths.tolist() == [17, 18, 19, 20, 21, 22, 23, 24, 25]
    assert sp.boxcar_plan(40, "full")[0].widths.tolist() == list(range(1, 41))


@pytest.mark.parametrize("mode", ["approx", "exact"])
def test_white_noise_calibration(mode):
    """The measured noise of every width is sqrt(W) for white noise."""
    x = pulse_plane(8, 3 * 65536, seed=1, loc=100.0, scale=3.0)
    c = sp.search(x, np.arange(8.0), TSAMP, max_width=128, snr_mode=mode, threshold=8.0)
    for lv in c.info.plan:
        sigma = c.info.noise[lv.level][:, lv.widths - 1]
        expect = np.sqrt(lv.widths << lv.level)
        np.testing.assert_allclose(sigma.mean(axis=0), expect, rtol=0.03)
    np.testing.assert_allclose(c.info.mean, 100.0, atol=0.02)
    np.testing.assert_allclose(c.info.std, 3.0, rtol=0.005)


def test_false_detections_follow_the_gaussian_tail():
    """Width-1 exceedances alone are Poisson(N Q(T)); other widths can only add,
    and at most 32 times (a union bound over the widths)."""
    n_dm, n_t, threshold = 16, 65536, 4.0
    c = sp.search(pulse_plane(n_dm, n_t, seed=2), np.arange(n_dm), TSAMP, threshold=threshold,
                  cluster=False)
    expected = n_dm * n_t * norm.sf(threshold)  # ~33
    width_one = np.count_nonzero(c["width"] == 1)
    assert abs(width_one - expected) < 4 * np.sqrt(expected) + 2
    assert expected - 4 * np.sqrt(expected) < len(c) < 32 * expected


def test_top_hat_snr_width_and_time():
    """Top-hats of amplitude A and width w: SNR A sqrt(w) (mean over 24 pulses
    within 2 %), the exact width and centre for nearly all."""
    rng = np.random.default_rng(3)
    n_dm, n_t = 24, 65536
    x = pulse_plane(n_dm, n_t, seed=4)
    truth = []
    for row in range(n_dm):
        width = int(rng.choice([1, 3, 8, 17, 32]))
        start = int(rng.integers(1000, n_t - 1000))
        inject_pulse(x, row, start, width, 12.0 / np.sqrt(width))
        truth.append((row, start, width))
    c = sp.search(x, np.arange(n_dm), TSAMP, threshold=6.0, robust=True)
    snr, exact = [], 0
    for row, start, width in truth:
        mine = c[c["dm_index"] == row]
        best = mine[np.argmax(mine["snr"])]
        snr.append(best["snr"])
        exact += best["width"] == width and best["sample"] == start + width // 2
        assert abs(int(best["sample"]) - (start + width // 2)) <= width
        assert np.isclose(best["time"], best["sample"] * TSAMP)
    assert abs(np.mean(snr) / 12.0 - 1) < 0.02
    assert exact >= 18


def test_wide_pulse_decimation_plan():
    """A 600-sample top-hat, A sqrt(w) = 15: the DIT plan finds it above 12
    (3 sigma of noise below the ideal 14.9 of its nearest boxcar, 608
    samples) with a width within 10 %; a 32-wide search alone loses most."""
    x = pulse_plane(4, 65536, seed=5)
    inject_pulse(x, 2, 20000, 600, 15.0 / np.sqrt(600))
    wide = sp.search(x, np.arange(4.0), TSAMP, max_width=1024, threshold=6.0, robust=True)
    best = wide[np.argmax(wide["snr"])]
    assert best["dm_index"] == 2 and best["snr"] > 12.0
    assert abs(best["width"] / 600 - 1) < 0.1
    assert best["begin"] <= 20000 + 30 and best["end"] >= 20600 - 30
    narrow = sp.search(x, np.arange(4.0), TSAMP, max_width=32, threshold=3.0, robust=True)
    assert narrow["snr"].max() < 0.5 * 15.0


def test_gaussian_pulse_recovers_most_of_the_matched_filter():
    """Best boxcar on a Gaussian pulse >= 0.9 of the matched-filter S/N."""
    x = pulse_plane(2, 65536, seed=6)
    fwhm = 12.0
    t = np.arange(65536)
    profile = np.exp(-0.5 * ((t - 30000) / (fwhm / 2.3548)) ** 2)
    matched = 15.0
    x[1] += (matched * profile / np.sqrt((profile ** 2).sum())).astype(np.float32)
    c = sp.search(x, np.arange(2.0), TSAMP, threshold=6.0, robust=True)
    best = c[np.argmax(c["snr"])]
    assert best["dm_index"] == 1 and best["snr"] > 0.9 * matched
    assert abs(int(best["sample"]) - 30000) <= 3


def test_robust_statistics_resist_a_bright_pulse():
    x = pulse_plane(1, 4096, seed=7)
    inject_pulse(x, 0, 2000, 8, 10.0)
    plain = sp.search(x, [0.0], TSAMP, threshold=6.0)
    robust = sp.search(x, [0.0], TSAMP, threshold=6.0, robust=True)
    expected = 10.0 * np.sqrt(8)
    assert abs(robust["snr"].max() / expected - 1) < 0.1
    assert plain["snr"].max() < 0.85 * expected  # the pulse inflates its own noise
    assert robust.info.std[0] < plain.info.std[0]


@pytest.mark.parametrize("mode", ["approx", "exact"])
def test_chunks_give_exactly_the_unchunked_detections(mode):
    """Pulses across chunk boundaries: same detections, none lost or doubled."""
    n_t = 4 * 65536
    x = pulse_plane(6, n_t, seed=8)
    for row, start, width in ((0, 65536 - 5, 10), (1, 2 * 65536 - 300, 600),
                              (2, 3 * 65536 - 1, 2), (3, 65530, 6), (4, n_t - 20, 20)):
        inject_pulse(x, row, start, width, 14.0 / np.sqrt(width))
    args = dict(max_width=1024, threshold=6.0, cluster=False, snr_mode=mode)
    whole = sp.search(x, np.arange(6.0), TSAMP, **args)
    parts = sp.search(x, np.arange(6.0), TSAMP, chunk_samples=65536, **args)
    assert parts.info.chunks == 4 and whole.info.chunks == 1
    assert keys(parts) == keys(whole)
    assert len(set(keys(parts))) == len(parts)
    np.testing.assert_array_equal(np.sort(parts["snr"]), np.sort(whole["snr"]))
    assert set(parts["dm_index"][parts["snr"] > 10].tolist()) == {0, 1, 2, 3, 4}
    clustered = sp.search(x, np.arange(6.0), TSAMP, max_width=1024, chunk_samples=65536,
                          snr_mode=mode)
    assert clustered["members"].sum() == len(parts)  # every detection in one candidate


def test_device_array_input_matches_host():
    x = pulse_plane(4, 65536, seed=9)
    inject_pulse(x, 1, 5000, 16, 3.0)
    info = select_devices()[0]
    on_device = cl_array.to_device(get_queue(info), x)
    a = sp.search(x, np.arange(4.0), TSAMP, cluster=False)
    b = sp.search(on_device, np.arange(4.0), TSAMP, cluster=False)
    assert keys(a) == keys(b) and len(a) > 0


def test_clustering_merges_one_pulse_and_keeps_two_apart():
    x = pulse_plane(12, 65536, seed=10)
    for row in range(3, 8):  # one pulse smeared over five DM rows
        inject_pulse(x, row, 10000, 16, 4.0)
    inject_pulse(x, 5, 30000, 4, 6.0)  # a second, far away in time
    raw = sp.search(x, np.arange(12.0), TSAMP, threshold=6.0, cluster=False, robust=True)
    merged = sp.search(x, np.arange(12.0), TSAMP, threshold=6.0, robust=True)
    near = raw[np.abs(raw["sample"] - 10008) < 40]
    first = merged[np.abs(merged["sample"] - 10008) < 40]
    assert len(first) == 1 and first["members"][0] == len(near) > 5
    assert first["snr"][0] == near["snr"].max()
    assert np.count_nonzero(np.abs(merged["sample"] - 30002) < 10) == 1
    assert merged["members"].sum() == len(raw)


def test_nan_policy_constant_rows_and_status():
    x = pulse_plane(3, 8192, seed=11)
    x[0, 100:110] = np.nan
    x[1] = 5.0
    with pytest.raises(ValueError, match="non-finite"):
        sp.search(x, np.arange(3.0), TSAMP)
    c = sp.search(x, np.arange(3.0), TSAMP, nan_policy="mask", threshold=5.0)
    assert c.info.masked.tolist() == [10, 0, 0]
    assert c.info.row_status.tolist() == [sp.RowStatus.OK, sp.RowStatus.CONSTANT, sp.RowStatus.OK]
    assert 1 not in c["dm_index"]
    x[2] = np.inf
    c = sp.search(x, np.arange(3.0), TSAMP, nan_policy="mask")
    assert c.info.row_status[2] == sp.RowStatus.NO_DATA and 2 not in c["dm_index"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(data=np.zeros(100, np.float32)), "2-D"),
    (dict(data=np.zeros((2, 0), np.float32)), "empty"),
    (dict(data=np.zeros((0, 10), np.float32), dm=[]), "empty"),
    (dict(max_width=200), "exceeds"),
    (dict(dm=[1.0]), "one value per row"),
    (dict(tsamp=0.0), "tsamp"),
    (dict(threshold=-1.0), "threshold"),
    (dict(plan="boxdit"), "plan"),
    (dict(snr_mode="median"), "snr_mode"),
    (dict(nan_policy="omit"), "nan_policy"),
    (dict(max_width=0), "max_width"),
    (dict(max_width=1024, plan="full"), "full"),
    (dict(data=np.array([["a"] * 128] * 2)), "real numbers"),
])
def test_bad_input(kwargs, match):
    args = dict(data=pulse_plane(2, 128), dm=[0.0, 1.0], tsamp=TSAMP)
    args.update(kwargs)
    data, dm, tsamp = args.pop("data"), args.pop("dm"), args.pop("tsamp")
    with pytest.raises((ValueError, TypeError), match=match):
        sp.search(data, dm, tsamp, **args)


def test_float64_and_memmap_inputs(tmp_path):
    x = pulse_plane(3, 8192, seed=12)
    inject_pulse(x, 2, 4000, 4, 8.0)
    path = tmp_path / "series.npy"
    np.save(path, x.astype(np.float64))
    a = sp.search(x, np.arange(3.0), TSAMP)
    b = sp.search(np.load(path, mmap_mode="r"), np.arange(3.0), TSAMP)
    assert keys(a) == keys(b) and len(a) >= 1


# ------------------------------------------------------------------------ units


def pulses(seed=40, n_dm=4, n_t=2 * 65536):
    """Noise with bright pulses (SNR 15-40): no detection lies near the threshold."""
    bright = ((0, 7000, 1, 20.0), (1, 20000, 8, 6.0), (2, 35000, 24, 4.0), (3, 50000, 100, 2.5))
    return pulse_plane(n_dm, n_t, bright, seed=seed, dtype=np.float64)


def assert_same_search(got, base, scale):
    """Same rows, starts, widths and statuses; SNR and statistics within float32 rounding."""
    assert keys(got) == keys(base) and len(base) >= 4
    np.testing.assert_allclose(got["snr"], base["snr"], rtol=2e-5)
    assert got.info.row_status.tolist() == base.info.row_status.tolist()
    np.testing.assert_allclose(got.info.std / scale, base.info.std, rtol=1e-5)
    np.testing.assert_allclose(got.info.mean / scale, base.info.mean, rtol=0,
                               atol=1e-5 * base.info.std.max())
    for level, sigma in base.info.noise.items():
        np.testing.assert_allclose(got.info.noise[level], sigma, rtol=1e-4)


@pytest.mark.parametrize("dtype, scale", [
    (np.float32, 1e-25), (np.float32, 1e17), (np.float32, 1e30), (np.float32, 1e-40),
    (np.float64, 1e40), (np.float64, 1e-45), (np.float64, 1e300), (np.float64, 1e-300)])
@pytest.mark.slow
@pytest.mark.parametrize("robust", [False, True])
def test_search_does_not_depend_on_units(dtype, scale, robust):
    """float32 data times 1e17 used to give std = inf and no candidates, times
    1e-25 a wrong std and thousands of false ones; float64 data beyond the
    float32 range were "non-finite samples", below it CONSTANT rows."""
    x = pulses()
    options = dict(max_width=128, threshold=8.0, robust=robust, chunk_samples=65536)
    base = sp.search(x.astype(np.float32), np.arange(4.0), TSAMP, **options)
    got = sp.search((x * scale).astype(dtype), np.arange(4.0), TSAMP, **options)
    assert_same_search(got, base, scale)


@settings(max_examples=25, deadline=None)
@given(log_scale=st.floats(-30, 30), dtype=st.sampled_from([np.float32, np.float64]),
       mode=st.sampled_from(["approx", "exact"]))
@pytest.mark.slow
def test_search_is_invariant_to_scale(log_scale, dtype, mode):
    """Property: data scaled by 1e-30 ... 1e30 give the same candidates, SNRs,
    noise of every width and statistics in the data's units."""
    x = pulses(n_t=65536)
    base = sp.search(x.astype(np.float32), np.arange(4.0), TSAMP, max_width=64,
                     threshold=8.0, snr_mode=mode)
    scale = 10.0**log_scale
    got = sp.search((x * scale).astype(dtype), np.arange(4.0), TSAMP, max_width=64,
                    threshold=8.0, snr_mode=mode)
    assert_same_search(got, base, scale)


@pytest.mark.parametrize("scale", [1e-25, 1e17])
def test_device_array_of_any_ordinary_scale(scale):
    x = pulses(n_t=65536)
    info = select_devices()[0]
    base = sp.search(x.astype(np.float32), np.arange(4.0), TSAMP, max_width=64, threshold=8.0)
    on_device = cl_array.to_device(get_queue(info), (x * scale).astype(np.float32))
    got = sp.search(on_device, np.arange(4.0), TSAMP, max_width=64, threshold=8.0)
    assert_same_search(got, base, scale)


@pytest.mark.parametrize("scale", [1e35, 1e-36])
def test_device_array_outside_the_float32_range_raises(scale):
    x = pulses(n_t=65536)
    on_device = cl_array.to_device(get_queue(select_devices()[0]), (x * scale).astype(np.float32))
    with pytest.raises(ValueError, match=r"row 0 of the device array .* 2\*\*100"):
        sp.search(on_device, np.arange(4.0), TSAMP, max_width=64)


def test_float64_beyond_float32_keeps_its_real_non_finite_samples():
    x = pulses(n_t=65536) * 1e100
    x[2, 100:103] = np.nan
    with pytest.raises(ValueError, match="data has 3 non-finite samples"):
        sp.search(x, np.arange(4.0), TSAMP)
    c = sp.search(x, np.arange(4.0), TSAMP, nan_policy="mask", threshold=8.0)
    assert c.info.masked.tolist() == [0, 0, 3, 0]
    assert (c.info.row_status == sp.RowStatus.OK).all()
    np.testing.assert_allclose(c.info.std, 1e100, rtol=0.05)


# ------------------------------------------------------- against the NumPy reference
from reference import singlepulse as reference  # noqa: E402


def reference_levels(z, depth):
    series = [z]
    for _ in range(depth):
        series.append(reference.decimate(series[-1]))
    return series


@pytest.mark.parametrize("plan, max_width", [("dit", 32), ("dit", 600), ("full", 48)])
def test_noise_tables_match_numpy(plan, max_width):
    """Exact: the autocovariance formula on the float64 reference series.
    Approx: eq. 5 between sigma_1 (1 at level 0, the std of the level's series
    above) and the std of the series decimated by Nmax = 2**ceil(log2 wmax)."""
    x = pulse_plane(3, 65536 + 4096, seed=13, loc=-2.0, scale=0.5)
    inject_pulse(x, 1, 3000, 40, 1.0)
    z, _ = reference.normalize(x)
    for mode in ("exact", "approx"):
        c = sp.search(x, np.arange(3.0), TSAMP, max_width=max_width, plan=plan, snr_mode=mode,
                      threshold=50.0)
        for lv in c.info.plan:
            m = (lv.wmax - 1).bit_length()
            series = reference_levels(z, lv.level + m)
            widths = np.arange(1, lv.wmax + 1)
            if mode == "exact":
                want = reference.boxcar_sigma(series[lv.level], widths, "exact")
            else:
                s1 = np.ones(3) if lv.level == 0 else series[lv.level].std(axis=1)
                s_n = series[lv.level + m].std(axis=1)
                n_max = 1 << m
                want = np.sqrt(widths) * s1[:, None]
                if n_max > 1:
                    want = want + (widths - 1) / (n_max - 1) * (
                        s_n[:, None] - np.sqrt(n_max) * s1[:, None])
            np.testing.assert_allclose(c.info.noise[lv.level], want, rtol=2e-4)


@pytest.mark.parametrize("max_width, plan", [(32, "dit"), (300, "dit"), (40, "full")])
def test_detections_match_the_reference(max_width, plan):
    """Exact mode: the same detections (DM, start, width) as the float64
    reference, SNR equal to float32 rounding; only detections within 1e-3 of
    the threshold may differ."""
    x = pulse_plane(6, 32768, seed=14, loc=10.0, scale=2.0)
    for row, start, width in ((0, 100, 3), (2, 5000, 24), (3, 20000, 150), (5, 32700, 60)):
        inject_pulse(x, row, start, width, 10.0 / np.sqrt(width) * 2.0)
    threshold = 4.5
    got = sp.search(x, np.arange(6.0), TSAMP, max_width=max_width, plan=plan,
                    snr_mode="exact", threshold=threshold, cluster=False)
    want = reference.search(x, np.arange(6.0), TSAMP, max_width=max_width, plan=plan,
                            snr_mode="exact", threshold=threshold)
    start = got["sample"] - got["width"] // 2
    mine = {(d, s, w): v for d, s, w, v in zip(got["dm_index"], start, got["width"], got["snr"])}
    theirs = {(d, s, w): v for d, s, w, v in zip(want["dm_index"], want["start"], want["width"],
                                                 want["snr"])}
    common = mine.keys() & theirs.keys()
    assert len(common) > 50
    for key in mine.keys() ^ theirs.keys():
        value = mine.get(key, theirs.get(key))
        assert abs(value - threshold) < 1e-3 * threshold, key
    np.testing.assert_allclose([mine[k] for k in common], [theirs[k] for k in common],
                               rtol=1e-4)


def test_completeness_rises_through_the_threshold():
    """Pulses of true S/N 4, 6 and 8 against a threshold of 6: the measured S/N
    is the true one plus unit noise (slightly more: the best of several starts
    and widths), so about 2 %, 50-70 % and 98 % are found."""
    rng = np.random.default_rng(15)
    n_dm, n_t, per_row = 30, 65536, 6
    found = {4.0: 0, 6.0: 0, 8.0: 0}
    x = pulse_plane(n_dm, n_t, seed=16)
    truth = []
    for row in range(n_dm):
        for j in range(per_row):
            s = list(found)[(row + j) % 3]
            start = 2000 + j * 10000 + int(rng.integers(0, 5000))
            width = int(rng.choice([2, 8, 16]))
            inject_pulse(x, row, start, width, s / np.sqrt(width))
            truth.append((row, start + width // 2, s))
    c = sp.search(x, np.arange(n_dm), TSAMP, threshold=6.0, cluster=False)
    for row, centre, s in truth:
        mine = c[(c["dm_index"] == row) & (np.abs(c["sample"] - centre) <= 16)]
        found[s] += len(mine) > 0
    total = n_dm * per_row / 3
    fraction = {s: found[s] / total for s in found}
    assert fraction[4.0] < 0.2 and 0.35 < fraction[6.0] < 0.9 and fraction[8.0] > 0.9, fraction


def test_detection_list_overflow_reruns_without_loss():
    """A threshold so low that one level finds more starts than the first
    list holds (65536): the level runs again and every start is kept."""
    x = pulse_plane(2, 65536, seed=17)
    c = sp.search(x, [0.0, 1.0], TSAMP, threshold=0.5, cluster=False)
    per_row = [np.count_nonzero(c["dm_index"] == r) for r in (0, 1)]
    assert len(c) > 65536 and len(set(keys(c))) == len(c)
    z, _ = reference.normalize(x)
    best = np.max([reference.boxcar_sums(z, w)[:, : 65536 - 31] / np.sqrt(w)
                   for w in range(1, 33)], axis=0)
    # the exact noise differs from sqrt(w) by its sampling error only
    assert abs(sum(per_row) / np.count_nonzero(best >= 0.5) - 1) < 0.02


def test_statistics_with_a_large_offset():
    """Chan's update on values shifted by a sample of each block: a 1e6 offset
    (float32 ulp 0.06) still gives the mean and std of the float64 data."""
    x = pulse_plane(2, 200_000, seed=18, loc=1e6)
    c = sp.search(x, [0.0, 1.0], TSAMP)
    exact = x.astype(np.float64)
    np.testing.assert_allclose(c.info.mean, exact.mean(axis=1), rtol=0, atol=1e-3)
    np.testing.assert_allclose(c.info.std, exact.std(axis=1), rtol=1e-3)


def test_threshold_is_inclusive_to_the_last_bit():
    """A detection whose float32 SNR equals the threshold is kept."""
    x = pulse_plane(4, 16384, seed=22)
    found = sp.search(x, np.arange(4.0), TSAMP, max_width=32, threshold=4.0, cluster=False)
    assert len(found) > 20
    for snr, row, sample, width in zip(found["snr"][:20], found["dm_index"], found["sample"],
                                       found["width"]):
        again = sp.search(x, np.arange(4.0), TSAMP, max_width=32, threshold=float(snr),
                          cluster=False)
        hit = again[(again["dm_index"] == row) & (again["sample"] == sample)
                    & (again["width"] == width)]
        assert len(hit) == 1 and hit["snr"][0] == snr
        assert again["snr"].min() >= snr


def _scored_in_float32(x, info, threshold, wmax):
    """Every start scored as the boxcar kernel scores it (float32 running sums,
    first maximum over the widths that fit): the detections (row, start,
    width, snr) of the full-resolution level."""
    ok = info.row_status == sp.RowStatus.OK
    inv_std = np.where(ok, 1.0 / np.where(ok, info.std, 1.0), 0.0).astype(np.float32)
    z = (x - info.mean.astype(np.float32)[:, None]) * inv_std[:, None]
    sigma = info.noise[0]
    inv = np.where((sigma > 0) & ok[:, None], 1.0 / np.where(sigma > 0, sigma, 1.0), 0.0)
    n = x.shape[1]
    found = []
    for row in range(len(x)):
        padded = np.concatenate([z[row], np.zeros(wmax - 1, np.float32)])
        sums = np.cumsum(np.lib.stride_tricks.sliding_window_view(padded, wmax), axis=1,
                         dtype=np.float32)
        snr = sums * inv[row].astype(np.float32)
        fits = np.arange(n)[:, None] + np.arange(1, wmax + 1)[None, :] <= n
        snr = np.where(fits, snr, -np.inf)
        width = snr.argmax(axis=1)
        best = snr[np.arange(n), width]
        for start in np.flatnonzero(best >= np.float32(threshold)):
            found.append((row, int(start), int(width[start]) + 1, float(best[start])))
    return sorted(found)


@pytest.mark.parametrize("max_width, n_t", [(32, 20001), (12, 16384), (5, 9998)])
def test_bounded_boxcar_keeps_every_detection(max_width, n_t):
    """The boxcar rules starts out with a bound before scoring them: at a low
    threshold (thousands of detections, many near it) it finds exactly the
    starts, widths and float32 SNRs of scoring every start, also for series
    whose rows are not 16-byte aligned."""
    x = pulse_plane(3, n_t, seed=31, loc=5.0, scale=3.0)
    inject_pulse(x, 1, 4000, 7, 2.0 * 3.0)
    c = sp.search(x, np.arange(3.0), TSAMP, max_width=max_width, threshold=2.5, cluster=False,
                  snr_mode="exact")
    got = sorted(zip(c["dm_index"].tolist(), (c["sample"] - c["width"] // 2).tolist(),
                     c["width"].tolist(), c["snr"].astype(float).tolist()))
    want = _scored_in_float32(x, c.info, 2.5, max_width)
    assert len(want) > 500
    assert got == want


@pytest.mark.parametrize("mode", ["approx", "exact"])
def test_single_sample_boxcars(mode):
    """max_width=1 searches width 1 alone (no decimated series to measure):
    its noise is 1 (z is normalised) and a spike's SNR is its z-score."""
    x = pulse_plane(3, 65536, seed=23)
    x[1, 5000] += 10.0
    c = sp.search(x, np.arange(3.0), TSAMP, max_width=1, threshold=6.0, snr_mode=mode)
    assert [lv.widths.tolist() for lv in c.info.plan] == [[1]]
    np.testing.assert_allclose(c.info.noise[0], 1.0, rtol=1e-5)
    assert keys(c) == [(1, 5000, 1)]
    exact = x.astype(np.float64)
    z = (exact[1, 5000] - exact[1].mean()) / exact[1].std()
    assert c["snr"][0] == pytest.approx(z, rel=1e-5)
