//CL//
## Multi-term Lomb-Scargle power from type-1 NUFFTs: the correction of the
## FFT'd fine grids and the per-frequency normal equations
## (clperiod.periodograms.nufft_terms; spec methods_next.md sections 1.1, 1.4).
##
## Render parameters (strict_undefined):
##   real           "float" | "double"
##   nterms         harmonics K of the model (>= 1)
##   fit_mean       the model has a constant term
##   normalization  "standard" | "model" | "log" (psd: "standard", scaled by the host)
##
## Transforms per object: N_TRANS = 3 K fine grids of n_grid cells, FFT'd,
## in the order data_1, window_1, data_2, window_2, ..., data_K, window_K,
## window_{K+1}, ..., window_{2K} (nufft_spread_2 and nufft_spread_1 of
## cl_kernels/nufft.mako write them). At mode k = m - nf / 2, times the
## correction 1 / (psi(2 pi k / n_grid) fft_scale), data_h is
## YC_h + i YS_h = sum w y e^{2 pi i h f_m t} and window_h is
## C_h + i S_h = sum w e^{2 pi i h f_m t} (weights summing to 1, y centred
## when the model asks for it, so C_0 = 1, S_0 = 0 and, with fit_mean, YC_0 = 0).
##
## nufft_terms_power: one work-item per (grid frequency m, object); it
## assembles the normal equations of cl_kernels/multiterm.mako from these sums
## and solves them by Cholesky. A pivot at or below `degenerate` (the
## transforms' tolerance: the sums are only known to it) gives NaN, as a
## singular system does in the direct kernel; so do f = 0 and objects with
## fewer than min_points points.
<%page args="real, nterms, fit_mean, normalization"/>
<%namespace name="common" file="common.mako"/>
<%namespace name="multiterm" file="multiterm.mako"/>
${common.prelude(real)}
typedef ${real}2 real2_t;
#define K ${nterms}
#define BIAS ${int(fit_mean)}
#define M (BIAS + 2 * K)
#define N_TRANS (3 * K)
${multiterm.normal_solve("real_t", int(fit_mean), False, floor=True)}

__kernel void nufft_terms_power(
    __global const real2_t *restrict modes,       // FFT of the grids: (objects, N_TRANS, n_grid)
    __global const real_t *restrict correction,   // (nf,) 1 / (psi(2 pi k / n_grid) fft_scale)
    __global const real_t *restrict obj_yy,       // sum w y^2 (NaN: no power)
    __global const int *restrict obj_n,           // points spread (0: object not OK)
    const int min_points,                         // fewer: no power (too few for K terms)
    const int nf,
    const int n_grid,
    const int zero_bin,                           // grid index of f = 0, or -1
    const real_t degenerate,
    __global real_t *restrict power)              // (objects, nf)
{
    const int m = (int) get_global_id(0);
    const int obj = (int) get_global_id(1);
    if (m >= nf)
        return;
    const int k = m - nf / 2;
    const real_t corr = correction[m];
    __global const real2_t *mode = modes + (long) obj * N_TRANS * n_grid + (k < 0 ? k + n_grid : k);
    real_t C[2 * K + 1], S[2 * K + 1], YC[K + 1], YS[K + 1];
    C[0] = 1;
    S[0] = YC[0] = YS[0] = 0;
    for (int h = 1; h <= K; ++h) {
        const real2_t data = mode[(long) (2 * h - 2) * n_grid] * corr;
        const real2_t window = mode[(long) (2 * h - 1) * n_grid] * corr;
        YC[h] = data.x;
        YS[h] = data.y;
        C[h] = window.x;
        S[h] = window.y;
    }
    for (int h = K + 1; h <= 2 * K; ++h) {
        const real2_t window = mode[(long) (K + h - 1) * n_grid] * corr;
        C[h] = window.x;
        S[h] = window.y;
    }
    real_t z = solve(C, S, YC, YS, degenerate) / obj_yy[obj];
    if (m == zero_bin || obj_n[obj] < min_points)  // no sinusoid fits at f = 0
        z = (real_t) NAN;
% if normalization == "standard":
    power[(long) obj * nf + m] = z;
% elif normalization == "model":
    power[(long) obj * nf + m] = z / (1 - z);
% else:
    power[(long) obj * nf + m] = -log1p(-z);
% endif
}
