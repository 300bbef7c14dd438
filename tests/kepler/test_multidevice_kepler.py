"""Several devices (CLPERIOD_DEVICE=all) give the Kepler/RV results of one,
element by element and model by model. PoCL shows one CPU as two devices with
POCL_DEVICES="pthread pthread"; device discovery is once per process, so the
runs happen in a subprocess (as in test_multidevice.py)."""

import itertools
from dataclasses import replace

import pytest

from clperiod.engine.scheduler import BATCHES_PER_DEVICE, split_range
from clperiod.kepler import rvmodel
from clperiod.kepler.rvmodel import Plan, device_items, shared_choices
from two_devices import run_on_two_devices

# two PoCL devices, each building every kernel variant: slow on 2 cores
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json
import numpy as np
import clperiod
from clperiod import kepler
from clperiod.kepler import api as kepler_api
from clperiod.kepler import rvmodel
from clperiod.io import load_rv_example

devices = clperiod.select_devices("cpu")
assert len(devices) == 2, [d.label for d in devices]
one = devices[:1]
# launches of 3000 models: items span several launches, and a last, shorter
# launch (under the 2048 models that fill a 2-unit device: split layout)
rvmodel.BATCH_MODELS = 3000
used = []  # (device label, rows, layout) of each item

def recording(cls, name):
    method = getattr(cls, name)
    def wrapper(self, params, *args, **kwargs):
        used.append((self.info.label, len(params), kwargs.get("layout")))
        return method(self, params, *args, **kwargs)
    setattr(cls, name, wrapper)

recording(rvmodel.ModelEvaluator, "__call__")
recording(rvmodel.ModelEvaluator, "velocities")
solve_range = kepler_api._solve_range
def solve_recording(info, method, inputs, outputs, lo, hi):
    used.append((info.label, hi - lo, None))
    return solve_range(info, method, inputs, outputs, lo, hi)
kepler_api._solve_range = solve_recording

def same(a, b):
    return all(np.array_equal(x, y, equal_nan=True) and x.dtype == y.dtype
               for x, y in zip(a, b))

def compare(run):
    used.clear()
    single = run(one)
    single_items = len(used)
    used.clear()
    both = run(devices)
    values = np.concatenate([np.ravel(x) for x in single if x.dtype.kind == "f"])
    return {"same": same(single, both), "finite": float(np.isfinite(values).mean()),
            "single_items": single_items,
            "items": [[label == devices[1].label, rows, layout] for label, rows, layout in used]}

rng = np.random.default_rng(7)
data = load_rv_example("hd164922")
t, v, sigma, inst = data.t[::4], data.v[::4], data.sigma[::4], data.instrument[::4]  # 101
assert sorted(set(inst)) == ["a", "j", "k"]
t_ref = 2456000.0
n = 10000  # launches 3000, 3000, 3000, 1000
params = np.empty((n, 2, 5))
params[..., 0] = np.exp(rng.uniform(np.log(2), np.log(5000), (n, 2)))
params[..., 1] = rng.uniform(1, 10, (n, 2))
params[..., 2] = rng.uniform(0, 0.9, (n, 2))
params[..., 3:] = rng.uniform(0, 2 * np.pi, (n, 2, 2))
params[5, 0, 2] = 1.5  # invalid models keep their rows
params[9500, 1, 0] = np.nan
offsets = rng.normal(0, 3, (n, 3))
jitter = rng.uniform(1, 4, (n, 3))
trend = rng.normal(0, 1e-3, (n, 2))
kw = dict(basis="per k e w m0", t_ref=t_ref, instrument=inst, offsets=offsets,
          jitter=jitter, trend=trend)
out = {}
for name, fn, options in (("chi2_mixed", kepler.chi2, {}),
                          ("chi2_fp64", kepler.chi2, {"precision": "fp64"}),
                          ("chi2_fp32", kepler.chi2, {"precision": "fp32"}),
                          ("loglike_double_single", kepler.loglike,
                           {"phase_arithmetic": "double_single"})):
    out[name] = compare(lambda d: [fn(t, v, sigma, params, device=d, **kw,
                                      **options)])
out["radial_velocity"] = compare(lambda d: [kepler.radial_velocity(
    t, params[:8001].reshape(1, 8001, 2, 5), t_ref=t_ref, instrument=inst,
    offsets=offsets[:8001], trend=trend[:8001], precision=p, device=d)
    for p in ("fp64", "mixed")])
for precision in ("fp64", "fp32"):
    m = rng.uniform(-20, 20, (301, 1001))
    e = rng.uniform(0, 0.99, 1001)
    out["solve_" + precision] = compare(lambda d: list(vars(kepler.solve(
        m, e, precision=precision, full=True, device=d)).values()))
theta = np.column_stack([params[:7001].reshape(7001, 10), offsets[:7001], jitter[:7001]])
out["likelihood"] = compare(lambda d: [kepler.RVLikelihood(
    t, v, sigma, n_planets=2, instrument=inst, t_ref=t_ref,
    device=d)(theta)])
known = np.array([[1200.0, 7.3, 0.1, 1.0, 2.0]])
out["search"] = compare(lambda d: list(vars(kepler.search(
    t, v, sigma, instrument=inst, period=(20.0, 200.0),
    known=known, jitter={"a": 3.0, "j": 2.3, "k": 2.7}, n_models=20000, batch=3000,
    seed=11, n_best=5, device=d)).values())[:3])
# parameters page-locked through the first device's context go to it
# straight; the second device stages them (for it they are pageable)
direct = []  # (second device, uploaded straight from params) of each upload
stage = rvmodel.ModelEvaluator._stage
def stage_recording(self, slot, params):
    staged = stage(self, slot, params)
    direct.append((self.info.label == devices[1].label, staged is params))
    return staged
rvmodel.ModelEvaluator._stage = stage_recording
pinned = kepler.empty_params(n, 2, device=devices[0])
pinned[...] = params
out["chi2_pinned"] = compare(lambda d: [kepler.chi2(t, v, sigma, pinned, device=d, **kw)])
out["chi2_pinned"]["direct"] = sorted(set(direct))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def two_device_runs():
    return run_on_two_devices(SCRIPT)


@pytest.mark.parametrize("name, n_items", [
    # 10000 models: 9000 in full launches (an item per device: three launches
    # are too few for items of ITEM_LAUNCHES), 1000 in the last
    ("chi2_mixed", 3), ("chi2_fp64", 3), ("chi2_fp32", 3), ("loglike_double_single", 3),
    ("radial_velocity", 2 * 3),  # 8001 models, two precisions
    ("solve_fp64", 4), ("solve_fp32", 4),  # 301301 elements, items of 2^16 at least
    ("likelihood", 2 + 1),  # 7001 models: 6000 in full launches, 1001 in the last
    ("search", 7)])  # 20000 trial orbits in batches of 3000
def test_two_devices_equal_one(two_device_runs, name, n_items):
    """Identical arrays (values, NaNs, dtypes) in input order; the work was
    cut into items that both devices took."""
    out = two_device_runs[name]
    assert out["same"] and out["finite"] > 0.99
    assert len(out["items"]) == n_items
    assert {second for second, _, _ in out["items"]} == {False, True}


def test_page_locked_parameters_go_straight_to_their_own_device_only(two_device_runs):
    out = two_device_runs["chi2_pinned"]
    assert out["same"] and out["finite"] > 0.99
    assert out["direct"] == [[False, True], [True, False]]


def test_two_device_items_keep_one_device_layouts(two_device_runs):
    """10000 models in launches of 3000 on 2-unit devices (fill 2048): a
    fused item per device over the full launches, then the last launch's 1000
    models split, as a one-device call evaluates them."""
    items = sorted((rows, layout) for _, rows, layout in two_device_runs["chi2_mixed"]["items"])
    assert items == [(1000, "split")] + [(4500, "fused")] * 2
    assert two_device_runs["chi2_mixed"]["single_items"] == 1


def _plan(compute_units: int, layout: str = "auto") -> Plan:
    return Plan("float", "double", layout, "constant", compute_units, "danby")


def test_split_range_one_device_one_item():
    assert split_range(5, 10**7, 1, 2048) == [(5, 10**7)]
    assert split_range(0, 3, 2, 2048) == [(0, 3)]
    assert split_range(0, 16, 2) == [(2 * k, 2 * k + 2) for k in range(8)]
    assert split_range(4, 4, 2) == []


@pytest.mark.parametrize("n_models, n_devices", [(10_000_000, 2), (10_000_000, 3), (600_000, 2),
                                                 (2_000_000, 8), (5000, 2), (1 << 19, 2),
                                                 (100_000_000, 2)])
def test_device_items_follow_one_device_launches(n_models, n_devices):
    """Items cover the models in order; each lies within the full launches or
    within the last launch of a one-device call and carries that launch's
    layout; at least a device's fill of models each, and of ITEM_LAUNCHES
    launches where every device still gets an item; enough items per device
    when there are enough launches (132 units: an H100)."""
    plan = _plan(132)
    items = device_items(plan, n_models, n_devices)
    assert items[0][0] == 0 and items[-1][1] == n_models
    assert all(a[1] == b[0] for a, b in itertools.pairwise(items))
    batch, fill = rvmodel.BATCH_MODELS, rvmodel.FUSED_MIN_MODELS_PER_CU * 132
    full = n_models - n_models % batch
    for lo, hi, layout in items:
        in_last = lo >= full
        assert (hi - 1 >= full) == in_last
        run = n_models - full if in_last else full
        assert layout == plan.layout_for(n_models - full if in_last else batch)
        assert hi - lo >= min(fill, run)
        if not in_last:
            assert hi - lo >= min(rvmodel.ITEM_LAUNCHES * batch, full // n_devices)
    in_full = [item for item in items if item[1] <= full]
    assert len(in_full) >= min(n_devices, full // fill)
    if full >= rvmodel.ITEM_LAUNCHES * batch * BATCHES_PER_DEVICE * n_devices:
        assert len(in_full) >= BATCHES_PER_DEVICE * n_devices


def test_device_items_forced_layout():
    assert {layout for *_, layout in device_items(_plan(2, "split"), 10**6, 2)} == {"split"}
    assert {layout for *_, layout in device_items(_plan(2, "fused"), 10**6, 2)} == {"fused"}


def test_shared_choices(cpu_device):
    """Devices of a run share the solver and phase arithmetic: Markley only
    when all are GPUs, a double-precision phase only when all have fp64."""
    cpu = replace(cpu_device, kind="cpu", fp64=True)
    gpu = replace(cpu_device, kind="gpu", fp64=True)
    gpu_fp32 = replace(gpu, fp64=False)
    assert shared_choices([gpu], "mixed", "auto", "auto") == ("double", "markley")
    assert shared_choices([cpu], "mixed", "auto", "auto") == ("double", "danby")
    assert shared_choices([gpu, cpu], "mixed", "auto", "auto") == ("double", "danby")
    assert shared_choices([gpu, gpu_fp32], "mixed", "auto", "auto") == ("double_single", "markley")
    assert shared_choices([gpu, cpu], "mixed", "double", "markley") == ("double", "markley")
    assert shared_choices([gpu, gpu_fp32], "fp32", "auto", "auto") == ("host", "markley")
    assert shared_choices([gpu, gpu], "fp32", "auto", "auto") == ("auto", "markley")
    with pytest.raises(ValueError, match="kepler_method"):
        shared_choices([gpu, cpu], "mixed", "auto", "fast")
