//CL//
## Type-1 NUFFT Lomb-Scargle on the device, all but the FFT
## (clperiod.periodograms.nufft; spec methods_next.md section 1.4).
##
## Render parameters (strict_undefined; the last three only, and all of
## them, for stage "power"):
##   real           "float" | "double"
##   stage          "spread": nufft_spread_1 and nufft_spread_2; "power": nufft_power
##   fit_mean       floating-mean model: three transforms per object (data, mean
##                  window, doubled window), else two (data, doubled window)
##   normalization  "standard" | "model" | "log" | "psd"
##   write_sums     also write the corrected sums (the type-1 transforms at
##                  the nf grid frequencies)
##
## Grid convention (as tests/reference/nufft.py): the fine grid of n_grid
## cells is periodic, cell l sits at x = 2 pi l / n_grid, a point at the cell
## coordinate xi = cell + frac (frac in [0, 1)) adds c phi(2 (l' - xi) / w) to
## the w cells l' with -w/2 <= l' - xi < w/2 (l = l' mod n_grid), where
## phi(z) = exp(beta (sqrt(1 - z^2) - 1)) is the ES kernel.
##
## nufft_spread_<V>: the spreading as a gather, without atomics. The points of
## each object are sorted by cell; one work-item per (cell l, object) finds,
## by binary search, the points whose cells lie in [l' - ceil(w/2),
## l' + floor(w/2)] (the only cells whose points can reach l') for the image
## l' = l and, near the ends, the image across the periodic edge (n_grid >= 2w
## keeps the two apart), and sums their kernel-weighted strengths: V strength
## vectors share the points (complex, interleaved per point). fp32 sums are
## Kahan-compensated. Output: transforms first_trans .. first_trans + V - 1 of
## the object's n_trans, each n_grid interleaved complex values, contiguous
## (the batch layout of the FFT).
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
<%page args="real, stage, fit_mean=None, normalization=None, write_sums=None"/>
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<% fp32 = real == "float" %>
typedef ${real}2 real2_t;
% if stage == "spread":

// first j in [lo, hi) with cells[j] >= value (hi if none); cells ascending
inline int lower_bound(__global const int *restrict cells, int lo, int hi, const int value)
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

// ES kernel at d cells from a point, |2 d / w| <= 1: exp(beta (sqrt(1 - z^2) - 1))
// written as exp(-beta z^2 / (1 + sqrt(1 - z^2))), which does not cancel near z = 0
inline real_t es_kernel(const real_t d, const real_t two_over_w, const real_t beta)
{
    const real_t z = d * two_over_w;
    const real_t z2 = z * z;
    return exp(-beta * z2 / (1 + sqrt(fmax((real_t) 0, 1 - z2))));
}

## The points of cells [${lo}, ${hi}] added to the accumulators for image ${image}.
<%def name="gather(lo, hi, image, n_vec)">
    {
        const int image = ${image}, last = ${hi};
        for (int j = lower_bound(pt_cell, p0, p1, ${lo}); j < p1 && pt_cell[j] <= last; ++j) {
            const real_t d = (real_t) (image - pt_cell[j]) - pt_frac[j];
            if (d < -half_width || d >= half_width)
                continue;
            const real_t phi = es_kernel(d, two_over_w, beta);
% for v in range(n_vec):
            const real2_t c${v} = pt_str[(long) j * ${n_vec} + ${v}];
%   if fp32:
            KAHAN_ADD(acc_re${v}, err_re${v}, phi * c${v}.x);
            KAHAN_ADD(acc_im${v}, err_im${v}, phi * c${v}.y);
%   else:
            acc_re${v} = fma(phi, c${v}.x, acc_re${v});
            acc_im${v} = fma(phi, c${v}.y, acc_im${v});
%   endif
% endfor
        }
    }
</%def>

<%def name="spread_kernel(n_vec)">
__kernel void nufft_spread_${n_vec}(
    __global const int *restrict pt_start,     // (objects + 1,) point offsets
    __global const int *restrict pt_cell,      // cell of each point, ascending per object
    __global const real_t *restrict pt_frac,   // xi - cell, in [0, 1)
    __global const real2_t *restrict pt_str,   // (points, ${n_vec}) complex strengths
    const int n_grid,                          // >= 2 * width
    const int width,
    const real_t beta,
    const int n_trans,                         // transforms per object in grid
    const int first_trans,                     // the first one this launch writes
    __global real2_t *restrict grid)           // (objects, n_trans, n_grid)
{
    const int l = (int) get_global_id(0);
    const int obj = (int) get_global_id(1);
    if (l >= n_grid)
        return;
    const int p0 = pt_start[obj], p1 = pt_start[obj + 1];
    const int below = (width + 1) / 2, above = width / 2;
    const real_t half_width = (real_t) 0.5 * (real_t) width;
    const real_t two_over_w = 2 / (real_t) width;
% for v in range(n_vec):
    real_t acc_re${v} = 0, acc_im${v} = 0;
%   if fp32:
    real_t err_re${v} = 0, err_im${v} = 0;
%   endif
% endfor
${gather("max(l - below, 0)", "min(l + above, n_grid - 1)", "l", n_vec)}
    if (l - below < 0)  // points near the top end reach l through the edge
${gather("n_grid + l - below", "n_grid - 1", "l + n_grid", n_vec)}
    if (l + above >= n_grid)  // points near cell 0 reach l through the edge
${gather("0", "l + above - n_grid", "l - n_grid", n_vec)}
    __global real2_t *out = grid + ((long) obj * n_trans + first_trans) * n_grid + l;
% for v in range(n_vec):
    out[${v} * (long) n_grid] = (real2_t) (acc_re${v}, acc_im${v});
% endfor
}
</%def>

${spread_kernel(1)}
${spread_kernel(2)}
% else:
<%
    if None in (fit_mean, normalization, write_sums):
        raise NameError("stage 'power' needs fit_mean, normalization and write_sums")
%>
#define N_TRANS ${3 if fit_mean else 2}

__kernel void nufft_power(
    __global const real2_t *restrict modes,       // FFT of the grid: (objects, N_TRANS, n_grid)
    __global const real_t *restrict correction,   // (nf,) 1 / (psi(2 pi k / n_grid) fft_scale)
    __global const real_t *restrict obj_yy,       // sum w y^2 (NaN: no power)
    __global const real_t *restrict obj_scale,    // psd factor
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
        z = (ss * yc * yc - 2 * cs * yc * ys + cc * ys * ys) / (det * obj_yy[obj]);
    else  // one degree of freedom left: the power of the larger column
        z = (cc >= ss ? yc * yc / cc : ys * ys / ss) / obj_yy[obj];
    // at f = 0 the sine column vanishes and no sinusoid fits: NaN as in astropy
    if (m == zero_bin || !(fmax(cc, ss) > degenerate))
        z = (real_t) NAN;
% if normalization == "standard":
    power[(long) obj * nf + m] = z;
% elif normalization == "model":
    power[(long) obj * nf + m] = z / (1 - z);
% elif normalization == "log":
    power[(long) obj * nf + m] = -log1p(-z);
% else:
    power[(long) obj * nf + m] = z * obj_scale[obj];
% endif
}
% endif
