//CL//
## Multiband Lomb-Scargle power (VanderPlas & Ivezic 2015; astropy
## LombScargleMultiband, method "flexible") of the objects of a ragged
## catalog, fp64.
##
## Render parameters (strict_undefined):
##   nterms_base  harmonics K of the model shared by all bands (0 <= K)
##   nterms_band  harmonics L of each band's own model (0 <= L)
##   nbands       bands B of the catalog (band codes 0 .. B - 1)
##   wg           work-group size (points are staged through local memory in
##                tiles of wg)
##
## The model at frequency f, phi = 2 pi f t, is a base part
## a_0 + sum_{k=1..K} a_k sin(k phi) + b_k cos(k phi) common to all bands plus,
## on band b's points only, c_0 + sum_{l=1..L} c_l sin(l phi) + d_l cos(l phi).
## Unknowns: [a_0, a_1, b_1, ..., a_K, b_K], then band by band
## [c_0, c_1, d_1, ..., c_L, d_L] (P = 1 + 2K + B (1 + 2L)). The base constant
## duplicates the sum of the band constants, so the normal matrix A = X^T W X is
## singular; astropy's ridge makes it positive definite: A_ii += trace(A) r_i
## with r_i = reg_base on the base unknowns and reg_band on the band unknowns
## (kernel arguments, 0 for none). The power is b^T A^-1 b (b = X^T W y'); the
## host divides it by chi2_0 = sum w y'^2.
## The host passes each object's weights w ~ dy^-2 summing to 1 and its values
## y' (each band centred on its weighted mean when asked, scaled to a mean
## square near 1) as wy = w y'. A band without points of an object adds only
## its ridge to A and nothing to b: it leaves the power unchanged.
## Per band b the kernel accumulates C_m + i S_m = sum w e^{i m phi}
## (m = 0 .. 2H, H = max(K, L)) and YC_h + i YS_h = sum w y' e^{i h phi}
## (h = 0 .. H); the base entries use the sums over all bands, the base-band
## and band-band entries those of the band (different bands do not meet).
## ND-range: the block's bins (padded to wg) x objects; a work-group's items
## share one object, whose points (offsets `starts`) they stage. Each system is
## solved by Cholesky in private memory; a pivot that is not positive (f = 0)
## gives NaN.
<%namespace name="common" file="common.mako"/>
${common.prelude("double")}
#define K ${nterms_base}
#define L ${nterms_band}
#define B ${nbands}
#define H ${max(nterms_base, nterms_band)}
#define N_BASE (1 + 2 * K)
#define N_BAND (1 + 2 * L)
#define P (N_BASE + B * N_BAND)
#define WG ${wg}

// Column c of a harmonic block ([1, sin phi, cos phi, sin 2 phi, ...]) is the
// cosine (c even) or sine (c odd) of harmonic (c + 1) / 2; the constant is cos(0).
inline int harmonic_of(const int c) { return (c + 1) / 2; }
inline int is_sine(const int c) { return c & 1; }

// sum w g_c g_e of columns c and e, from the window sums C, S (product-to-sum).
inline double window_product(const int c, const int e, const double *C, const double *S)
{
    const int j = harmonic_of(c), q = harmonic_of(e);
    const int d = abs(j - q);
    const double s_diff = j >= q ? S[d] : -S[d];  // sum w sin((j - q) phi)
    if (is_sine(c) && is_sine(e))
        return 0.5 * (C[d] - C[j + q]);
    if (!is_sine(c) && !is_sine(e))
        return 0.5 * (C[d] + C[j + q]);
    if (is_sine(c))
        return 0.5 * (S[j + q] + s_diff);
    return 0.5 * (S[j + q] - s_diff);
}

// sum w y' g_c of column c, from the data sums YC, YS.
inline double data_product(const int c, const double *YC, const double *YS)
{
    return is_sine(c) ? YS[harmonic_of(c)] : YC[harmonic_of(c)];
}

// b^T A^-1 b of one object's sums (NaN for a system that is not positive definite).
inline double solve(const double C[B][2 * H + 1], const double S[B][2 * H + 1],
                    const double YC[B][H + 1], const double YS[B][H + 1],
                    const double reg_base, const double reg_band)
{
    double A[P][P], b[P];
    double Ct[2 * H + 1], St[2 * H + 1], YCt[H + 1], YSt[H + 1];
    for (int m = 0; m <= 2 * H; ++m) {
        Ct[m] = St[m] = 0.0;
        for (int band = 0; band < B; ++band) {
            Ct[m] += C[band][m];
            St[m] += S[band][m];
        }
    }
    for (int m = 0; m <= H; ++m) {
        YCt[m] = YSt[m] = 0.0;
        for (int band = 0; band < B; ++band) {
            YCt[m] += YC[band][m];
            YSt[m] += YS[band][m];
        }
    }
    for (int r = 0; r < P; ++r)
        for (int c = 0; c < P; ++c)
            A[r][c] = 0.0;
    for (int c = 0; c < N_BASE; ++c) {
        b[c] = data_product(c, YCt, YSt);
        for (int e = 0; e <= c; ++e)
            A[c][e] = window_product(c, e, Ct, St);
    }
    for (int band = 0; band < B; ++band) {
        const int first = N_BASE + band * N_BAND;
        for (int c = 0; c < N_BAND; ++c) {
            b[first + c] = data_product(c, YC[band], YS[band]);
            for (int e = 0; e < N_BASE; ++e)
                A[first + c][e] = window_product(c, e, C[band], S[band]);
            for (int e = 0; e <= c; ++e)
                A[first + c][first + e] = window_product(c, e, C[band], S[band]);
        }
    }
    double trace = 0.0;
    for (int r = 0; r < P; ++r)
        trace += A[r][r];
    for (int r = 0; r < P; ++r)
        A[r][r] += trace * (r < N_BASE ? reg_base : reg_band);
    // Cholesky A = L L^T in the lower triangle, z = L^-1 b, p = z . z
    double p = 0.0;
    for (int r = 0; r < P; ++r) {
        for (int c = 0; c <= r; ++c) {
            double sum = A[r][c];
            for (int q = 0; q < c; ++q)
                sum -= A[r][q] * A[c][q];
            if (r == c) {
                if (!(sum > 0.0))
                    return NAN;
                A[r][r] = sqrt(sum);
            } else {
                A[r][c] = sum / A[c][c];
            }
        }
        double z = b[r];
        for (int q = 0; q < r; ++q)
            z -= A[r][q] * b[q];
        b[r] = z / A[r][r];
        p += b[r] * b[r];
    }
    return p;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void multiband_catalog(
    __global const double *restrict t,    // (points,) times relative to each object's reference
    __global const double *restrict w,    // (points,) dy^-2, normalised per object
    __global const double *restrict wy,   // (points,) w * (band-centred, scaled) y
    __global const short *restrict band,  // (points,) band code, 0 .. B - 1
    __global const int *restrict starts,  // (objects + 1,) point offsets
    const int obj0, const double fmin, const double df, const int k0, const int nf,
    const double reg_base, const double reg_band,
    __global double *restrict power)      // (launch objects, nf) p of bins k0 .. k0 + nf - 1
{
    const int k = get_global_id(0);
    const int lid = get_local_id(0);
    const int first = get_global_id(1);  // the launch's object: first, catalog's obj0 + first
    const int p0 = starts[obj0 + first], n = starts[obj0 + first + 1] - p0;
    const double f = fmin + df * (k0 + k);
    __local double l_t[WG], l_w[WG], l_wy[WG];
    __local short l_band[WG];
    double C[B][2 * H + 1], S[B][2 * H + 1], YC[B][H + 1], YS[B][H + 1];
    for (int r = 0; r < B; ++r) {
        for (int m = 0; m <= 2 * H; ++m)
            C[r][m] = S[r][m] = 0.0;
        for (int m = 0; m <= H; ++m)
            YC[r][m] = YS[r][m] = 0.0;
    }
    for (int base = 0; base < n; base += WG) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (base + lid < n) {
            l_t[lid] = t[p0 + base + lid];
            l_w[lid] = w[p0 + base + lid];
            l_wy[lid] = wy[p0 + base + lid];
            l_band[lid] = band[p0 + base + lid];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG, n - base);
        for (int i = 0; i < count; ++i) {
            double cycles = f * l_t[i];
            cycles -= rint(cycles);
            double s1, c1;
            sincos_cycles(cycles, &s1, &c1);
            const int r = l_band[i];
            const double wi = l_w[i], wyi = l_wy[i];
            C[r][0] += wi;
            YC[r][0] += wyi;
            double cm = 1.0, sm = 0.0;
            for (int m = 1; m <= 2 * H; ++m) {
                const double c_next = cm * c1 - sm * s1;
                sm = sm * c1 + cm * s1;
                cm = c_next;
                C[r][m] += wi * cm;
                S[r][m] += wi * sm;
                if (m <= H) {
                    YC[r][m] += wyi * cm;
                    YS[r][m] += wyi * sm;
                }
            }
        }
    }
    if (k >= nf)
        return;
    power[(size_t) first * nf + k] = solve(C, S, YC, YS, reg_base, reg_band);
}
