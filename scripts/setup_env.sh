#!/usr/bin/env bash
# Set up a machine to run clperiod from this checkout; safe to run again.
#
#   1. pip install -e ".[test,plot,progress,docs]" (skipped when already done for
#      this pyproject.toml and the imports work);
#   2. pip install --no-deps radvel (the Keplerian RV peer of tests/benchmarks)
#      unless it is there; a failure here only warns;
#   3. check that some OpenCL device builds and runs a kernel; if none does and
#      we are root with apt-get, install Debian's PoCL (pocl-opencl-icd, a CPU
#      OpenCL with fp64), else say what to install and exit 1;
#   4. build and install pyvkfft (the extra "fft": VkFFT for clperiod.engine.fft)
#      unless it imports; a failure here only warns;
#   5. print the usable devices.
#
# Quiet unless something fails (then the captured output is shown).
# Environment: PYTHON (default python3), CLPERIOD_SETUP_VERBOSE=1 for full output,
# CLPERIOD_SETUP_FFT=0 to skip step 4.
# The pip wheel pocl-binary-distribution (pyopencl[pocl]) is deliberately not
# used: its PoCL 3.0-rc2 / LLVM 14 cannot build kernels on recent CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
VERBOSE="${CLPERIOD_SETUP_VERBOSE:-0}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

say() { echo "setup_env: $*"; }

# Run a command; show its output only when it fails (or when verbose).
quietly() {
    if [[ "$VERBOSE" == 1 ]]; then
        "$@"
        return
    fi
    local log
    log="$(mktemp)"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        say "FAILED: $*" >&2
        return 1
    fi
    rm -f "$log"
}

# --- 1. Python package and extras ------------------------------------------
stamp="build/setup_env.stamp"
want="$(cat pyproject.toml <("$PYTHON" -c 'import sys; print(sys.executable)') | sha256sum | cut -d' ' -f1)"
installed() {
    # clperiod must import as this checkout's code without the checkout on
    # sys.path (i.e. installed), and every extra must be importable.
    "$PYTHON" - "$ROOT" <<'EOF' >/dev/null 2>&1
import importlib, os, sys
sys.path = [p for p in sys.path if p not in ("", os.getcwd())]
import clperiod
assert os.path.dirname(os.path.dirname(os.path.realpath(clperiod.__file__))) == os.path.realpath(sys.argv[1])
for name in ("pyopencl", "numpy", "scipy", "mako", "pytest", "hypothesis", "astropy",
             "matplotlib", "tqdm", "supersmoother", "mpmath", "nifty_ls", "pandas", "pyarrow",
             "h5py", "dask", "distributed", "sphinx", "myst_parser", "pydata_sphinx_theme",
             "numpydoc", "ruff", "mypy"):
    importlib.import_module(name)
EOF
}
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && installed; then
    say "clperiod already installed (editable) for $("$PYTHON" --version)"
else
    say "installing clperiod (editable) with extras test, plot, progress, docs ..."
    quietly "$PYTHON" -m pip install -e ".[test,plot,progress,docs]"
    mkdir -p build
    echo "$want" >"$stamp"
fi

# --- 2. radvel, the peer of the Keplerian RV tests and benchmarks -------------
# Installed with --no-deps: its declared requirements (emcee, nbsphinx, jupyter,
# ultranest, tables, pandas, ...) are not needed for what tests/peers.py loads
# (the C Kepler solver radvel._kepler and NumPy-only functions), and
# radvel/__init__.py, which imports them, is never run: the check below looks
# for the package and its C extension without importing them.
if ! "$PYTHON" - <<'EOF' >/dev/null 2>&1
import importlib.machinery, importlib.util, sys
spec = importlib.util.find_spec("radvel")
sys.exit(spec is None or importlib.machinery.PathFinder.find_spec(
    "_kepler", spec.submodule_search_locations) is None)
EOF
then
    say "installing radvel (--no-deps) ..."
    quietly "$PYTHON" -m pip install --no-deps radvel ||
        say "radvel not installed: the tests that compare with it will be skipped" >&2
fi

# --- 3. a working OpenCL device ----------------------------------------------
# Prints one line per device that builds and runs a trivial kernel; platforms
# or devices that fail are reported on stderr and ignored. Exit 1 if none works.
probe() {
    "$PYTHON" - <<'EOF'
import sys
import numpy as np
import pyopencl as cl

SOURCE = "__kernel void twice(__global float *a) { int i = get_global_id(0); a[i] = 2 * a[i]; }"
found = 0
try:
    platforms = cl.get_platforms()
except cl.Error as error:  # no ICD registered at all
    platforms = []
    print(f"  no OpenCL platform: {error}", file=sys.stderr)
for p, platform in enumerate(platforms):
    try:
        devices = platform.get_devices()
    except cl.Error as error:
        print(f"  skipped platform {p} {platform.name}: {error}", file=sys.stderr)
        continue
    for d, device in enumerate(devices):
        try:
            context = cl.Context([device])
            queue = cl.CommandQueue(context)
            kernel = cl.Program(context, SOURCE).build().twice
            host = np.arange(16, dtype=np.float32)
            buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                               hostbuf=host)
            kernel(queue, host.shape, None, buffer)
            out = np.empty_like(host)
            cl.enqueue_copy(queue, out, buffer)
            queue.finish()
            assert np.array_equal(out, 2 * host), "wrong kernel result"
        except Exception as error:  # any failure means: not usable
            reason = " ".join(str(error).split())[:300]
            print(f"  skipped {p}:{d} {device.name.strip()} ({platform.name}): {reason}",
                  file=sys.stderr)
            continue
        fp64 = "fp64" if device.double_fp_config else "no fp64"
        kind = next((name.lower() for name in ("GPU", "CPU", "ACCELERATOR")
                     if device.type & getattr(cl.device_type, name)), "other")
        print(f"  {p}:{d} {device.name.strip()} ({platform.name}; {kind}; {fp64})")
        found += 1
sys.exit(0 if found else 1)
EOF
}

report="$(mktemp)"
trap 'rm -f "$report" "$report.err"' EXIT
if probe >"$report" 2>"$report.err"; then
    if [[ "$VERBOSE" == 1 ]]; then
        cat "$report.err" >&2
    elif [[ -s "$report.err" ]]; then
        say "($(grep -c skipped "$report.err") OpenCL device(s) or platform(s) skipped;" \
            "CLPERIOD_SETUP_VERBOSE=1 shows why)"
    fi
else
    say "no working OpenCL device found:" >&2
    cat "$report.err" >&2
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing the CPU OpenCL runtime pocl-opencl-icd with apt-get ..."
        quietly apt-get update
        quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y pocl-opencl-icd
        if ! probe >"$report" 2>"$report.err"; then
            cat "$report.err" >&2
            say "still no working OpenCL device after installing pocl-opencl-icd" >&2
            exit 1
        fi
    else
        cat >&2 <<'EOF'
setup_env: clperiod needs an OpenCL runtime (an ICD). Install one of:
  * a CPU runtime: Debian/Ubuntu  sudo apt-get install pocl-opencl-icd
                   conda          conda install -c conda-forge pocl ocl-icd-system
  * a GPU driver with OpenCL: NVIDIA (driver package with libnvidia-compute / nvidia-opencl-icd),
    AMD ROCm (rocm-opencl-runtime), Intel (intel-opencl-icd)
Do not use the pip package pocl-binary-distribution (pyopencl[pocl]): its PoCL 3.0-rc2
cannot build kernels on recent CPUs. Then run this script again.
EOF
        exit 1
    fi
fi
# --- 4. pyvkfft, the optional VkFFT of clperiod.engine.fft --------------------
# An sdist whose C++ extension is compiled against the OpenCL headers (CL/cl.h)
# and libOpenCL.so; as root with apt-get, Debian's opencl-c-headers and
# ocl-icd-opencl-dev are installed when a test program does not compile and
# link. Only the OpenCL backend is built (VKFFT_BACKEND=opencl). A failure only
# warns (clperiod then computes its FFTs on the host) and is not retried for this
# pyproject.toml and Python until build/pyvkfft.failed is removed.
opencl_sdk_works() {
    local exe
    exe="$(mktemp)"
    printf '#include <CL/cl.h>\nint main() { cl_uint n; return clGetPlatformIDs(0, 0, &n); }\n' |
        "${CXX:-c++}" -x c++ - -o "$exe" -lOpenCL >/dev/null 2>&1
    local status=$?
    rm -f "$exe"
    return $status
}
install_opencl_sdk() {
    local packages=(opencl-c-headers ocl-icd-opencl-dev)
    quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}" 2>/dev/null ||
        { quietly apt-get update && quietly env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y "${packages[@]}"; }
}
build_pyvkfft() {
    if ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
        say "no C++ compiler (${CXX:-c++}) to build pyvkfft" >&2
        return 1
    fi
    if ! opencl_sdk_works; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
            say "installing the OpenCL headers (opencl-c-headers ocl-icd-opencl-dev) ..."
            install_opencl_sdk || return 1
        else
            say "no OpenCL headers and libOpenCL.so to build pyvkfft against" \
                "(Debian/Ubuntu: opencl-c-headers ocl-icd-opencl-dev)" >&2
            return 1
        fi
    fi
    say "building pyvkfft (OpenCL backend; about 20 s) ..."
    quietly env VKFFT_BACKEND=opencl "$PYTHON" -m pip install --no-build-isolation "pyvkfft>=2025.1"
}
failed_stamp="build/pyvkfft.failed"
if [[ "${CLPERIOD_SETUP_FFT:-1}" == 0 ]] ||
    "$PYTHON" -c "import pyvkfft.opencl" >/dev/null 2>&1; then
    :
elif [[ -f "$failed_stamp" && "$(cat "$failed_stamp")" == "$want" ]]; then
    say "pyvkfft is not installed (its build failed before; remove $failed_stamp to retry)"
elif build_pyvkfft; then
    rm -f "$failed_stamp"
else
    mkdir -p build
    echo "$want" >"$failed_stamp"
    say "pyvkfft not installed: clperiod computes its FFTs on the host" >&2
fi

say "usable OpenCL devices:"
cat "$report"
