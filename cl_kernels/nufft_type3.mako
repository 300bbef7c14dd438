//CL//
## Type-3 NUFFT Lomb-Scargle at any frequencies: the stages around the type-1
## pipeline of nufft.mako (clperiod.periodograms.nufft_type3, whose docstring
## derives the method; spec methods_next.md section 1.5).
##
## Render parameters (strict_undefined):
##   real           "float" | "double"
##   stage          "prescale": nufft_type3_prescale; "power": nufft_type3_power
## stage "prescale" only:
##   math           "float" | "double": the type of the kernel's arithmetic
##                  (double wherever the device has it)
## stage "power" only:
##   fit_mean       floating-mean model
##   nterms         harmonics K of the model (>= 1)
##   normalization  "standard" | "model" | "log" (psd: standard powers, scaled by the host)
##
## nufft_type3_prescale: one work-item per row (rows of objects that are not
## spread, whose inputs nufft_points leaves unwritten, are never read). The
## row's strengths wn and wn y' are divided by psi(theta), the Fourier
## transform of the ES kernel in cell units at theta = 2 pi (s - 1/4), with
## s = xi / n_grid = step (t - t_0) in [0, 1/2]; 1/psi is the Chebyshev
## series sum_k c_k T_k(x) in x = 2 (4 s - 1)^2 - 1 (Clenshaw's recurrence).
##
## nufft_type3_power: one work-item per (target frequency q, object). The
## FFT'd fine grids hold, at mode k = m - n_modes / 2, times the correction
## 1 / psi(2 pi k / n_grid), the type-1 sums G(n) = sum b e^{2 pi i n step
## (t - t_0)} of the prescaled strengths b at lattice frequency n step,
## n = n_lo + m; the data (row 0) and the window (row 1). Centred at
## t_c = 1 / (4 step) they are (-i)^n G(n), and conj((-i)^-n G(-n)) for n < 0
## (real strengths; only when n_lo = 0). A target at p = h f / step takes the
## width samples n = first .. first + width - 1 (first = ceil(p - width / 2),
## relative to n_lo in the tables), each weighted by the ES kernel at
## n - p = offset + i cells: the data at h f (h = 1 .. K) and the window at
## h f (h = 1 .. 2 K; not at f for one term without fit_mean), then the power
## of nufft_power (nufft.mako) for K = 1, of nufft_terms_power (the Cholesky
## solve of multiterm.mako) for K > 1.
<%page args="real, stage, math=None, fit_mean=None, nterms=None, normalization=None"/>
<%namespace name="common" file="common.mako"/>
<%namespace name="nufft" file="nufft.mako"/>
<%namespace name="multiterm" file="multiterm.mako"/>
${common.prelude(real)}
typedef ${real}2 real2_t;
% if stage == "prescale":
%   if math == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
%   endif
typedef ${math} math_t;

__kernel void nufft_type3_prescale(
    __global const long *restrict pt_cell,          // unwrapped cells of xi
    __global const real_t *restrict pt_frac,        // xi - cell, in [0, 1)
    const int n_rows,
    const math_t n_grid,
    __global const math_t *restrict coefficients,   // Chebyshev series of 1 / psi
    const int n_coefficients,
    __global real_t *restrict pt_w,
    __global real_t *restrict pt_wy)
{
    const int g = (int) get_global_id(0);
    if (g >= n_rows)
        return;
    const math_t s = ((math_t) pt_cell[g] + (math_t) pt_frac[g]) / n_grid;
    const math_t v = 4 * s - 1;
    const math_t x = 2 * v * v - 1;
    math_t b1 = 0, b2 = 0;
    for (int k = n_coefficients - 1; k >= 1; --k) {
        const math_t b0 = fma(2 * x, b1, coefficients[k] - b2);
        b2 = b1;
        b1 = b0;
    }
    const math_t factor = fma(x, b1, coefficients[0] - b2);
    pt_w[g] = (real_t) (pt_w[g] * factor);
    pt_wy[g] = (real_t) (pt_wy[g] * factor);
}
% else:
<%
    if None in (fit_mean, nterms, normalization):
        raise NameError("stage 'power' needs fit_mean, nterms and normalization")
%>
${nufft.es_kernel_function()}
% if nterms == 1:
${nufft.one_term_power_function(fit_mean, normalization)}
% else:
#define K ${nterms}
#define BIAS ${int(fit_mean)}
#define M (BIAS + 2 * K)
${multiterm.normal_solve("real_t", int(fit_mean), False, floor=True)}
% endif

// The centred sum at lattice sample n = n_lo + r of one transform row
inline real2_t lattice_sample(
    __global const real2_t *restrict row, __global const real_t *restrict correction,
    const int r, const int n_lo_mod4, const int n_modes, const int n_grid)
{
    const int m = abs(r);  // r < 0 (n < 0) only when n_lo = 0: mirror of -n
    const int k = m - n_modes / 2;
    const real2_t g = row[k < 0 ? k + n_grid : k] * correction[m];
    // times (-i)^n = cos - i sin of a quarter turn q = n mod 4
    const int q = (m + n_lo_mod4) & 3;
    const real_t cos_q = (real_t) ((q & 1) ? 0 : 1 - q), sin_q = (real_t) ((q & 1) ? 2 - q : 0);
    const real2_t c = (real2_t) (fma(g.x, cos_q, g.y * sin_q), fma(g.y, cos_q, -g.x * sin_q));
    return (real2_t) (c.x, r < 0 ? -c.y : c.y);
}

// sum_i phi(2 (offset + i) / width) G_c(n_lo + first + i) of one row, or of
// two rows (both: the data and the window at f, with the same kernel values)
inline void interpolate(
    __global const real2_t *restrict row, __global const real2_t *restrict second_row,
    const int both, __global const real_t *restrict correction, const int first,
    const real_t offset, const int n_lo_mod4, const int n_modes, const int n_grid,
    const int width, const real_t beta, real2_t *out, real2_t *second_out)
{
    const real_t two_over_w = 2 / (real_t) width;
    real2_t acc = (real2_t) (0, 0), second_acc = (real2_t) (0, 0);
    for (int i = 0; i < width; ++i) {
        const real_t weight = es_kernel(offset + (real_t) i, two_over_w, beta);
        const real2_t weights = (real2_t) (weight, weight);
        const int r = first + i;
        acc = fma(weights, lattice_sample(row, correction, r, n_lo_mod4, n_modes, n_grid), acc);
        if (both)
            second_acc = fma(
                weights,
                lattice_sample(second_row, correction, r, n_lo_mod4, n_modes, n_grid),
                second_acc);
    }
    *out = acc;
    *second_out = second_acc;
}

__kernel void nufft_type3_power(
    __global const real2_t *restrict modes,       // FFT of the grids: (objects, 2, n_grid)
    __global const real_t *restrict correction,   // (n_modes,) 1 / psi(2 pi k / n_grid)
    __global const int *restrict first,           // (2 K, nf) first sample of h f, from n_lo
    __global const real_t *restrict offset,       // (2 K, nf) its distance from h f, in samples
    __global const real_t *restrict obj_yy,       // sum w y^2 (NaN: no power)
    __global const int *restrict obj_n,           // points spread (0: object not OK)
    const int min_points,                         // fewer: no power (too few for K terms)
    const int nf,
    const int n_modes,
    const int n_grid,
    const int n_lo_mod4,
    const int width,
    const real_t beta,
    const int zero_bin,                           // index of f = 0, or -1
    const real_t degenerate,
    __global real_t *restrict power)              // (objects, nf)
{
    const int q = (int) get_global_id(0);
    const int obj = (int) get_global_id(1);
    if (q >= nf)
        return;
    __global const real2_t *data_row = modes + (long) obj * 2 * n_grid;
    __global const real2_t *window_row = data_row + n_grid;
    real2_t unused;
% for h in range(1, 2 * nterms + 1):
<%
    with_window = h > 1 or fit_mean or nterms > 1
    row, second = ("data_row", "window_row") if h <= nterms else ("window_row", "window_row")
    outputs = ("&data%d" % h, "&window%d" % h) if h <= nterms else ("&window%d" % h, "&unused")
%>\
%   if h <= nterms:
    real2_t data${h}, window${h} = (real2_t) (0, 0);
%   else:
    real2_t window${h};
%   endif
    interpolate(${row}, ${second}, ${int(h <= nterms and with_window)}, correction,
                first[${h - 1} * (long) nf + q], offset[${h - 1} * (long) nf + q], n_lo_mod4,
                n_modes, n_grid, width, beta, ${outputs[0]}, ${outputs[1]});
% endfor
% if nterms == 1:
    power[(long) obj * nf + q] = one_term_power(
        data1, window1, window2, obj_yy[obj], degenerate, q == zero_bin);
% else:
    real_t C[2 * K + 1], S[2 * K + 1], YC[K + 1], YS[K + 1];
    C[0] = 1;
    S[0] = YC[0] = YS[0] = 0;
%   for h in range(1, 2 * nterms + 1):
    C[${h}] = window${h}.x;
    S[${h}] = window${h}.y;
%     if h <= nterms:
    YC[${h}] = data${h}.x;
    YS[${h}] = data${h}.y;
%     endif
%   endfor
    real_t z = solve(C, S, YC, YS, degenerate) / obj_yy[obj];
    if (q == zero_bin || obj_n[obj] < min_points)  // no sinusoid fits at f = 0
        z = (real_t) NAN;
%   if normalization == "standard":
    power[(long) obj * nf + q] = z;
%   elif normalization == "model":
    power[(long) obj * nf + q] = z / (1 - z);
%   else:
    power[(long) obj * nf + q] = -log1p(-z);
%   endif
% endif
}
% endif
