//CL//
## Phase-binned period statistics of the objects of a ragged catalog: phase
## dispersion minimization (PDM, Stellingwerf 1978), phase-binned analysis of
## variance (AOV, Schwarzenberg-Czerny 1989) and conditional entropy (CE,
## Graham et al. 2013). Definitions: tests/reference/{pdm,aov,
## conditional_entropy}.py and docs/design/phase_statistics.md.
##
## Render parameters (strict_undefined):
##   real       "float" | "double"
##   statistic  "pdm" | "aov" | "ce"
##   n_phase    phase bins of the histogram: PDM's n_bins * n_covers fine bins
##              (a point's fine bin is floor(n_phase phase)), AOV's and CE's bins
##   n_covers   PDM: the fine bins one sample spans (1 for AOV and CE)
##   n_mag      CE: magnitude bins (1 for PDM and AOV)
##   weighted   PDM: also sum w^2 per bin (False: every weight is 1)
##   arbitrary  read each bin's frequency from an array instead of fmin + k df
##   wg         work-group size
##
## Work decomposition: one work-item per (object, trial frequency); the wg
## work-items of a work-group take wg consecutive frequencies of one object,
## whose points (offsets `starts`) they stage through local memory in tiles
## of wg. Each work-item folds every point at its frequency and adds it to its
## own histogram, a slice of local memory (cell c of accumulator v of item l
## at (v NCELLS + c) WG + l: the items of a warp touch consecutive words, so
## no bank conflicts and no atomics), then turns the histogram into the
## statistic. The ND-range is the launch's bins (padded to wg) x objects;
## padding items repeat the last bin and write nothing.
##
## Phases, frac(f tau) with tau the time from the object's first observation
## (the host subtracts it in float64):
##   fp64: pt_t = tau, f = fmin + k df or grid_f[k]; the product's rounding
##         is kept (fma), so the phase is exact to ~1e-16 cycles;
##   fp32, uniform grid: pt_a = frac(f0 tau) with f0 = fmin + k0 df the
##         launch's first frequency, (pt_bh + pt_bl) = frac(df tau) as a
##         double-single pair (both centred on 0); bin k0 + k has phase
##         a + k (bh + bl), with k bh exact as p + e;
##   fp32, arbitrary: (grid_fh + grid_fl)(pt_th + pt_tl) in double-single,
##         fh th exact as p + e;
## so fp32 phases are accurate to ~1e-7 cycles at any epoch (raw MJD).
##
## Point values: PDM and AOV take w (weights, mean 1 per object; 1 without dy)
## and wy = w u, u the object's values centred on their weighted mean and
## scaled (clperiod.periodograms.standardize); CE takes each point's
## magnitude bin. Histograms: PDM V1 = sum w, S = sum w u (and V2 = sum w^2
## when weighted) per fine bin; AOV V1 and S per bin; CE a count per
## (phase bin, magnitude bin).
##
## Statistics, per frequency (obj_const holds two host constants per object):
##   PDM: sample s (s = 0 .. n_phase - 1) sums fine bins s .. s + n_covers - 1
##        (cyclic), which is cover s mod n_covers, bin s div n_covers of the
##        reference. Over samples with points: within = n_covers Q - sum S^2/V1
##        (Q = sum w u^2, obj_const[0] = n_covers Q), dof = sum (V1 - V2/V1),
##        theta = within / dof / sigma^2 (obj_const[1] = 1 / sigma^2). A
##        one-point sample adds 0 to both sums. dof at the rounding level of
##        the weight total: NaN.
##   AOV: r occupied bins, B = sum S^2/V1; s1 = B - S_tot^2/V_tot
##        (obj_const[1]), s2 = Q - B (obj_const[0] = Q); theta =
##        (N - r)/(r - 1) s1/s2; NaN if r < 2, N <= r or s1 = s2 = 0; inf
##        when s2 = 0 < s1.
##   CE:  H = sum_i (T(n_i) - sum_j T(n_ij)) / N with T(n) = n ln n from the
##        table xlogx (n_i the phase bin's count); rows with one occupied cell
##        add exactly 0.
## The sums over the histogram are the one-pass forms: within and s2 carry an
## absolute error of a few epsilons of Q.
## out (launch objects x nf) holds the ranking value, higher is better:
## -theta (PDM), theta (AOV), -H (CE); NaN at the frequency 0 (bin zero_bin,
## -1 for none) and where undefined.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<%
    fp64 = real == "double"
    ce = statistic == "ce"
    pdm = statistic == "pdm"
    n_values = 1 if ce else (3 if pdm and weighted else 2)
    hist_t = "uint" if ce else "real_t"
%>
#define WG ${wg}
#define NPHASE ${n_phase}
#define NCOVERS ${n_covers}
#define NMAG ${n_mag}
#define NCELLS (NPHASE * NMAG)
#define NVALUES ${n_values}
// dof below this fraction of the weight total is rounding (no sample with 2 points)
#define DOF_RESOLUTION ((real_t) 16 * ${"DBL_EPSILON" if fp64 else "FLT_EPSILON"})

% if pdm:
// Stellingwerf's theta of the histogram h (item's slice, stride WG).
inline real_t pdm_theta(__local const real_t *h, const real_t q_total,
                        const real_t inv_variance)
{
    real_t between = 0, dof = 0, weight = 0;
    for (int s = 0; s < NPHASE; ++s) {
        real_t v1 = 0, sum = 0, v2 = 0;
        for (int j = 0; j < NCOVERS; ++j) {
            const int c = s + j < NPHASE ? s + j : s + j - NPHASE;
            v1 += h[c * WG];
            sum += h[(NCELLS + c) * WG];
%   if weighted:
            v2 += h[(2 * NCELLS + c) * WG];
%   endif
        }
        if (v1 > 0) {
            between += sum * sum / v1;
%   if weighted:
            dof += v1 - v2 / v1;
%   else:
            dof += v1 - 1;
%   endif
        }
        weight += v1;
    }
    const real_t within = fmax(q_total - between, (real_t) 0);
    return dof > DOF_RESOLUTION * weight ? within / dof * inv_variance : NAN;
}
% elif statistic == "aov":
// Schwarzenberg-Czerny's theta of the histogram h (item's slice, stride WG)
// of n points.
inline real_t aov_theta(__local const real_t *h, const int n, const real_t q_total,
                        const real_t mean_square)
{
    real_t between = 0;
    int r = 0;
    for (int c = 0; c < NPHASE; ++c) {
        const real_t v1 = h[c * WG];
        if (v1 > 0) {
            const real_t sum = h[(NCELLS + c) * WG];
            between += sum * sum / v1;
            ++r;
        }
    }
    const real_t s1 = fmax(between - mean_square, (real_t) 0);
    const real_t s2 = fmax(q_total - between, (real_t) 0);
    if (r < 2 || n <= r || !(s1 > 0 || s2 > 0))
        return NAN;
    return (real_t) (n - r) / (real_t) (r - 1) * (s1 / s2);
}
% else:
// Graham et al.'s conditional entropy of the counts h (item's slice, stride
// WG) of n points; xlogx[m] = m ln m.
inline real_t entropy(__local const uint *h, const int n, __global const real_t *xlogx)
{
    real_t total = 0;
    for (int i = 0; i < NPHASE; ++i) {
        uint row = 0;
        real_t cells = 0;
        for (int j = 0; j < NMAG; ++j) {
            const uint count = h[(i * NMAG + j) * WG];
            row += count;
            cells += xlogx[count];
        }
        total += xlogx[row] - cells;
    }
    return n > 0 ? fmax(total, (real_t) 0) / (real_t) n : NAN;
}
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void phase_statistic(
% if fp64:
    __global const double *restrict pt_t,     // (points,) tau
% elif arbitrary:
    __global const float *restrict pt_th,     // (points,) tau = th + tl
    __global const float *restrict pt_tl,
% else:
    __global const float *restrict pt_a,      // (points,) frac(f0 tau), centred
    __global const float *restrict pt_bh,     // (points,) frac(df tau) = bh + bl, centred
    __global const float *restrict pt_bl,
% endif
% if ce:
    __global const int *restrict pt_mag,      // (points,) magnitude bin
% else:
    __global const real_t *restrict pt_w,     // (points,) weight, mean 1 per object
    __global const real_t *restrict pt_wy,    // (points,) weight x centred value
% endif
    __global const int *restrict starts,      // (objects + 1,) point offsets
    const int obj0,
% if arbitrary and fp64:
    __global const double *restrict grid_f,   // the frequencies
% elif arbitrary:
    __global const float *restrict grid_fh,   // the frequencies, fh + fl
    __global const float *restrict grid_fl,
% elif fp64:
    const double fmin, const double df,
% endif
    const int k0, const int nf, const int zero_bin,
% if ce:
    __global const real_t *restrict xlogx,    // (largest object + 1,) m ln m
% else:
    __global const real_t *restrict obj_const,  // (objects, 2) see the notes
% endif
    __global real_t *restrict out)            // (launch objects, nf)
{
    const int lid = get_local_id(0);
    const int k = get_global_id(0);
    const int first = get_global_id(1);  // the launch's object: first, catalog's obj0 + first
    const int obj = obj0 + first;
    const int p0 = starts[obj], n = starts[obj + 1] - p0;
    const int kk = min(k, nf - 1);
% if arbitrary and fp64:
    const double f = grid_f[k0 + kk];
% elif arbitrary:
    const float fh = grid_fh[k0 + kk], fl = grid_fl[k0 + kk];
% elif fp64:
    const double f = fmin + (double) (k0 + kk) * df;
% else:
    const float kf = (float) kk;
% endif
    __local ${hist_t} l_hist[NVALUES * NCELLS * WG];
% if fp64:
    __local double l_t[WG];
% elif arbitrary:
    __local float l_th[WG], l_tl[WG];
% else:
    __local float l_a[WG], l_bh[WG], l_bl[WG];
% endif
% if ce:
    __local int l_mag[WG];
% else:
    __local real_t l_w[WG], l_wy[WG];
% endif
    __local ${hist_t} *h = l_hist + lid;
    for (int c = 0; c < NVALUES * NCELLS; ++c)
        h[c * WG] = 0;
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
% if ce:
            l_mag[lid] = pt_mag[g];
% else:
            l_w[lid] = pt_w[g];
            l_wy[lid] = pt_wy[g];
% endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG, n - base);
        for (int i = 0; i < count; ++i) {
% if fp64:
            const double tt = l_t[i];
            double r = fma(f, tt, -floor(f * tt));
% elif arbitrary:
            const float th = l_th[i];
            const float p = fh * th;
            const float e = fma(fh, th, -p);
            float r = (p - floor(p)) + (e + fma(fh, l_tl[i], fl * th));
% else:
            const float bh = l_bh[i];
            const float p = kf * bh;
            const float e = fma(kf, bh, -p);
            float r = (p - floor(p)) + (e + fma(kf, l_bl[i], l_a[i]));
% endif
            r -= floor(r);  // [0, 1]; NaN only from non-finite input, sent to bin 0
            int q = convert_int_sat_rtz(r * (real_t) NPHASE);
            q = q >= NPHASE ? q - NPHASE : q;
% if ce:
            h[(q * NMAG + l_mag[i]) * WG] += 1;
% else:
            const real_t w = l_w[i];
            h[q * WG] += w;
            h[(NCELLS + q) * WG] += l_wy[i];
%   if pdm and weighted:
            h[(2 * NCELLS + q) * WG] += w * w;
%   endif
% endif
        }
    }
% if pdm:
    real_t value = -pdm_theta(h, obj_const[2 * obj], obj_const[2 * obj + 1]);
% elif ce:
    real_t value = -entropy(h, n, xlogx);
% else:
    real_t value = aov_theta(h, n, obj_const[2 * obj], obj_const[2 * obj + 1]);
% endif
    if (k0 + kk == zero_bin)
        value = NAN;
    if (k < nf)
        out[(size_t) first * nf + k] = value;
}
