//CL//
## Type-1 NUFFT Lomb-Scargle on the device, all but the FFT
## (clperiod.periodograms.nufft; spec methods_next.md section 1.4).
##
## Render parameters (strict_undefined):
##   real           "float" | "double"
##   stage          "prepare": nufft_prepare; "spread": nufft_spread_data_window,
##                  nufft_spread_data and nufft_spread_window, and their
##                  nufft_scatter_* and nufft_blocks_* twins; "power":
##                  nufft_power; "correction": nufft_correction
## stage "prepare" only (as lsprepare.mako):
##   wg, use_dy, center, min_points, ok, too_few, zero_variance
##   contiguous     each work-item of nufft_prepare reads a run of consecutive
##                  rows (CPUs), else every wg-th row (GPUs: coalesced)
## stage "power" only:
##   fit_mean       floating-mean model: three transforms per object (data, mean
##                  window, doubled window), else two (data, doubled window)
##   normalization  "standard" | "model" | "log" (psd: standard powers, scaled by the host)
##   write_sums     also write the corrected sums (the type-1 transforms at
##                  the nf grid frequencies)
## stage "spread" only:
##   horner         the gather and the scatter take the kernel's values from its
##                  piecewise polynomial (es_kernel_at) instead of exp and sqrt
##   lanes          4 | 8 | 16, at least the kernel's width: the polynomial's
##                  columns (es_polynomial_functions)
##   block          cells per work-item of the nufft_blocks_* kernels (0: not
##                  built; they accumulate in double: a device with fp64)
##   interleave     (with block) their work-items, global size a multiple of
##                  it, take blocks from this many places of the grid in turn
## stage "correction" (a device with fp64): nufft_correction
##
## Grid convention (as tests/reference/nufft.py): the fine grid of n_grid
## cells is periodic, cell l sits at x = 2 pi l / n_grid, a point at the cell
## coordinate xi = cell + frac (frac in [0, 1)) adds c phi(2 (l' - xi) / w) to
## the w cells l' with -w/2 <= l' - xi < w/2 (l = l' mod n_grid), where
## phi(z) = exp(beta (sqrt(1 - z^2) - 1)) is the ES kernel.
##
## nufft_prepare (stage "prepare", a device with fp64): one work-group per
## object runs passes 1-3 of ls_prepare (lsprepare.mako: weights, centring,
## yy, psd scale, status) and keeps the statistics the rows need; then
## nufft_points, one work-item per row, writes, from tr = t - t_0 (t_0 the
## object's first time: rows ascend in time), the unwrapped cell xi = n_grid df tr = cell + frac
## (cell a 64-bit integer, frac in [0, 1)) and the phase e^{2 pi i f_s tr} of
## the shift frequency f_s, both from exact products (fma), and the weights
## wn and wn (u - r) 2^-f. The host twin is clperiod.periodograms.nufft.prepare.
##
## nufft_spread_<vectors>: the spreading as a gather, without atomics. The
## points of each object ascend in time, so their unwrapped cells ascend
## (up to one cell where rounding meets a boundary). At harmonic h a point
## sits at h xi and carries wn (u - r) e^{2 pi i h f_s tr} (data) and
## wn e^{2 pi i h f_s tr} (window). One work-item per (cell l, object) visits
## every image L = l + k n_grid of the cell that the object's points reach,
## finds by binary search the points with cell >= floor((L - w/2) / h) - 1,
## and sums the kernel-weighted strengths of those with -w/2 <= L - h xi < w/2
## up to cell floor((L + w/2) / h) + 1 (the margins of one cell make the
## rounding at boundaries harmless). fp32 sums are Kahan-compensated. Output:
## transforms first_trans .. of the object's n_trans, each n_grid interleaved
## complex values, contiguous (the batch layout of the FFT).
##
## nufft_blocks_<vectors> (CPU devices): the same grid point by point, as
## FINUFFT spreads: one work-item per block of BLOCK cells finds the points
## that reach the block's images as the gather does, evaluates each point's w
## kernel values at once (es_kernel_lanes) and adds them times its strengths
## to strips of local memory in double, then writes the block.
##
## nufft_power: one work-item per (grid frequency m, object). Mode k = m -
## nf / 2 of every transform is FFT cell k mod n_grid; times the correction
## 1 / (psi(2 pi k / n_grid) fft_scale) it is the sum at f_m: data
## YC + i YS = sum w y e^{2 pi i f_m t}, window C + i S = sum w e^{2 pi i f_m t}
## and C2 + i S2 = sum w e^{4 pi i f_m t} (weights summing to 1). The power is
## that of the direct kernel (lombscargle.mako): the 2x2 normal equations
## with CC = (1 + C2) / 2, SS = (1 - C2) / 2, CS = S2 / 2 (less the mean's
## C^2, S^2, C S with fit_mean); a column whose norm is below `degenerate` of
## the other's, or two collinear columns, leave one column; NaN at f = 0.
##
## Defs used by nufft_type3.mako too: es_kernel_function (the ES kernel's
## values) and one_term_power_function (the power of nufft_power from the sums).
<%def name="es_kernel_function()">
// ES kernel at d cells from a point, |2 d / w| <= 1: exp(beta (sqrt(1 - z^2) - 1))
// written as exp(-beta z^2 / (1 + sqrt(1 - z^2))), which does not cancel near z = 0
inline real_t es_kernel(const real_t d, const real_t two_over_w, const real_t beta)
{
    const real_t z = d * two_over_w;
    const real_t z2 = z * z;
    return exp(-beta * z2 / (1 + sqrt(fmax((real_t) 0, 1 - z2))));
}
</%def>

## es_polynomial_functions(real, lanes): the ES kernel from its piecewise
## polynomial (clperiod.periodograms.nufft.es_polynomial): on the unit interval
## i < w of its support, d = i + u - w/2 cells from the point (u in [0, 1]),
## the kernel is sum_k coef[k lanes + i] s^k at s = 2 u - 1 (lanes >= w: 0).
<%def name="es_polynomial_functions(real, lanes)">
typedef ${real}${lanes} real_lanes_t;
#define LANES ${lanes}

// the kernel on every interval at once: lane i at d = i + (s + 1) / 2 - w/2
inline real_lanes_t es_kernel_lanes(
    const real_t s, __constant const real_t *restrict coef, const int n_coef)
{
    real_lanes_t value = vload${lanes}(n_coef - 1, coef);
    for (int k = n_coef - 2; k >= 0; --k)
        value = fma(value, (real_lanes_t) s, vload${lanes}(k, coef));
    return value;
}

// the kernel at d cells from a point, -w/2 <= d < w/2 (interval floor(d + w/2))
inline real_t es_kernel_at(
    const real_t d, const real_t half_width, const int width,
    __constant const real_t *restrict coef, const int n_coef)
{
    const real_t x = d + half_width;
    const int i = clamp((int) x, 0, width - 1);
    const real_t s = 2 * (x - (real_t) i) - 1;
    real_t value = coef[(n_coef - 1) * LANES + i];
    for (int k = n_coef - 2; k >= 0; --k)
        value = fma(value, s, coef[k * LANES + i]);
    return value;
}
</%def>

## one_term_power(data, window, doubled, yy, degenerate, zero): the power of
## the sums at one frequency (nufft_power, and nufft_type3_power of
## nufft_type3.mako); window is unused without fit_mean, zero marks f = 0.
<%def name="one_term_power_function(fit_mean, normalization)">
inline real_t one_term_power(
    const real2_t data, const real2_t window, const real2_t doubled, const real_t yy,
    const real_t degenerate, const int zero)
{
    const real_t yc = data.x, ys = data.y;
    real_t cc = (real_t) 0.5 * (1 + doubled.x);
    real_t ss = (real_t) 0.5 * (1 - doubled.x);
    real_t cs = (real_t) 0.5 * doubled.y;
% if fit_mean:
    cc -= window.x * window.x;
    ss -= window.y * window.y;
    cs -= window.x * window.y;
% endif
    const real_t det = cc * ss - cs * cs;
    real_t z;
    if (cc > degenerate * ss && ss > degenerate * cc && det > degenerate * cc * ss)
        z = (ss * yc * yc - 2 * cs * yc * ys + cc * ys * ys) / (det * yy);
    else  // one degree of freedom left: the power of the larger column
        z = (cc >= ss ? yc * yc / cc : ys * ys / ss) / yy;
    // at f = 0 the sine column vanishes and no sinusoid fits: NaN as in astropy
    if (zero || !(fmax(cc, ss) > degenerate))
        z = (real_t) NAN;
% if normalization == "standard":
    return z;
% elif normalization == "model":
    return z / (1 - z);
% else:
    return -log1p(-z);
% endif
}
</%def>
<%page args="real, stage, fit_mean=None, normalization=None, write_sums=None, horner=None, lanes=None, block=None, interleave=None, wg=None, contiguous=None, use_dy=None, center=None, min_points=None, ok=None, too_few=None, zero_variance=None"/>
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<% fp32 = real == "float" %>
typedef ${real}2 real2_t;
% if stage == "prepare":
<%namespace name="lsprep" file="lsprepare.mako"/>
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define WG ${wg}
// per object: first time t_0, sum w, ybar, residual mean r, min dy, exponents e, f
#define N_STATS 7

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nufft_prepare(
    __global const double *restrict t,
    __global const double *restrict y,
%   if use_dy:
    __global const double *restrict dy,
%   endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global double *restrict obj_stats,    // (objects, N_STATS), see below
    __global int *restrict obj_n_eff,
    __global real_t *restrict obj_yy,
    __global real_t *restrict obj_scale,
    __global double *restrict obj_psd,
    __global char *restrict obj_status)
{
${lsprep.object_statistics(use_dy, center, min_points, ok, too_few, zero_variance, contiguous)}
    if (lid == 0) {
        __global double *stats = obj_stats + (long) obj * N_STATS;
        stats[0] = ot[0];
        stats[1] = w_total;
        stats[2] = ybar;
        stats[3] = res;
        stats[4] = dy_min;
        stats[5] = (double) e;
        stats[6] = (double) f;
    }
}

// first j in [lo, hi) with starts[j] > row; starts ascending
inline int upper_bound(__global const int *restrict starts, int lo, int hi, const int row)
{
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (starts[mid] <= row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__kernel void nufft_points(
    __global const double *restrict t,
    __global const double *restrict y,
%   if use_dy:
    __global const double *restrict dy,
%   endif
    __global const int *restrict obj_start,  // (objects,) first rows
    const int n_objects,
    const int n_rows,
    __global const int *restrict obj_n_eff,  // rows spread (0: none)
    __global const double *restrict obj_stats,
    const double df,                        // grid step
    const double n_grid,                    // fine-grid cells
    const double shift,                     // f_s, the frequency of mode 0
    __global long *restrict pt_cell,        // floor(n_grid df tr)
    __global real_t *restrict pt_frac,      // n_grid df tr - cell, in [0, 1)
    __global real_t *restrict pt_w,         // wn
    __global real_t *restrict pt_wy,        // wn (u - r) 2^-f
    __global real2_t *restrict pt_phase)    // e^{2 pi i f_s tr}
{
    const int g = (int) get_global_id(0);
    if (g >= n_rows)
        return;
    const int obj = upper_bound(obj_start, 0, n_objects, g) - 1;
    if (obj_n_eff[obj] == 0)
        return;
    __global const double *stats = obj_stats + (long) obj * N_STATS;
    const double w_total = stats[1], ybar = stats[2], res = stats[3];
    const int e = (int) stats[5], f = (int) stats[6];
%   if use_dy:
    const double weight = (stats[4] / dy[g]) * (stats[4] / dy[g]);
%   else:
    const double weight = 1.0;
%   endif
%   if center:
    const double scaled = ldexp(y[g], -e) - ldexp(y[obj_start[obj]], -e);
%   else:
    const double scaled = ldexp(y[g], -e);
%   endif
    const real_t below_one = ${"0x1.fffffep-1f" if fp32 else "0x1.fffffffffffffp-1"};
    const double tr = t[g] - stats[0];  // rows ascend in time: from the first
    // n_grid df tr = q + (q_err + n_grid p_err) exactly up to the last term
    const double p = df * tr, p_err = fma(df, tr, -p);
    const double q = n_grid * p, q_err = fma(n_grid, p, -q);
    double cell = floor(q);
    double frac = (q - cell) + (q_err + n_grid * p_err);
    if (frac < 0) {
        cell -= 1;
        frac += 1;
    } else if (frac >= 1) {
        cell += 1;
        frac -= 1;
    }
    // turns of the shift frequency, reduced to [-1/2, 1/2]
    const double a = shift * tr, a_err = fma(shift, tr, -a);
    double r = (a - rint(a)) + a_err;
    r -= rint(r);
    pt_cell[g] = (long) cell;
    pt_frac[g] = fmin((real_t) frac, below_one);
%   if fp32:
    pt_phase[g] = (real2_t) ((real_t) cospi(2 * r), (real_t) sinpi(2 * r));
%   else:
    double sin_r, cos_r;  // common.mako's polynomial: cospi and sinpi take longer
    sincos_cycles(r, &sin_r, &cos_r);
    pt_phase[g] = (real2_t) (cos_r, sin_r);
%   endif
    pt_w[g] = (real_t) (weight / w_total);
    pt_wy[g] = (real_t) (weight / w_total * ldexp((scaled - ybar) - res, -f));
}
% elif stage == "correction":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// The correction factors 1 / (psi(2 pi k / n_grid) fft_scale) of modes k = m -
// nf / 2, m < nf, in fp64 (host twin: nufft.correction_factors, whose quadrature
// psi(theta) = sum_q c_q cos(theta x_q) this sums, with its nodes x_q and weights c_q).
__kernel void nufft_correction(
    __global const double *restrict nodes,
    __global const double *restrict weights,
    const int n_nodes,
    const long nf,
    const double n_grid,
    const double fft_scale,
    __global real_t *restrict factors)
{
    const long m = get_global_id(0);
    if (m >= nf)
        return;
    const double theta = 2 * M_PI * (double) (m - nf / 2) / n_grid;
    double psi = 0;
    for (int q = 0; q < n_nodes; ++q)
        psi += weights[q] * cos(theta * nodes[q]);
    factors[m] = (real_t) (1 / (psi * fft_scale));
}
% elif stage == "spread":
<%
    if horner is None or block is None:
        raise NameError("stage 'spread' needs horner and block")
    if (horner or block) and lanes not in (4, 8, 16):
        raise NameError("stage 'spread' with horner or block needs lanes 4, 8 or 16")
%>
% if block:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif

// first j in [lo, hi) with cells[j] >= value (hi if none); cells ascending
inline int lower_bound(__global const long *restrict cells, int lo, int hi, const long value)
{
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (cells[mid] < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// c^h of a unit phase c, h >= 1
inline real2_t phase_power(const real2_t phase, const int harmonic)
{
    real2_t c = phase;
    for (int m = 1; m < harmonic; ++m)
        c = (real2_t) (c.x * phase.x - c.y * phase.y, c.x * phase.y + c.y * phase.x);
    return c;
}

% if horner or block:
${es_polynomial_functions(real, lanes)}
% endif
% if horner:
#define KERNEL_AT(d) es_kernel_at((d), half_width, width, es_coef, n_coef)
% else:
${es_kernel_function()}
#define KERNEL_AT(d) es_kernel((d), two_over_w, beta)
% endif

<%def name="accumulate(name)">
%   if fp32:
            KAHAN_ADD(acc_${name}.x, err_${name}.x, weight * c.x);
            KAHAN_ADD(acc_${name}.y, err_${name}.y, weight * c.y);
%   else:
            acc_${name} = fma((real2_t) (weight, weight), c, acc_${name});
%   endif
</%def>

## the arguments every spreading kernel takes
<%def name="spread_arguments()">
    __global const int *restrict obj_start,    // first point of each object
    __global const int *restrict obj_n,        // its points (0: none spread)
    __global const long *restrict pt_cell,     // unwrapped cells, ascending per object
    __global const real_t *restrict pt_frac,   // in [0, 1)
    __global const real_t *restrict pt_w,
    __global const real_t *restrict pt_wy,
    __global const real2_t *restrict pt_phase,
    const int harmonic,                        // h >= 1
    const int n_grid,                          // >= 2 * width
    const int width,
    const real_t beta,                         // the ES kernel's shape (without horner)
    __constant const real_t *restrict es_coef, // its polynomial (with horner and block)
    const int n_coef,
    const int n_trans,                         // transforms per object in grid
    const int first_trans,                     // the first one this launch writes
    __global real2_t *restrict grid)           // (objects, n_trans, n_grid)
</%def>

<%def name="spread_kernel(vectors)">
__kernel void nufft_spread_${"_".join(vectors)}(
${spread_arguments()}
{
    const int l = (int) get_global_id(0);
    const int obj = (int) get_global_id(1);
    if (l >= n_grid)
        return;
    const int p0 = obj_start[obj], p1 = p0 + obj_n[obj];
    const real_t half_width = (real_t) 0.5 * (real_t) width;
    const real_t two_over_w = 2 / (real_t) width;
    const real_t h = (real_t) harmonic;
% for v in vectors:
    real2_t acc_${v} = (real2_t) (0, 0);
%   if fp32:
    real2_t err_${v} = (real2_t) (0, 0);
%   endif
% endfor
    if (p1 > p0) {
        // images L = l + k n_grid with L - w/2 <= h (last cell + 1), L + w/2 >= h first cell
        const double reach = 0.5 * width, period = (double) n_grid;
        const double x_first = (double) harmonic * (double) pt_cell[p0];
        const double x_last = (double) harmonic * ((double) pt_cell[p1 - 1] + 1);
        const long k_first = (long) ceil((x_first - reach - l) / period);
        const long k_last = (long) floor((x_last + reach - l) / period);
        for (long k = k_first; k <= k_last; ++k) {
            const long image = l + k * n_grid;
            const long lo = (long) floor(((double) image - reach) / harmonic) - 1;
            const long hi = (long) floor(((double) image + reach) / harmonic) + 1;
            for (int j = lower_bound(pt_cell, p0, p1, lo); j < p1 && pt_cell[j] <= hi; ++j) {
                const real_t d = (real_t) (image - harmonic * pt_cell[j]) - h * pt_frac[j];
                if (d < -half_width || d >= half_width)
                    continue;
                const real2_t phase = pt_phase[j];
                real2_t c = phase;
                for (int m = 1; m < harmonic; ++m)
                    c = (real2_t) (c.x * phase.x - c.y * phase.y, c.x * phase.y + c.y * phase.x);
                c *= KERNEL_AT(d);
% for v in vectors:
                {
                    const real_t weight = ${"pt_wy[j]" if v == "data" else "pt_w[j]"};
${accumulate(v)}
                }
% endfor
            }
        }
    }
    __global real2_t *out = grid + ((long) obj * n_trans + first_trans) * n_grid + l;
% for i, v in enumerate(vectors):
    out[${i} * (long) n_grid] = acc_${v};
% endfor
}
</%def>

<%def name="scatter_kernel(vectors)">
// The spreading of nufft_spread_<vectors> as a scatter: one work-item per
// object adds its points, in order, to the w cells each reaches, in a grid
// the host has zeroed (for objects of few points on grids of many cells,
// where the gather would search every cell). Same kernel values d as the gather.
__kernel void nufft_scatter_${"_".join(vectors)}(
${spread_arguments()}
{
    const int obj = (int) get_global_id(0);
    const int p0 = obj_start[obj], p1 = p0 + obj_n[obj];
    const real_t half_width = (real_t) 0.5 * (real_t) width;
    const real_t two_over_w = 2 / (real_t) width;
    const real_t h = (real_t) harmonic;
    __global real2_t *out = grid + ((long) obj * n_trans + first_trans) * n_grid;
    for (int j = p0; j < p1; ++j) {
        const long base = harmonic * pt_cell[j];
        const real_t shift = h * pt_frac[j];
        const real2_t phase = pt_phase[j];
        real2_t c0 = phase;
        for (int m = 1; m < harmonic; ++m)
            c0 = (real2_t) (c0.x * phase.x - c0.y * phase.y, c0.x * phase.y + c0.y * phase.x);
        const int first = (int) floor(shift - half_width) - 1;
        for (int o = first; o <= first + width + 2; ++o) {
            const real_t d = (real_t) o - shift;  // the gather's (image - h cell) - h frac
            if (d < -half_width || d >= half_width)
                continue;
            long l = (base + o) % n_grid;
            if (l < 0)
                l += n_grid;
            const real2_t c = c0 * KERNEL_AT(d);
% for i, v in enumerate(vectors):
            {
                const real_t weight = ${"pt_wy[j]" if v == "data" else "pt_w[j]"};
                __global real2_t *cell = out + ${i} * (long) n_grid + l;
%   if fp32:
                *cell += weight * c;
%   else:
                *cell = fma((real2_t) (weight, weight), c, *cell);
%   endif
            }
% endfor
        }
    }
}
</%def>

<%def name="block_kernel(vectors)">
// The spreading of nufft_spread_<vectors> point by point (CPU devices): one
// work-item (a work-group of one) per block of BLOCK cells and object. For
// every image of the block that the object's points reach, it finds by binary
// search the points whose w cells may meet the block and adds each point's w
// kernel values (es_kernel_lanes, all at once) times its strengths to strips
// of local memory, in double; then it writes the block's cells. A point's
// cells are first = ceil(h frac - w/2) .. first + w - 1 cells from h cell:
// those with -w/2 <= d < w/2, d = (h cell + first + i) - h xi = i + u - w/2.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void nufft_blocks_${"_".join(vectors)}(
${spread_arguments()}
{
    // strips: cell b of the block at [HALO + b]; a point's w cells start at
    // most HALO cells before the block, and LANES values are added at once
    __local double strips[${2 * len(vectors)}][STRIP];
    // work-item g takes block (g % rows) INTERLEAVE + g / rows: neighbouring
    // blocks, which hold the points of neighbouring times, go to distant
    // work-items (runtimes hand out runs of consecutive work-groups to threads)
    const int n_blocks = (n_grid + BLOCK - 1) / BLOCK;
    const int rows = (n_blocks + INTERLEAVE - 1) / INTERLEAVE;
    const int g = (int) get_global_id(0);
    const int l0 = ((g % rows) * INTERLEAVE + g / rows) * BLOCK;
    const int obj = (int) get_global_id(1);
    if (l0 >= n_grid)
        return;
    const int n_cells = min(BLOCK, n_grid - l0);
    for (int r = 0; r < ${2 * len(vectors)}; ++r)
        for (int b = 0; b < STRIP; ++b)
            strips[r][b] = 0;
    const int p0 = obj_start[obj], p1 = p0 + obj_n[obj];
    const real_t half_width = (real_t) 0.5 * (real_t) width;
    const real_t h = (real_t) harmonic;
    if (p1 > p0) {
        // images [L0, L0 + n_cells) = l0 + k n_grid + [0, n_cells) that meet
        // [h first cell - w/2, h (last cell + 1) + w/2]
        const double reach = 0.5 * width, period = (double) n_grid;
        const double x_first = (double) harmonic * (double) pt_cell[p0];
        const double x_last = (double) harmonic * ((double) pt_cell[p1 - 1] + 1);
        const long k_first = (long) ceil((x_first - reach - (l0 + n_cells - 1)) / period);
        const long k_last = (long) floor((x_last + reach - l0) / period);
        for (long k = k_first; k <= k_last; ++k) {
            const long image = l0 + k * n_grid;
            const long lo = (long) floor(((double) image - reach) / harmonic) - 1;
            const long hi = (long) floor(((double) image + n_cells - 1 + reach) / harmonic) + 1;
            for (int j = lower_bound(pt_cell, p0, p1, lo); j < p1 && pt_cell[j] <= hi; ++j) {
                const real_t shift = h * pt_frac[j];
                const real_t first = ceil(shift - half_width);
                const long offset = harmonic * pt_cell[j] + (long) first - image;
                if (offset <= -width || offset >= n_cells)
                    continue;
                const real_t s = 2 * ((first + half_width) - shift) - 1;
                const real_lanes_t kernel_values = es_kernel_lanes(s, es_coef, n_coef);
                const double${lanes} value = convert_double${lanes}(kernel_values);
                const real2_t c = phase_power(pt_phase[j], harmonic);
                const int at = HALO + (int) offset;
% for i, v in enumerate(vectors):
                {
                    const real_t weight = ${"pt_wy[j]" if v == "data" else "pt_w[j]"};
                    const double re = (double) (weight * c.x), im = (double) (weight * c.y);
                    __local double *strip_re = strips[${2 * i}] + at;
                    __local double *strip_im = strips[${2 * i + 1}] + at;
                    const double${lanes} sum_re = vload${lanes}(0, strip_re);
                    const double${lanes} sum_im = vload${lanes}(0, strip_im);
                    vstore${lanes}(fma(value, (double${lanes}) re, sum_re), 0, strip_re);
                    vstore${lanes}(fma(value, (double${lanes}) im, sum_im), 0, strip_im);
                }
% endfor
            }
        }
    }
    __global real2_t *out = grid + ((long) obj * n_trans + first_trans) * n_grid + l0;
    for (int b = 0; b < n_cells; ++b) {
% for i, v in enumerate(vectors):
        out[${i} * (long) n_grid + b] = (real2_t) (
            (real_t) strips[${2 * i}][HALO + b], (real_t) strips[${2 * i + 1}][HALO + b]);
% endfor
    }
}
</%def>

% if block:
#define BLOCK ${block}
#define INTERLEAVE ${interleave}
#define HALO ${lanes}
#define STRIP (HALO + BLOCK + ${lanes})
% endif
% for vectors in (("data", "window"), ("data",), ("window",)):
${spread_kernel(vectors)}
${scatter_kernel(vectors)}
%   if block:
${block_kernel(vectors)}
%   endif
% endfor
% else:
<%
    if None in (fit_mean, normalization, write_sums):
        raise NameError("stage 'power' needs fit_mean, normalization and write_sums")
%>
#define N_TRANS ${3 if fit_mean else 2}
${one_term_power_function(fit_mean, normalization)}

__kernel void nufft_power(
    __global const real2_t *restrict modes,       // FFT of the grid: (objects, N_TRANS, n_grid)
    __global const real_t *restrict correction,   // (nf,) 1 / (psi(2 pi k / n_grid) fft_scale)
    __global const real_t *restrict obj_yy,       // sum w y^2 (NaN: no power)
    const int nf,
    const int n_grid,
    const int zero_bin,                           // grid index of f = 0, or -1
    const real_t degenerate,
% if write_sums:
    __global real2_t *restrict sums,              // (objects, N_TRANS, nf) corrected modes
% endif
    __global real_t *restrict power)              // (objects, nf)
{
    const int m = (int) get_global_id(0);
    const int obj = (int) get_global_id(1);
    if (m >= nf)
        return;
    const int k = m - nf / 2;
    const real_t corr = correction[m];
    __global const real2_t *mode = modes + (long) obj * N_TRANS * n_grid + (k < 0 ? k + n_grid : k);
    const real2_t data = mode[0] * corr;
% if fit_mean:
    const real2_t window = mode[n_grid] * corr;
% endif
    const real2_t doubled = mode[(N_TRANS - 1) * (long) n_grid] * corr;
% if write_sums:
    __global real2_t *sum = sums + (long) obj * N_TRANS * nf + m;
    sum[0] = data;
%   if fit_mean:
    sum[nf] = window;
%   endif
    sum[(N_TRANS - 1) * (long) nf] = doubled;
% endif
    power[(long) obj * nf + m] = one_term_power(
        data, ${"window" if fit_mean else "(real2_t) (0, 0)"}, doubled, obj_yy[obj], degenerate,
        m == zero_bin);
}
% endif
