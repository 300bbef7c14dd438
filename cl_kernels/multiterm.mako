//CL//
## Multi-term (Fourier series) Lomb-Scargle power of light curves that share
## their times (one, or the resamplings of a bootstrap), or of the objects of
## a catalog, fp64.
##
## Render parameters (strict_undefined):
##   nterms  harmonics K of the model (0 <= K)
##   bias    1 when the model has a constant term (fit_mean), else 0
##   wg      work-group size (points are staged through local memory in
##           tiles of wg)
##   rows    light curves per work-item (they share the harmonics of t)
##   direct  evaluate every harmonic's sine and cosine from its own reduced
##           phase (m f t mod 1) instead of by angle addition from the first
##   coefficients  write the M least-squares coefficients of each frequency
##           (the unknowns below, in that order) instead of the power
##   arbitrary  read frequency k from the array grid_f instead of fmin + k df
##   catalog  the kernel multiterm_catalog instead of multiterm_power: the
##           light curves of a ragged catalog (rows 1, no coefficients),
##           each with its own times, on a block of grid bins
##
## The model y(t) = [b] + sum_{k=1..K} a_k sin(k phi) + c_k cos(k phi),
## phi = 2 pi f t, is fitted by weighted least squares (weights w ~ dy^-2) at
## every frequency, as astropy's "chi2" method does: the power is
## p = X^T W y' (X^T W X)^-1 X^T W y' (astropy's unnormalized chi2_ref - chi2).
## The host passes each light curve standardized (clperiod.periodograms.standardize): w
## summing to 1, y' centred (when asked) and scaled to a mean square near 1,
## so p is the standard power times sum w y'^2 and the coefficients are in
## the units of y' (the host converts them back to those of y).
## The normal matrix needs the sums C_m = sum w cos(m phi) and
## S_m = sum w sin(m phi) for m = 0 .. 2K (product-to-sum identities), the
## right-hand side sum w y' cos(k phi) and sum w y' sin(k phi) for k <= K.
## multiterm_power's ND-range is nf (padded to wg) x ceil(n_curves / rows):
## one work-item per frequency and group of `rows` light curves, whose sums it
## accumulates from one evaluation of cos(m phi), sin(m phi) per point; a
## work-group's items share their light curves. multiterm_catalog's is the
## block's bins (padded to wg) x objects: a work-group's items share one
## object, whose points (offsets `starts`) they stage. Each system is solved by Cholesky in
## private memory (and back substitution for the coefficients). A system that
## is not positive definite (f = 0, or fewer distinct phases than unknowns)
## gives NaN.
<%namespace name="common" file="common.mako"/>
${common.prelude("double")}
#define K ${nterms}
#define BIAS ${bias}
#define M (BIAS + 2 * K)
#define WG ${wg}
#define ROWS ${rows}

## normal_solve(real, bias, coefficients, floor=False): the C function
## `solve` of the normal system of one frequency, for kernels that define K,
## BIAS (= bias) and M (= BIAS + 2 K). It takes the window sums C_m, S_m
## (m = 0 .. 2K) and the data sums YC_k, YS_k (k = 0 .. K) of weights summing
## to 1 and returns p = b^T A^-1 b; a Cholesky pivot that is not positive
## (with `floor`: not above its last argument, `floor`) gives NaN. With
## coefficients, also x = A^-1 b (all NaN for a singular system).
<%def name="normal_solve(real, bias, coefficients, floor=False)">
// p = b^T A^-1 b of one light curve's sums, NaN for a singular system; with
// coefficients also x = A^-1 b (all NaN for a singular system).
inline ${real} solve(const ${real} *C, const ${real} *S, const ${real} *YC, const ${real} *YS${
        ", " + real + " *x" if coefficients else ""}${", const " + real + " floor" if floor else ""})
{
    // unknowns: [bias], then sin(j phi), cos(j phi) for j = 1 .. K
    ${real} A[M][M], b[M];
% if bias:
    A[0][0] = C[0];
    b[0] = YC[0];
% endif
    for (int j = 1; j <= K; ++j) {
        const int sj = BIAS + 2 * (j - 1), cj = sj + 1;
        b[sj] = YS[j];
        b[cj] = YC[j];
% if bias:
        A[0][sj] = A[sj][0] = S[j];
        A[0][cj] = A[cj][0] = C[j];
% endif
        for (int q = 1; q <= K; ++q) {
            const int sq = BIAS + 2 * (q - 1), cq = sq + 1;
            const int d = abs(j - q);
            const ${real} s_diff = j >= q ? S[d] : -S[d];  // sin((j - q) phi)
            A[sj][sq] = (${real}) 0.5 * (C[d] - C[j + q]);
            A[cj][cq] = (${real}) 0.5 * (C[d] + C[j + q]);
            A[sj][cq] = (${real}) 0.5 * (S[j + q] + s_diff);
            A[cj][sq] = (${real}) 0.5 * (S[j + q] - s_diff);
        }
    }
    // Cholesky A = L L^T (L in the lower triangle of A), then z = L^-1 b and
    // p = z . z; a pivot that is not positive gives NaN.
    ${real} p = 0;
    for (int r = 0; r < M; ++r) {
        for (int c = 0; c <= r; ++c) {
            ${real} sum = A[r][c];
            for (int q = 0; q < c; ++q)
                sum -= A[r][q] * A[c][q];
            if (r == c) {
                if (!(sum > ${"floor" if floor else "0"})) {
% if coefficients:
                    for (int q = 0; q < M; ++q)
                        x[q] = NAN;
% endif
                    return NAN;
                }
                A[r][r] = sqrt(sum);
            } else {
                A[r][c] = sum / A[c][c];
            }
        }
        ${real} z = b[r];
        for (int q = 0; q < r; ++q)
            z -= A[r][q] * b[q];
        b[r] = z / A[r][r];
        p += b[r] * b[r];
    }
% if coefficients:
    // L^T x = z
    for (int r = M - 1; r >= 0; --r) {
        ${real} v = b[r];
        for (int q = r + 1; q < M; ++q)
            v -= A[q][r] * x[q];
        x[r] = v / A[r][r];
    }
% endif
    return p;
}
</%def>
${normal_solve("double", bias, coefficients)}
## c, s = cos and sin of harmonic m (an int expression) of the reduced phase
## `cycles`: from its own reduced phase m * cycles, or by angle addition from
## harmonic m - 1 (c_prev, s_prev) and the first (c1, s1).
<%def name="harmonic(m, c, s, c_prev, s_prev)">
% if direct:
                {
                    double rm = (${m}) * cycles;
                    rm -= rint(rm);
                    sincos_cycles(rm, &${s}, &${c});
                }
% else:
                {
                    const double c_next = ${c_prev} * c1 - ${s_prev} * s1;
                    ${s} = ${s_prev} * c1 + ${c_prev} * s1;
                    ${c} = c_next;
                }
% endif
</%def>

<%
    if catalog and (rows != 1 or coefficients):
        raise NameError("the catalog kernel takes rows=1 and no coefficients")
%>
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
% if catalog:
void multiterm_catalog(
    __global const double *restrict t,    // (points,) times relative to each object's reference
    __global const double *restrict w,    // (points,) dy^-2, normalised per object
    __global const double *restrict wy,   // (points,) w * (centred) y
    __global const int *restrict starts,  // (objects + 1,) point offsets
    const int obj0, const double fmin, const double df, const int k0, const int nf,
    __global double *restrict power)      // (launch objects, nf) p of bins k0 .. k0 + nf - 1
{
    const int k = get_global_id(0);
    const int lid = get_local_id(0);
    const int first = get_global_id(1);  // the launch's object: first, catalog's obj0 + first
    const int n_curves = get_global_size(1);
    const int p0 = starts[obj0 + first], n = starts[obj0 + first + 1] - p0;
    const double f = fmin + df * (k0 + k);
% else:
void multiterm_power(
    __global const double *restrict t,    // (n,) times relative to a reference
    __global const double *restrict w,    // (n_curves, n) dy^-2, normalised
    __global const double *restrict wy,   // (n_curves, n) w * (centred) y
%   if arbitrary:
    const int n, __global const double *restrict grid_f, const int nf, const int n_curves,
%   else:
    const int n, const double fmin, const double df, const int nf, const int n_curves,
%   endif
    __global double *restrict power)      // (n_curves, nf) p, or
                                          // (n_curves, nf, M) coefficients
{
    const int k = get_global_id(0);
    const int lid = get_local_id(0);
    const int first = get_global_id(1) * ROWS;  // this item's light curves: first + r
%   if arbitrary:
    const double f = grid_f[min(k, nf - 1)];  // padding items repeat the last (unused)
%   else:
    const double f = fmin + df * k;
%   endif
% endif
    __local double l_t[WG], l_w[ROWS][WG], l_wy[ROWS][WG];
    double C[ROWS][2 * K + 1], S[ROWS][2 * K + 1], YC[ROWS][K + 1], YS[ROWS][K + 1];
    for (int r = 0; r < ROWS; ++r) {
        for (int m = 0; m <= 2 * K; ++m)
            C[r][m] = S[r][m] = 0.0;
        for (int m = 0; m <= K; ++m)
            YC[r][m] = YS[r][m] = 0.0;
    }
    for (int base = 0; base < n; base += WG) {
        barrier(CLK_LOCAL_MEM_FENCE);
% if catalog:
        if (base + lid < n) {
            l_t[lid] = t[p0 + base + lid];
            l_w[0][lid] = w[p0 + base + lid];
            l_wy[0][lid] = wy[p0 + base + lid];
        }
% else:
        if (base + lid < n) {
            l_t[lid] = t[base + lid];
            for (int r = 0; r < ROWS; ++r) {  // past the last curve: repeat it (unused)
                const size_t row = (size_t) min(first + r, n_curves - 1) * n;
                l_w[r][lid] = w[row + base + lid];
                l_wy[r][lid] = wy[row + base + lid];
            }
        }
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG, n - base);
        for (int i = 0; i < count; ++i) {
            double cycles = f * l_t[i];
            cycles -= rint(cycles);
            double s1, c1;
            sincos_cycles(cycles, &s1, &c1);
% if rows == 1:
            // one light curve: the harmonics accumulate as they are generated
            // (on an H100 3-7 % faster than storing them first)
            const double wi = l_w[0][i], wyi = l_wy[0][i];
            C[0][0] += wi;
            YC[0][0] += wyi;
            double cm = 1.0, sm = 0.0;
            for (int m = 1; m <= 2 * K; ++m) {
${harmonic("m", "cm", "sm", "cm", "sm")}
                C[0][m] += wi * cm;
                S[0][m] += wi * sm;
                if (m <= K) {
                    YC[0][m] += wyi * cm;
                    YS[0][m] += wyi * sm;
                }
            }
% else:
            // several light curves: the harmonics once, then every curve's
            // sums (on 2 PoCL cores 1.3-1.6x faster than generating them per curve)
            double cm[2 * K + 1], sm[2 * K + 1];
            cm[0] = 1.0;
            sm[0] = 0.0;
            for (int m = 1; m <= 2 * K; ++m) {
${harmonic("m", "cm[m]", "sm[m]", "cm[m - 1]", "sm[m - 1]")}
            }
            for (int r = 0; r < ROWS; ++r) {
                const double wi = l_w[r][i], wyi = l_wy[r][i];
                for (int m = 0; m <= 2 * K; ++m) {
                    C[r][m] += wi * cm[m];
                    S[r][m] += wi * sm[m];
                }
                for (int m = 0; m <= K; ++m) {
                    YC[r][m] += wyi * cm[m];
                    YS[r][m] += wyi * sm[m];
                }
            }
% endif
        }
    }
    if (k >= nf)
        return;
    for (int r = 0; r < ROWS && first + r < n_curves; ++r) {
        const size_t at = (size_t) (first + r) * nf + k;
% if coefficients:
        double x[M];
        solve(C[r], S[r], YC[r], YS[r], x);
        for (int q = 0; q < M; ++q)
            power[at * M + q] = x[q];
% else:
        power[at] = solve(C[r], S[r], YC[r], YS[r]);
% endif
    }
}
