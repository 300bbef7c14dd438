//CL//
## Lomb-Scargle periodogram tiles and the per-object top-k merge.
##
## Render parameters (strict_undefined):
##   real           "float" | "double"
##   wg             work-group size (power of two)
##   m              frequencies per work-item (a contiguous strip)
##   use_local      stage point data through local memory (tiled, culsp-style)
##                  instead of reading it from global memory
##   fit_mean       floating-mean model (generalized LS) -> also accumulate C, S
##   normalization  "standard" | "model" | "log" | "psd" (psd peaks are ranked
##                  and reported as the standard power, which the host scales
##                  by its float64 psd factor; the periodogram is written as
##                  power * obj_scale)
##   top_k          number of distinct peaks kept per object
##   write_power    also write the periodogram
##   points_per_tile  observations staged per local-memory tile (local variant)
##   compensated    sum each staged block of points into block accumulators and
##                  add those to the totals with Kahan compensation, so the
##                  rounding error does not grow with the number of points
##   arbitrary      read the frequency of each grid index from an array (a
##                  clperiod.FrequencyArray's distinct frequencies, rising)
##                  instead of fmin + k df: one exact phase per point and
##                  frequency, no recurrence (see "Arbitrary frequencies")
##
## Work decomposition: one work-group per (object, frequency tile). A tile is
## wg*m consecutive grid frequencies starting one bin before its first owned
## bin; tiles overlap by two bins so every owned bin sees both neighbours,
## which the peak test needs. Work-item l evaluates the strip
## k0 = tile_first + l*m ... k0 + m - 1: an exact phase seeds the strip, a
## trigonometric recurrence over the strip gives the other m - 1 frequencies
## (exact re-seeding every m bins).
##
## Seeds: the global variant evaluates one range-reduced sincos per (point,
## strip). The local variant stages TP points at a time and builds, per point,
## two small tables of exact unit phasors, NB of exp(2 pi i f_{tile_first +
## b m} t) and NA of exp(2 pi i (a NB m df) t) with NA*NB = wg; the seed of
## strip l = a NB + b is one complex product of the two, so the work-group
## pays NA + NB sincos per point instead of wg.
##
## Point data (from ls_prepare in lsprepare.mako, or the host; per object,
## weights normalised to sum 1 and y centred when the model asks for it and
## scaled to a weighted mean square yy in [1/4, 1) (clperiod.periodograms.standardize), so
## any finite y and dy fit fp32; t is measured from the object's reference
## observation, so that one has phase 0 at every frequency):
##   fp64: pt_t = t;  fp32: pt_a = frac(fmin*t), (pt_bh + pt_bl) =
##   frac(df*t) as a double-single pair, so phases stay accurate to ~1e-7
##   cycles for any epoch;  pt_sd = sin(d) and fp64: pt_cd = cos(d), fp32:
##   pt_vd = 4 sin^2(d/2) = 2 - 2 cos(d), with d = 2 pi df t the phase step
##   between grid frequencies;  pt_w = w;  pt_wy = w*y.
##
## Strip recurrence: fp64 uses Chebyshev's x[k+1] = 2 cos(d) x[k] - x[k-1].
## In fp32, 2 cos(d) rounded to 24 bits turns the step by up to 3e-8 / sin(d)
## rad, which the strip accumulates; for points close in time to the
## reference observation (small d) that was 5e-4 rad. fp32 therefore uses
## Reinsch's difference form, which depends on d only through vd, exact to a
## rounding: D[k+1] = D[k] - vd x[k], x[k+1] = x[k] + D[k+1] (one more add
## per component and bin).
##
## Arbitrary frequencies: every bin has its own exact phase f_k t at every
## point, from grid_f (fp64: the exact fma residual, as above) or from the
## double-single pairs grid_fh + grid_fl and pt_th + pt_tl = t (fp32: the
## product fh th exactly as p + e, plus fh tl + fl th, ~1e-7 cycles for any
## epoch), then one range-reduced sincos; the local variant stages the points'
## t, w, wy in tiles of TP. Halo bins outside the grid repeat an end frequency
## (they are neither written nor peaks).
##
## fp32 with a floating mean accumulates w (cos - 1) in place of w cos
## ("versine" sums): where the phases of all points bunch together (f -> 0,
## or the 1/day alias of ground-based data) the centred sums
## sum w cos^2 - (sum w cos)^2 are tiny differences of numbers near 1, which
## lose all fp32 digits (7e-4 power errors on Stripe 82); cos - 1 is small
## there, around the reference observation. fma(w, c, -w) makes it at the
## cost of the w * c it replaces. fp64 keeps the plain sums.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
${common.argmax_pairs(wg)}
<%
    tile_len = wg * m
    owned = tile_len - 2
    fp64 = real == "double"
    versine = fit_mean and not fp64
    step = "cd" if fp64 else "vd"   # the phase-step input: cos(d) or 4 sin^2(d/2)
    nb = min(wg, 16)
    na = wg // nb
    tp = points_per_tile
%>
#define WG ${wg}
#define M ${m}
#define TILE ${tile_len}
#define OWNED ${owned}
#define TOP_K ${top_k}
#define NB ${nb}
#define NA ${na}
#define TP ${tp}

## Phase in cycles, reduced to [-1/2, 1/2], of grid index ``k`` (an int
## expression) at point ``g`` (an index into the point arrays); with
## offset=False the grid origin fmin is left out, i.e. the phase of k*df.
<%def name="phase(k, g, offset)">
% if fp64:
        {
            const double f = ${"fmin + " if offset else ""}(double) (${k}) * df;
            const double tt = pt_t[${g}];
            r = fma(f, tt, -rint(f * tt));
        }
% else:
        {
            // k*(bh + bl) [+ a] in double-single: p + e is k*bh exactly
            const float kf = (float) (${k});
            const float bh = pt_bh[${g}];
            const float p = kf * bh;
            const float e = fma(kf, bh, -p);
            r = (p - rint(p)) + (e + fma(kf, pt_bl[${g}], ${"pt_a[%s]" % g if offset else "0.0f"}));
            r -= rint(r);
        }
% endif
</%def>

## Add the phasor (cur_c, cur_s) of bin j at the current point into the
## accumulators named acc ("a": the totals, "b": a compensated block's).
<%def name="accumulate(j, cur_c, cur_s, acc)">\
            {
%   if versine:
                const real_t wc = fma(w, ${cur_c}, -w);   // w (cos - 1)
%   else:
                const real_t wc = w * ${cur_c};
%   endif
%   if fit_mean:
                ${acc}C${j} += wc;
                ${acc}S${j} = fma(w, ${cur_s}, ${acc}S${j});
%   endif
                ${acc}CC${j} = fma(wc, ${cur_c}, ${acc}CC${j});
                ${acc}CS${j} = fma(wc, ${cur_s}, ${acc}CS${j});
                ${acc}YC${j} = fma(wy, ${cur_c}, ${acc}YC${j});
                ${acc}YS${j} = fma(wy, ${cur_s}, ${acc}YS${j});
            }
</%def>\
## Phase in cycles, reduced to [-1/2, 1/2], of frequency bin j of an
## arbitrary grid at the point whose time is tt (fp64) or th + tl (fp32).
<%def name="arbitrary_phase(j)">
% if fp64:
                r = fma(f${j}, tt, -rint(f${j} * tt));
% else:
                {   // (fh + fl)(th + tl) in double-single: p + e is fh th exactly
                    const float p = fh${j} * th;
                    const float e = fma(fh${j}, th, -p);
                    r = (p - rint(p)) + (e + fma(fh${j}, tl, fl${j} * th));
                    r -= rint(r);
                }
% endif
</%def>\
// Peak test for bin li of the local power array: strictly above the left
// neighbour, not below the right one (so a plateau reports its first bin);
// neighbours outside the grid or NaN count as -inf.
inline int is_peak(__local const real_t *p, const int li, const int k, const int nf)
{
    const real_t v = p[li];
    if (isnan(v))
        return 0;
    const int left_ok = (k == 0) || !(p[li - 1] >= v);
    const int right_ok = (k == nf - 1) || !(p[li + 1] > v);
    return left_ok && right_ok;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ls_tiles(
% if arbitrary and fp64:
    __global const double *restrict pt_t,
    __global const double *restrict grid_f,     // (nf,) frequencies
% elif arbitrary:
    __global const float *restrict pt_th,       // pt_th + pt_tl = t
    __global const float *restrict pt_tl,
    __global const float *restrict grid_fh,     // (nf,) grid_fh + grid_fl = frequencies
    __global const float *restrict grid_fl,
% elif fp64:
    __global const double *restrict pt_t,
    const double fmin, const double df,
% else:
    __global const float *restrict pt_a,
    __global const float *restrict pt_bh,
    __global const float *restrict pt_bl,
% endif
% if not arbitrary:
    __global const real_t *restrict pt_${step},
    __global const real_t *restrict pt_sd,
% endif
    __global const real_t *restrict pt_w,
    __global const real_t *restrict pt_wy,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const real_t *restrict obj_yy,     // sum w y'^2 (w normalised)
    __global const real_t *restrict obj_scale,  // psd factor (1/2 sum dy^-2 y'^2)
    const int nf,
    const int zero_bin,                         // grid index of f = 0, or -1
    const int n_tiles, const int obj_base, const int tile_offset,
    const int tiles_in_launch, const int chunk_k0, const int chunk_nf,
    __global real_t *restrict power,            // (launch objects, chunk_nf) if write_power
    __global real_t *restrict part_val,         // (objects, n_tiles, TOP_K)
    __global int *restrict part_idx)
{
    const int lid = get_local_id(0);
    const int group = get_group_id(0);
    const int row = group / tiles_in_launch;    // object within this launch
    const int obj = obj_base + row;
    const int tile = tile_offset + group % tiles_in_launch;
    const int start = obj_start[obj];
    const int n = obj_n[obj];
    const int tile_first = tile * OWNED - 1;
    const int k0 = tile_first + lid * M;

    __local real_t l_pow[TILE];
    __local real_t l_val[WG];
    __local int l_idx[WG];
% if use_local and arbitrary:
    __local real_t l_w[TP], l_wy[TP];
%   if fp64:
    __local double l_t[TP];
%   else:
    __local float l_th[TP], l_tl[TP];
%   endif
% elif use_local:
    __local real_t l_${step}[TP], l_sd[TP], l_w[TP], l_wy[TP];
    __local real_t l_t2c[TP * NB], l_t2s[TP * NB], l_t1c[TP * NA], l_t1s[TP * NA];
    const int col_b = lid % NB, col_a = lid / NB;
% endif

<%
    sums = ("C", "S", "CC", "CS", "YC", "YS") if fit_mean else ("CC", "CS", "YC", "YS")
    acc = "b" if compensated else "a"   # the accumulators the point loop adds into
%>
% for j in range(m):
    real_t ${", ".join("a%s%d = 0" % (x, j) for x in sums)};
%   if compensated:
    real_t ${", ".join("e%s%d = 0" % (x, j) for x in sums)};
%   endif
% endfor

% if arbitrary:
    // the strip's frequencies (halo bins outside the grid repeat an end one)
%   for j in range(m):
%     if fp64:
    const double f${j} = grid_f[clamp(k0 + ${j}, 0, nf - 1)];
%     else:
    const float fh${j} = grid_fh[clamp(k0 + ${j}, 0, nf - 1)];
    const float fl${j} = grid_fl[clamp(k0 + ${j}, 0, nf - 1)];
%     endif
%   endfor
%   if use_local:
    for (int base = 0; base < n; base += TP) {
        const int count = min(TP, n - base);
%   else:
    for (int base = 0; base < n; base += WG) {
        const int count = min(WG, n - base);
%   endif
%   if compensated:
%     for j in range(m):
        real_t ${", ".join("b%s%d = 0" % (x, j) for x in sums)};
%     endfor
%   endif
%   if use_local:
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = lid; q < count; q += WG) {
            const int g = start + base + q;
%     if fp64:
            l_t[q] = pt_t[g];
%     else:
            l_th[q] = pt_th[g]; l_tl[q] = pt_tl[g];
%     endif
            l_w[q] = pt_w[g]; l_wy[q] = pt_wy[g];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
<% src = lambda name: "l_%s[i]" % name %>
%   else:
        const int off = start + base;
<% src = lambda name: "pt_%s[off + i]" % name %>
%   endif
        for (int i = 0; i < count; ++i) {
            const real_t w = ${src("w")}, wy = ${src("wy")};
%   if fp64:
            const double tt = ${src("t")};
%   else:
            const float th = ${src("th")}, tl = ${src("tl")};
%   endif
%   for j in range(m):
            {
                real_t r, s, c;
${arbitrary_phase(j)}\
                sincos_cycles(r, &s, &c);
${accumulate(j, "c", "s", acc)}\
            }
%   endfor
        }
% elif use_local:
    for (int base = 0; base < n; base += TP) {
        const int count = min(TP, n - base);
% if compensated:
%   for j in range(m):
        real_t ${", ".join("b%s%d = 0" % (x, j) for x in sums)};
%   endfor
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = lid; q < count; q += WG) {
            const int g = start + base + q;
            l_${step}[q] = pt_${step}[g]; l_sd[q] = pt_sd[g];
            l_w[q] = pt_w[g]; l_wy[q] = pt_wy[g];
        }
        for (int e = lid; e < count * (NA + NB); e += WG) {
            const int p = e / (NA + NB), j = e % (NA + NB);
            const int g = start + base + p;
            real_t r, s, c;
            if (j < NB) {
${phase("tile_first + j * M", "g", True)}
                sincos_cycles(r, &s, &c);
                l_t2c[p * NB + j] = c; l_t2s[p * NB + j] = s;
            } else {
${phase("(j - NB) * NB * M", "g", False)}
                sincos_cycles(r, &s, &c);
                l_t1c[p * NA + j - NB] = c; l_t1s[p * NA + j - NB] = s;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
<% src = lambda name: "l_%s[i]" % name %>
        for (int i = 0; i < count; ++i) {
            const real_t bc = l_t2c[i * NB + col_b], bs = l_t2s[i * NB + col_b];
            const real_t ac = l_t1c[i * NA + col_a], as = l_t1s[i * NA + col_a];
            real_t c = bc * ac - bs * as;
            real_t s = bs * ac + bc * as;
% else:
    for (int base = 0; base < n; base += WG) {
        const int count = min(WG, n - base);
% if compensated:
%   for j in range(m):
        real_t ${", ".join("b%s%d = 0" % (x, j) for x in sums)};
%   endfor
% endif
        const int off = start + base;
<% src = lambda name: "pt_%s[off + i]" % name %>
        for (int i = 0; i < count; ++i) {
            real_t r, s, c;
${phase("k0", "off + i", True)}
            sincos_cycles(r, &s, &c);
% endif
% if not arbitrary:
            const real_t sd = ${src("sd")};
% if fp64:
            const real_t cd = ${src("cd")};
            const real_t two_cd = cd + cd;
% else:
            const real_t vd = ${src("vd")}, half_vd = 0.5f * vd;
            real_t dc, ds;   // Reinsch differences x[k] - x[k-1]
% endif
            const real_t w = ${src("w")}, wy = ${src("wy")};
            real_t c_prev = 0, s_prev = 0;
% for j in range(m):
<%
    # advance the phasor first and accumulate the saved one, so the
    # accumulations of bin j overlap the recurrence latency of bin j + 1
    cur_c, cur_s = ("c_prev", "s_prev") if j < m - 1 else ("c", "s")
%>
%   if j == 0 and m > 1 and fp64:
            {   // first step: exact rotation by (cos d, sin d)
                const real_t c_next = c * cd - s * sd;
                const real_t s_next = s * cd + c * sd;
                c_prev = c; s_prev = s;
                c = c_next; s = s_next;
            }
%   elif j == 0 and m > 1:
            {   // first step: the exact rotation, as differences
                dc = fma(-half_vd, c, -s * sd);
                ds = fma(-half_vd, s, c * sd);
                c_prev = c; s_prev = s;
                c += dc; s += ds;
            }
%   elif j < m - 1 and fp64:
            {   // Chebyshev recurrence: x[k+1] = 2 cos(d) x[k] - x[k-1]
                const real_t c_next = fma(two_cd, c, -c_prev);
                const real_t s_next = fma(two_cd, s, -s_prev);
                c_prev = c; s_prev = s;
                c = c_next; s = s_next;
            }
%   elif j < m - 1:
            {   // Reinsch: D[k+1] = D[k] - vd x[k], x[k+1] = x[k] + D[k+1]
                dc = fma(-vd, c, dc);
                ds = fma(-vd, s, ds);
                c_prev = c; s_prev = s;
                c += dc; s += ds;
            }
%   endif
${accumulate(j, cur_c, cur_s, acc)}\
% endfor
        }
% endif
% if compensated:
%   for j in range(m):
%     for x in sums:
        KAHAN_ADD(a${x}${j}, e${x}${j}, b${x}${j});
%     endfor
%   endfor
% endif
    }

    // power of each strip bin from the 2x2 normal equations (tau-free form of
    // the Zechmeister-Kuerster / Scargle periodogram): p = b' A^-1 b / YY.
    // A column whose weighted square norm is below DEGENERATE of the other's
    // has vanished, and two columns whose determinant is below DEGENERATE of
    // cc ss are collinear (every phase equal modulo half a cycle, as integer
    // times give at f = 1/2): the model keeps one column.
    #define DEGENERATE ((real_t) ${repr(64 * (1.1920928955078125e-07 if real == "float" else 2.220446049250313e-16))})
    const real_t yy = obj_yy[obj];
% for j in range(m):
    {
%   if versine:
        // aC = sum w u, aCC = sum w u c, aCS = sum w u s with u = c - 1;
        // sum w u^2 = aCC - aC, sum w s^2 = -sum w u (1 + c) = -(aC + aCC)
        const real_t cc = (aCC${j} - aC${j}) - aC${j} * aC${j};
        const real_t ss = -(aC${j} + aCC${j}) - aS${j} * aS${j};
        const real_t cs = aCS${j} - aC${j} * aS${j};
%   else:
        real_t cc = aCC${j}, ss = 1 - aCC${j}, cs = aCS${j};
%     if fit_mean:
        cc -= aC${j} * aC${j};
        ss -= aS${j} * aS${j};
        cs -= aC${j} * aS${j};
%     endif
%   endif
        const real_t yc = aYC${j}, ys = aYS${j};
        const real_t det = cc * ss - cs * cs;
        real_t z;
        if (cc > DEGENERATE * ss && ss > DEGENERATE * cc && det > DEGENERATE * cc * ss)
            z = (ss * yc * yc - 2 * cs * yc * ys + cc * ys * ys) / (det * yy);
        else  // one degree of freedom left: the power of the larger column
            z = (cc >= ss ? yc * yc / cc : ys * ys / ss) / yy;
        // at f = 0 the sine column vanishes and the cosine is the mean: no
        // sinusoid fits and the power is 0/0, NaN as in astropy
%   if versine:
        if (k0 + ${j} == zero_bin || !(fmax(cc, ss) > 0))  // sums of u = c - 1: exact 0
%   else:
        if (k0 + ${j} == zero_bin || !(fmax(cc, ss) > DEGENERATE))  // rounding of 1 - aCC
%   endif
            z = (real_t) NAN;
%   if normalization == "standard":
        l_pow[lid * M + ${j}] = z;
%   elif normalization == "model":
        l_pow[lid * M + ${j}] = z / (1 - z);
%   elif normalization == "log":
        l_pow[lid * M + ${j}] = -log1p(-z);
%   else:
        l_pow[lid * M + ${j}] = z;   // psd: ranked by z, scaled when written
%   endif
    }
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);

% if write_power:
    // coalesced write of the owned bins
    const real_t scale = ${"obj_scale[obj]" if normalization == "psd" else "1"};
    for (int li = lid; li < TILE; li += WG) {
        const int k = tile_first + li;
        if (li >= 1 && li <= OWNED && k < nf)
            power[(long) row * chunk_nf + (k - chunk_k0)] = l_pow[li] * scale;
    }
% endif

    // top-k distinct peaks among the owned bins of this tile
    int taken[TOP_K];
    for (int r = 0; r < TOP_K; ++r) {
        real_t best = REAL_NEG_INF;
        int best_k = INT_MAX;
        for (int j = 0; j < M; ++j) {
            const int li = lid * M + j;
            const int k = tile_first + li;
            if (li < 1 || li > OWNED || k < 0 || k >= nf)
                continue;
            int skip = 0;
            for (int q = 0; q < r; ++q)
                skip |= (taken[q] == k);
            if (skip || !is_peak(l_pow, li, k, nf))
                continue;
            if (l_pow[li] > best) {
                best = l_pow[li];
                best_k = k;
            }
        }
        l_val[lid] = best;
        l_idx[lid] = best_k;
        wg_argmax(l_val, l_idx, lid);
        taken[r] = l_idx[0];
        if (lid == 0) {
            const long slot = ((long) obj * n_tiles + tile) * TOP_K + r;
            part_val[slot] = l_val[0];
            part_idx[slot] = l_idx[0];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// Merge the per-tile candidate lists of every object into its top-k peaks.
// One work-group per object; candidates (value, k) with k == INT_MAX are empty.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ls_merge_topk(
    __global const real_t *restrict part_val,
    __global const int *restrict part_idx,
    const int n_tiles,
    __global real_t *restrict best_val,        // (objects, TOP_K)
    __global int *restrict best_idx)
{
    const int lid = get_local_id(0);
    const int obj = get_group_id(0);
    const long n_cand = (long) n_tiles * TOP_K;
    __global const real_t *val = part_val + (long) obj * n_cand;
    __global const int *idx = part_idx + (long) obj * n_cand;
    __local real_t l_val[WG];
    __local int l_idx[WG];
    int taken[TOP_K];
    for (int r = 0; r < TOP_K; ++r) {
        real_t best = REAL_NEG_INF;
        int best_k = INT_MAX;
        for (long c = lid; c < n_cand; c += WG) {
            const int k = idx[c];
            if (k == INT_MAX)
                continue;
            int skip = 0;
            for (int q = 0; q < r; ++q)
                skip |= (taken[q] == k);
            if (skip)
                continue;
            const real_t v = val[c];
            if (v > best || (v == best && k < best_k)) {
                best = v;
                best_k = k;
            }
        }
        l_val[lid] = best;
        l_idx[lid] = best_k;
        wg_argmax(l_val, l_idx, lid);
        taken[r] = l_idx[0];
        if (lid == 0) {
            best_val[obj * TOP_K + r] = l_val[0];
            best_idx[obj * TOP_K + r] = l_idx[0];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
