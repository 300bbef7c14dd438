//CL//
## Multiband Lomb-Scargle power (VanderPlas & Ivezic 2015; astropy
## LombScargleMultiband, method "flexible") of the objects of a ragged
## catalog.
##
## Render parameters (strict_undefined):
##   real         "double" | "float": the arithmetic of the sums and the solve
##   arbitrary    read the frequency of each bin from an array (the rising
##                distinct frequencies of a clperiod.FrequencyArray) instead of
##                fmin + k df
##   nterms_base  harmonics K of the model shared by all bands (0 <= K)
##   nterms_band  harmonics L of each band's own model (0 <= L)
##   nbands       bands B of the catalog (band codes 0 .. B - 1)
##   wg           work-group size (points are staged through local memory in
##                tiles of wg)
##   per_item     bins F of each work-item (uniform grids; 1 on arrays): the
##                phase of its first bin, then rotations by each point's
##                e^{2 pi i df t}
##
## The model at frequency f, phi = 2 pi f t, is a base part
## a_0 + sum_{k=1..K} a_k sin(k phi) + b_k cos(k phi) common to all bands plus,
## on band b's points only, c_0 + sum_{l=1..L} c_l sin(l phi) + d_l cos(l phi).
## astropy fits it with a ridge: it minimises |z - X theta|^2 + theta^T R theta,
## R = s diag(r) with r_i = reg_base on the base unknowns and reg_band on the
## band unknowns (kernel arguments, 0 for none) and s = trace(X^T X)
## (regularize_by_trace) or 1, and its power is b^T (X^T X + R)^-1 b =
## z^T z - min, b = X^T z (the host divides it by chi2_0 = z^T z). With the
## weights normalised per object (below), X^T X is W times the kernel's matrix
## (W = sum dy^-2 of the object), so the kernel's ridge is R / W: the host
## passes each object's ridge_scale, s / W per unit of normalised weight, which
## is 2 + K + L for ridges in units of the trace (the trace is (2 + K + L) W:
## the constant and each sine-cosine pair of the base and of the point's band)
## and 1 / W for absolute ones; the kernel multiplies it by sum w (1 to
## rounding).
##
## Reduced system. The base columns of harmonics up to min(K, L), the constant
## included (the first D = 1 + 2 min(K, L) columns of a block), are the sums of
## the same columns of the bands with points, so X^T X is singular and only the
## ridge holds those directions: astropy's matrix has eigenvalues of the
## ridge's size (1e-6 of the trace by default), which float32 sums do not
## resolve. They are eliminated exactly instead: with u_b = (band b's
## coefficients) + (the duplicated base coefficients a), the minimum over a of
## reg_base |a|^2 + reg_band sum_b |u_b - a|^2 (bands with points, B' of them)
## is, column by column, sum_b reg_band u_b^2 - g (sum_b u_b)^2 with
## g = reg_band^2 / (reg_base + B' reg_band). The system that remains has the
## unknowns [the base's own harmonics L + 1 .. K: sin, cos], then band by band
## [c_0, c_1, d_1, ..., c_L, d_L] (P = 2 max(K - L, 0) + B (1 + 2L)); its
## matrix is X'^T X' plus the ridge: reg_base on the base's own unknowns,
## reg_band on band columns D and above, and on the first D columns of the
## bands with points reg_band - g on the diagonal and -g between the same
## column of two bands (times the ridge's scale, ridge_scale sum w). Its power
## is the same number in exact arithmetic. A band without points of an object
## has a unit diagonal and nothing else: it leaves the power unchanged.
##
## The host passes each object's weights w ~ dy^-2 summing to 1 and its values
## y' (each band centred on its weighted mean when asked, scaled to a mean
## square near 1) as wy = w y'. Per band b the kernel accumulates
## C_m + i S_m = sum w e^{i m phi} (m = 0 .. 2H, H = max(K, L)) and
## YC_h + i YS_h = sum w y' e^{i h phi} (h = 0 .. H); the base entries use the
## sums over all bands, the base-band and band-band entries those of the band
## (the products of different bands' columns are 0). Each system is solved by
## Cholesky in private memory; a pivot that is not positive gives NaN, and so
## does f = 0 (bin zero_bin), where no sine fits.
##
## Phases (cycles, reduced to [-1/2, 1/2]; times from each object's first
## observation): fp64 f t less its nearest integer (f = fmin + (k0 + k) df or
## grid_f[k0 + k]). fp32, uniform grid: the inputs of
## FrequencyGrid.phase_inputs for the launch's first bin k0, pt_a = frac(f_k0 t)
## and pt_bh + pt_bl = frac(df t) in double-single, the phase of the launch's
## bin k being a + k (bh + bl) with k bh formed exactly (p + e): ~1e-7 cycles
## for any epoch and grid (k < 2^24). fp32, arbitrary: (fh + fl)(th + tl) of
## the float pairs grid_fh + grid_fl = f and pt_th + pt_tl = t in double-single.
## Harmonics follow by angle addition.
##
## ND-range: the launch's bins (padded to wg) x objects; a work-group's items
## share one object, whose points they stage band by band: the host orders
## each object's points by band, and `cells` holds the offsets of the
## (object, band) cells, so every sum of a band accumulates in registers.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<%
    fp64 = real == "double"
    d = 1 + 2 * min(nterms_base, nterms_band)
    own = 2 * max(nterms_base - nterms_band, 0)
    if fp64:
        phase_inputs = ["t"]
    elif arbitrary:
        phase_inputs = ["th", "tl"]
    else:
        phase_inputs = ["a", "bh", "bl"]
    point_type = "double" if fp64 else "float"
%>
#define K ${nterms_base}
#define L ${nterms_band}
#define B ${nbands}
#define H ${max(nterms_base, nterms_band)}
#define NL (1 + 2 * L)
#define D ${d}
#define NE ${own}
#define P (NE + B * NL)
#define WG ${wg}
#define F ${per_item}

// Column c of a harmonic block ([1, sin phi, cos phi, sin 2 phi, ...]) is the
// cosine (c even) or sine (c odd) of harmonic (c + 1) / 2; the constant is cos(0).
inline int harmonic_of(const int c) { return (c + 1) / 2; }
inline int is_sine(const int c) { return c & 1; }

// sum w g_c g_e of columns c and e, from the window sums C, S (product-to-sum).
inline real_t window_product(const int c, const int e, const real_t *C, const real_t *S)
{
    const int j = harmonic_of(c), q = harmonic_of(e);
    const int d = abs(j - q);
    const real_t s_diff = j >= q ? S[d] : -S[d];  // sum w sin((j - q) phi)
    if (is_sine(c) && is_sine(e))
        return (real_t) 0.5 * (C[d] - C[j + q]);
    if (!is_sine(c) && !is_sine(e))
        return (real_t) 0.5 * (C[d] + C[j + q]);
    if (is_sine(c))
        return (real_t) 0.5 * (S[j + q] + s_diff);
    return (real_t) 0.5 * (S[j + q] - s_diff);
}

// sum w y' g_c of column c, from the data sums YC, YS.
inline real_t data_product(const int c, const real_t *YC, const real_t *YS)
{
    return is_sine(c) ? YS[harmonic_of(c)] : YC[harmonic_of(c)];
}

// b^T A^-1 b of one object's sums through the reduced system (NaN for a
// system that is not positive definite).
inline real_t solve(const real_t C[B][2 * H + 1], const real_t S[B][2 * H + 1],
                    const real_t YC[B][H + 1], const real_t YS[B][H + 1],
                    const real_t reg_base, const real_t reg_band, const real_t object_scale)
{
    real_t A[P][P], b[P];
    real_t Ct[2 * H + 1], St[2 * H + 1], YCt[H + 1], YSt[H + 1];
    for (int m = 0; m <= 2 * H; ++m) {
        Ct[m] = St[m] = 0;
        for (int band = 0; band < B; ++band) {
            Ct[m] += C[band][m];
            St[m] += S[band][m];
        }
    }
    for (int m = 0; m <= H; ++m) {
        YCt[m] = YSt[m] = 0;
        for (int band = 0; band < B; ++band) {
            YCt[m] += YC[band][m];
            YSt[m] += YS[band][m];
        }
    }
    int with_points = 0;
    for (int band = 0; band < B; ++band)
        with_points += C[band][0] > 0;
    const real_t scale = object_scale * Ct[0];  // s / W (notes)
    // the ridge the eliminated base unknowns leave between the bands' columns
    const real_t shared = reg_band * reg_band / (reg_base + with_points * reg_band);
    for (int r = 0; r < P; ++r)
        for (int c = 0; c < P; ++c)
            A[r][c] = 0;
    for (int i = 0; i < NE; ++i) {  // the base's own harmonics
        b[i] = data_product(D + i, YCt, YSt);
        for (int e = 0; e <= i; ++e)
            A[i][e] = window_product(D + i, D + e, Ct, St);
        A[i][i] += scale * reg_base;
    }
    for (int band = 0; band < B; ++band) {
        const int first = NE + band * NL;
        const int has_points = C[band][0] > 0;
        for (int c = 0; c < NL; ++c) {
            const int r = first + c;
            if (!has_points) {
                A[r][r] = 1;
                b[r] = 0;
                continue;
            }
            b[r] = data_product(c, YC[band], YS[band]);
            for (int e = 0; e < NE; ++e)
                A[r][e] = window_product(c, D + e, C[band], S[band]);
            for (int e = 0; e <= c; ++e)
                A[r][first + e] = window_product(c, e, C[band], S[band]);
            if (c < D) {
                A[r][r] += scale * (reg_band - shared);
                for (int other = 0; other < band; ++other)
                    if (C[other][0] > 0)
                        A[r][NE + other * NL + c] = -scale * shared;
            } else {
                A[r][r] += scale * reg_band;
            }
        }
    }
    // Cholesky A = L L^T in the lower triangle, z = L^-1 b, p = z . z
    real_t p = 0;
    for (int r = 0; r < P; ++r) {
        for (int c = 0; c <= r; ++c) {
            real_t sum = A[r][c];
            for (int q = 0; q < c; ++q)
                sum -= A[r][q] * A[c][q];
            if (r == c) {
                if (!(sum > 0))
                    return NAN;
                A[r][r] = sqrt(sum);
            } else {
                A[r][c] = sum / A[c][c];
            }
        }
        real_t z = b[r];
        for (int q = 0; q < r; ++q)
            z -= A[r][q] * b[q];
        b[r] = z / A[r][r];
        p += b[r] * b[r];
    }
    return p;
}

// Store the running sums as band `band`'s and clear them.
#define STORE_BAND(band) do { \
        for (int j = 0; j < F; ++j) { \
            for (int m = 0; m <= 2 * H; ++m) { \
                C[j][band][m] = c_r[j][m]; \
                S[j][band][m] = s_r[j][m]; \
                c_r[j][m] = s_r[j][m] = 0; \
            } \
            for (int m = 0; m <= H; ++m) { \
                YC[j][band][m] = yc_r[j][m]; \
                YS[j][band][m] = ys_r[j][m]; \
                yc_r[j][m] = ys_r[j][m] = 0; \
            } \
        } \
    } while (0)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void multiband_catalog(
% for name in phase_inputs:
    __global const ${point_type} *restrict pt_${name},
% endfor
    __global const real_t *restrict w,    // (points,) dy^-2, normalised per object
    __global const real_t *restrict wy,   // (points,) w * (band-centred, scaled) y
    __global const int *restrict cells,   // (objects B + 1,) offsets of the (object, band) points
    const int obj0,
% if arbitrary and fp64:
    __global const double *restrict grid_f,   // (nf_all,) frequencies
% elif arbitrary:
    __global const float *restrict grid_fh,   // (nf_all,) grid_fh + grid_fl = frequencies
    __global const float *restrict grid_fl,
% elif fp64:
    const double fmin, const double df,
% endif
    const int k0, const int nf,
    const int zero_bin,                   // the launch's bin of f = 0, or -1
    const real_t reg_base, const real_t reg_band,
    __global const real_t *restrict ridge_scale,  // (objects,) the ridges' scale (notes)
    __global real_t *restrict power)      // (launch objects, nf) p of bins k0 .. k0 + nf - 1
{
    const int k = F * get_global_id(0);  // the item's first bin; it has bins k .. k + F - 1
    const int lid = get_local_id(0);
    const int first = get_global_id(1);  // the launch's object: first, catalog's obj0 + first
    __global const int *own = cells + (obj0 + first) * B;
% if arbitrary and fp64:
    const double f = grid_f[k0 + min(k, nf - 1)];  // padding items repeat the last (unused)
% elif arbitrary:
    const float fh = grid_fh[k0 + min(k, nf - 1)], fl = grid_fl[k0 + min(k, nf - 1)];
% elif fp64:
    const double f = fmin + df * (k0 + k);
% else:
    const float kf = (float) k;
% endif
% for name in phase_inputs:
    __local ${point_type} l_${name}[WG];
% endfor
    __local real_t l_w[WG], l_wy[WG];
    real_t C[F][B][2 * H + 1], S[F][B][2 * H + 1], YC[F][B][H + 1], YS[F][B][H + 1];
    // the sums of the band being read, in registers (each object's points come
    // band by band; at a band's end they are stored in C, S, YC, YS)
    real_t c_r[F][2 * H + 1], s_r[F][2 * H + 1], yc_r[F][H + 1], ys_r[F][H + 1];
    for (int j = 0; j < F; ++j) {
        for (int m = 0; m <= 2 * H; ++m)
            c_r[j][m] = s_r[j][m] = 0;
        for (int m = 0; m <= H; ++m)
            yc_r[j][m] = ys_r[j][m] = 0;
    }
    int r = 0, band_end = own[1];
    const int p1 = own[B];
    for (int base = own[0]; base < p1; base += WG) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (base + lid < p1) {
            const int g = base + lid;
% for name in phase_inputs:
            l_${name}[lid] = pt_${name}[g];
% endfor
            l_w[lid] = w[g];
            l_wy[lid] = wy[g];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG, p1 - base);
        for (int i = 0; i < count; ++i) {
            while (base + i == band_end) {  // band r ends (uniform over the group)
                STORE_BAND(r);
                ++r;
                band_end = own[r + 1];
            }
% if fp64:
            double cycles = f * l_t[i];
            cycles -= rint(cycles);
% elif arbitrary:
            // (fh + fl)(th + tl) in double-single: p + e is fh th exactly
            const float th = l_th[i];
            const float p = fh * th;
            const float e = fma(fh, th, -p);
            float cycles = (p - rint(p)) + (e + fma(fh, l_tl[i], fl * th));
            cycles -= rint(cycles);
% else:
            // a + k (bh + bl) in double-single: p + e is k bh exactly
            const float bh = l_bh[i];
            const float p = kf * bh;
            const float e = fma(kf, bh, -p);
            float cycles = (p - rint(p)) + (e + fma(kf, l_bl[i], l_a[i]));
            cycles -= rint(cycles);
% endif
            real_t s1, c1;
            sincos_cycles(cycles, &s1, &c1);
% if per_item > 1:
            // e^{2 pi i df t}: from one bin to the next
%   if fp64:
            double step = df * l_t[i];
            step -= rint(step);
%   else:
            float step = (l_bh[i] - rint(l_bh[i])) + l_bl[i];
            step -= rint(step);
%   endif
            real_t s_step, c_step;
            sincos_cycles(step, &s_step, &c_step);
% endif
            const real_t wi = l_w[i], wyi = l_wy[i];
% for j in range(per_item):
%   if j > 0:
            {
                const real_t c_next = c1 * c_step - s1 * s_step;
                s1 = s1 * c_step + c1 * s_step;
                c1 = c_next;
            }
%   endif
            {
                c_r[${j}][0] += wi;
                yc_r[${j}][0] += wyi;
                real_t cm = 1, sm = 0;
                for (int m = 1; m <= 2 * H; ++m) {
                    const real_t c_next = cm * c1 - sm * s1;
                    sm = sm * c1 + cm * s1;
                    cm = c_next;
                    c_r[${j}][m] += wi * cm;
                    s_r[${j}][m] += wi * sm;
                    if (m <= H) {
                        yc_r[${j}][m] += wyi * cm;
                        ys_r[${j}][m] += wyi * sm;
                    }
                }
            }
% endfor
        }
    }
    for (; r < B; ++r)  // the last band with points and the empty ones after it
        STORE_BAND(r);
    const real_t object_scale = ridge_scale[obj0 + first];
    for (int j = 0; j < F && k + j < nf; ++j)
        power[(size_t) first * nf + k + j] = k + j == zero_bin
            ? (real_t) NAN : solve(C[j], S[j], YC[j], YS[j], reg_base, reg_band,
                                      object_scale);
}
