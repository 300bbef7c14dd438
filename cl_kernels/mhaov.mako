//CL//
## Multi-harmonic analysis of variance (Schwarzenberg-Czerny 1996), single-band
## and multiband as P4J combines the bands, of the objects of a ragged catalog.
##
## Render parameters (strict_undefined):
##   real        "float" | "double"
##   harmonics   H, harmonics fitted in each band (1 <= H)
##   wg          work-group size (points are staged through local memory in
##               tiles of wg)
##   arbitrary   read the frequency of each grid index from an array instead of
##               fmin + k df
##   pivot_tol   a harmonic column is left out of a band's fit where its part
##               independent of the columns before it has a squared norm of at
##               most pivot_tol times the magnitude of the sums that formed its
##               own (rounding would decide it): at f = 0 and wherever all of a
##               band's phases coincide, every column is left out (P4J: 0)
##
## For each object, band and frequency f the kernel returns the fraction of the
## band's weighted sum of squares about its mean that the model
## c_0 + sum_{h=1..H} a_h cos(h phi) + b_h sin(h phi), phi = 2 pi f t, explains
## (its weighted least-squares fit), and writes, per object and frequency,
## Z = sum_b scale_b p_b over the object's bands. The host passes each band's
## weights w ~ dy^-2 normalised to sum 1 within the band, its values u centred
## on the band's weighted mean and scaled (as wu = w u), and scale_b =
## q_b / sum_b(w u^2), q_b the band's share of the object's weighted sum of
## squares: Z is the object's explained share, sum_b dchi2_b / sum_b chi2_b,
## from which the host forms the F statistic.
##
## Sums, per band (w summing to 1, so sum w = 1 is not accumulated):
##   V_m = sum w (cos m phi - 1), S_m = sum w sin m phi (m = 1 .. 2H),
##   YU_h = sum wu (cos h phi - 1), YS_h = sum wu sin h phi (h = 1 .. H),
##   Y0 = sum wu (0 up to the host's rounding).
## The normal matrix of the harmonic columns centred on their weighted means
## follows from them by product-to-sum formulas; the versines cos - 1 (formed
## from the half angle, -2 sin^2(phi / 2), and advanced by the angle-addition
## recurrence of versines) keep their digits where phases bunch near 0 (f -> 0,
## aliases), where the centred entries are small differences. The explained
## sum of squares is b^T A^-1 b of the centred system, by Cholesky.
##
## Phases (times t measured from each object's reference observation):
##   fp64: t; the phase fma(f, t, -rint(f t)) in cycles.
##   fp32, uniform grid: a = frac(fmin t), b_hi + b_lo = frac(df t) (double-
##     single); the phase of grid index k is a + k (b_hi + b_lo) with k split
##     into multiples of 4096 and a remainder, so that both products with b_hi
##     are exact as a pair (p + e): ~1e-7 cycles for any epoch and grid index.
##   fp32, frequency array: f_hi + f_lo and t_hi + t_lo; the product f_hi t_hi
##     exactly as p + e, plus f_hi t_lo + f_lo t_hi.
##
## ND-range: the launch's bins (padded to wg) x objects; a work-group's items
## share one object, whose points (offsets `starts`, sorted by band) they
## stage; when the staged band changes the finished band's fit is solved.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<%
    fp64 = real == "double"
    suffix = "" if fp64 else "f"
%>
#define H ${harmonics}
#define P (2 * H)
#define WG ${wg}
#define PIVOT_TOL ((real_t) ${repr(float(pivot_tol))}${suffix})

// sum w (cos m phi - 1) and sum w sin m phi for any integer m (0 at m = 0)
inline real_t versine_sum(const real_t *V, const int m)
{
    return m == 0 ? (real_t) 0 : V[abs(m) - 1];
}

inline real_t sine_sum(const real_t *S, const int m)
{
    return m == 0 ? (real_t) 0 : m > 0 ? S[m - 1] : -S[-m - 1];
}

// Entry (c, e) of the normal matrix of the centred columns: column c is
// cos(j phi) (c even) or sin(j phi) (c odd), j = c / 2 + 1; the weighted mean
// of cos(j phi) is 1 + V_j, that of sin(j phi) is S_j.
inline real_t centred_product(const int c, const int e, const real_t *V, const real_t *S)
{
    const int j = c / 2 + 1, q = e / 2 + 1;
    const real_t vj = V[j - 1], vq = V[q - 1];
    const real_t v_diff = versine_sum(V, j - q), v_sum = versine_sum(V, j + q);
    if (!(c & 1) && !(e & 1))  // cos j cos q = (cos(j - q) + cos(j + q)) / 2
        return (real_t) 0.5 * (v_diff + v_sum) - vj - vq - vj * vq;
    if ((c & 1) && (e & 1))    // sin j sin q = (cos(j - q) - cos(j + q)) / 2
        return (real_t) 0.5 * (v_diff - v_sum) - S[j - 1] * S[q - 1];
    if (e & 1)                 // cos j sin q = (sin(j + q) + sin(q - j)) / 2
        return (real_t) 0.5 * (sine_sum(S, j + q) + sine_sum(S, q - j)) - (1 + vj) * S[q - 1];
    return (real_t) 0.5 * (sine_sum(S, j + q) + sine_sum(S, j - q)) - (1 + vq) * S[j - 1];
}

// Size of the sums that form the diagonal entry of column c (the scale of its
// rounding error).
inline real_t diagonal_scale(const int c, const real_t *V, const real_t *S)
{
    const int j = c / 2 + 1;
    const real_t double_harmonic = (real_t) 0.5 * fabs(V[2 * j - 1]);
    return (c & 1) ? double_harmonic + S[j - 1] * S[j - 1]
                   : double_harmonic + 2 * fabs(V[j - 1]) + V[j - 1] * V[j - 1];
}

// The weighted sum of squares of one band's centred values that its fit
// explains, b^T A^-1 b, from the band's sums; columns that rounding would
// decide (see pivot_tol) are left out of the fit.
inline real_t explained(const real_t *V, const real_t *S, const real_t *YU, const real_t *YS,
                        const real_t y0)
{
    real_t A[P][P], b[P];
    for (int c = 0; c < P; ++c) {
        const int j = c / 2 + 1;
        // sum w (u - y0) g_c with g_c centred: the data sum less y0 times the column's mean
        b[c] = (c & 1) ? YS[j - 1] - S[j - 1] * y0 : YU[j - 1] - V[j - 1] * y0;
        for (int e = 0; e <= c; ++e)
            A[c][e] = centred_product(c, e, V, S);
    }
    // Cholesky A = L L^T in the lower triangle; a left-out column keeps
    // L[c][c] = 0 and zeros below it, z = L^-1 b, the explained sum z . z
    real_t p = 0;
    for (int r = 0; r < P; ++r) {
        for (int c = 0; c < r; ++c) {
            real_t sum = A[r][c];
            for (int q = 0; q < c; ++q)
                sum -= A[r][q] * A[c][q];
            A[r][c] = A[c][c] > 0 ? sum / A[c][c] : (real_t) 0;
        }
        real_t pivot = A[r][r];
        real_t z = b[r];
        for (int q = 0; q < r; ++q) {
            pivot -= A[r][q] * A[r][q];
            z -= A[r][q] * b[q];
        }
        if (pivot > PIVOT_TOL * diagonal_scale(r, V, S)) {
            A[r][r] = sqrt(pivot);
            b[r] = z / A[r][r];
            p += b[r] * b[r];
        } else {
            A[r][r] = 0;
            b[r] = 0;
        }
    }
    return p;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mhaov_catalog(
% if fp64:
    __global const double *restrict pt_t,      // (points,) times from the object's reference
%   if arbitrary:
    __global const double *restrict grid_f,    // (nf,) frequencies
%   else:
    const double fmin, const double df,
%   endif
% elif arbitrary:
    __global const float *restrict pt_th,      // pt_th + pt_tl = t
    __global const float *restrict pt_tl,
    __global const float *restrict grid_fh,    // (nf,) grid_fh + grid_fl = frequencies
    __global const float *restrict grid_fl,
% else:
    __global const float *restrict pt_a,       // frac(fmin t)
    __global const float *restrict pt_bh,      // pt_bh + pt_bl = frac(df t)
    __global const float *restrict pt_bl,
% endif
    __global const real_t *restrict pt_w,      // (points,) weights, summing to 1 per band
    __global const real_t *restrict pt_wu,     // (points,) w u (band-centred, scaled)
    __global const short *restrict pt_band,    // (points,) band code, sorted within objects
    __global const int *restrict starts,       // (objects + 1,) point offsets
    __global const real_t *restrict band_scale,  // (objects, n_bands) q_b / sum_b w u^2
    const int n_bands, const int obj0, const int k0, const int nf,
    __global real_t *restrict power)           // (launch objects, nf) Z of bins k0 .. k0 + nf - 1
{
    const int k = get_global_id(0);
    const int lid = get_local_id(0);
    const int obj = obj0 + get_global_id(1);
    const int p0 = starts[obj], n = starts[obj + 1] - p0;
    const int bin = k0 + min(k, nf - 1);  // padding items repeat the last bin, unwritten
% if fp64 and arbitrary:
    const double f = grid_f[bin];
% elif fp64:
    const double f = fmin + df * bin;
% elif arbitrary:
    const float fh = grid_fh[bin], fl = grid_fl[bin];
% else:
    const float k_high = (float) (bin & ~4095), k_low = (float) (bin & 4095), k_all = (float) bin;
% endif

% if fp64:
    __local double l_t[WG];
% elif arbitrary:
    __local float l_th[WG], l_tl[WG];
% else:
    __local float l_a[WG], l_bh[WG], l_bl[WG];
% endif
    __local real_t l_w[WG], l_wu[WG];
    __local short l_band[WG];

    real_t V[P], S[P], YU[H], YS[H], y0 = 0, total = 0;
    int band = -1;
    for (int base = 0; base < n; base += WG) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (base + lid < n) {
            const int g = p0 + base + lid;
% if fp64:
            l_t[lid] = pt_t[g];
% elif arbitrary:
            l_th[lid] = pt_th[g];
            l_tl[lid] = pt_tl[g];
% else:
            l_a[lid] = pt_a[g];
            l_bh[lid] = pt_bh[g];
            l_bl[lid] = pt_bl[g];
% endif
            l_w[lid] = pt_w[g];
            l_wu[lid] = pt_wu[g];
            l_band[lid] = pt_band[g];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG, n - base);
        for (int i = 0; i < count; ++i) {
            if (l_band[i] != band) {  // the same for every item of the work-group
                if (band >= 0)
                    total += band_scale[(size_t) obj * n_bands + band] * explained(V, S, YU, YS, y0);
                band = l_band[i];
                y0 = 0;
                for (int m = 0; m < P; ++m)
                    V[m] = S[m] = 0;
                for (int h = 0; h < H; ++h)
                    YU[h] = YS[h] = 0;
            }
            real_t r;
% if fp64:
            r = fma(f, l_t[i], -rint(f * l_t[i]));
% elif arbitrary:
            {   // (fh + fl)(th + tl) in double-single: p + e is fh th exactly
                const float th = l_th[i];
                const float p = fh * th;
                const float e = fma(fh, th, -p);
                r = (p - rint(p)) + (e + fma(fh, l_tl[i], fl * th));
                r -= rint(r);
            }
% else:
            {   // a + k (bh + bl): k_high bh and k_low bh exactly as p + e pairs
                const float bh = l_bh[i];
                const float p1 = k_high * bh, p2 = k_low * bh;
                const float e1 = fma(k_high, bh, -p1), e2 = fma(k_low, bh, -p2);
                r = (p1 - rint(p1)) + (p2 - rint(p2)) + ((e1 + e2) + fma(k_all, l_bl[i], l_a[i]));
                r -= rint(r);
            }
% endif
            real_t sh, ch;
            sincos_cycles((real_t) 0.5 * r, &sh, &ch);  // sin, cos of phi / 2
            const real_t u1 = -2 * sh * sh, s1 = 2 * sh * ch;  // cos phi - 1, sin phi
            const real_t wi = l_w[i], wui = l_wu[i];
            y0 += wui;
            real_t um = u1, sm = s1;
            for (int m = 1; m <= P; ++m) {
                if (m > 1) {  // cos(m phi) - 1 and sin(m phi) from harmonic m - 1
                    const real_t u_next = um + u1 + fma(um, u1, -sm * s1);
                    sm = sm + s1 + fma(sm, u1, um * s1);
                    um = u_next;
                }
                V[m - 1] = fma(wi, um, V[m - 1]);
                S[m - 1] = fma(wi, sm, S[m - 1]);
                if (m <= H) {
                    YU[m - 1] = fma(wui, um, YU[m - 1]);
                    YS[m - 1] = fma(wui, sm, YS[m - 1]);
                }
            }
        }
    }
    if (band >= 0)
        total += band_scale[(size_t) obj * n_bands + band] * explained(V, S, YU, YS, y0);
    if (k < nf)
        power[(size_t) get_global_id(1) * nf + k] = total;
}
