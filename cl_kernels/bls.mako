//CL//
## Box least squares (Kovacs, Zucker & Mazeh 2002) as astropy's BoxLeastSquares
## defines it: per (object, trial period) the best box over all durations, in
## astropy's binned ("fast") or exact ("slow") search.
##
## Render parameters (strict_undefined):
##   real       "double" | "float": the folding and the objective's arithmetic
##   wg         work-group size (power of two)
##   method     "binned" | "exact"
##   objective  "likelihood" | "snr"
##   compat     (binned) "astropy": astropy's bins, wrap padding and starts;
##              "cyclic": every start 0 .. K-1, boxes wrap around phase 0
##   bins_local (binned) the bins in local memory (True) or in a global scratch
##              slot per work-group (False; 2 * slot_len longs each)
##   atomics    (binned) "int64": 64-bit atomic adds (cl_khr_int64_base_atomics);
##              "split": each 64-bit add as two 32-bit atomic adds with the carry
##   prefix     (binned) whether objects flagged in obj_sorted fill their bins
##              from prefix sums of their time-ordered points (below)
##   batch      (binned, prefix) cycles whose boundary searches are read together
##   tile       (exact) points staged per local-memory tile
##
## Work decomposition: one work-group per (object, trial period); the group
## id (period in launch, object in launch). Outputs per group: the best box's
## objective `power` (in the units below; -inf when no box is admissible), its
## key (duration index * key_stride + start or centre index; INT_MAX: none)
## and its integer sums (sum u v, sum v) in the box.
##
## Point data (host, clperiod/periodograms/bls.py): times from the object's
## earliest (fp64 pt_tau = t - min t, exactly astropy's; fp32 the float pair
## pt_th + pt_tl of it); per point the fixed-point integers pt_uv ~ u v 2^s_u
## and pt_v ~ v 2^s_v >= 1 (u = y - median y, v = dy^-2 in the object's own
## units), whose per-object sums are below 2^61, in any order (the host
## interleaves each object's points in time). Integer sums are exact and
## independent of the order of the atomic adds, so boxes holding the same
## points have identical sums (astropy's ties stay ties) and a box is
## non-empty exactly when its weight sum is positive. The objective is
## evaluated from the sums a = sum_in u v, b = sum_in v, c, d (out of box):
## likelihood 0.5 b (c/d - a/b)^2, snr (c/d - a/b) / sqrt(1/b + 1/d), i.e.
## astropy's up to a positive factor per object, which the host applies.
##
## Binned: bins of width `width` = min(durations) / oversample over
## [0, P): K = ceil(P / width) bins, point bin floor(wrap(tau, P) / width) + 1
## computed with astropy's operations (fp64: the same double roundings, so
## points on bin edges fall as in astropy; fp32: the phase frac(tau / P) in
## double-single, ~1e-7 cycles, times P / width). astropy pads `oversample`
## copies of bins 1.. over K.. (overwriting bin K) and tries starts 0 .. K +
## oversample - m; cyclic pads max(m) copies after K and tries starts 0 ..
## K - 1. Prefix sums (exact integers), then every (duration, start): the
## first strictly greatest admissible box (depth >= 0) wins, as in astropy.
##
## Binned, prefix fill (objects flagged in obj_sorted, points in time order):
## the same bins without atomics. fp64: a point's key (cycle n, bin b) =
## (floor(tau / P), (int) (wrapped / width) + 1) is non-decreasing in tau
## (each operation is monotone under IEEE rounding), so the points of one
## (cycle, bin) are a run of consecutive indices and bin b holds
## sum_n S(E(n, b + 1)) - S(E(n, b)): S the exclusive prefix sums of the
## object's points, E(n, b) the first point whose key is at least (n, b).
## A work-item per boundary b adds G(b) = sum_n S(E(n, b)) over the cycles
## (modulo 2^64; differences are exact), and the padded prefix sums of the
## bins follow from the G directly, as G(K + 2) = G(1) + the total (the keys'
## bins lie in 1 .. K + 1): cyclic (bin K + 1 added to bin 1): sums[j] =
## G(j + 1) + T - G(K + 1) for j = 1 .. K, sums[K + r] = T + sums[r];
## astropy: sums[j] = G(j + 1) - G(1) for j < K, its copies of bins 1 .. pad
## over bin K on add to sums[K - 1] (and bin K + 1 to the last where pad = 1).
## No atomics, no separate scan, and no barrier in a branch (PoCL). E(n, b)
## starts from the object's guide (the first point at or after k h, h =
## span / N) at the edge n P + min((b - 1) width, P); BATCH cycles' guide
## entries, neighbouring times and prefix sums are read together. Points
## farther than `slack` from the edge (a bound on the rounding of the key and
## of the edge) are placed by their time, first by its float copy where that
## decides (within 2^-24 relative), the others by their key, so the bins equal
## the atomic fill's bit for bit. fp32: bin b of cycle n holds the points at
## or after the edge n P + (b - 1) width (double-single, ~2^-44 relative; bin
## K + 1's edge is the next cycle's) and before the next edge, points and
## edges compared as double-single times: exact bins of the true phase to
## that precision, where the atomic fill folds to ~1e-7 cycles.
##
## Scan: each work-item reads a start's prefix sums once for all durations;
## among boxes of equal value the smallest key wins, as in astropy's order.
## fp64 compares values with one division: depth b d = U b - a V (U, V the
## object's totals).
##
## Exact: for duration k, centres i * step_k (i < centres[period, k], numpy's
## arange(0, P + step, step)); a point is in the box when
## |((tau - c + P/2) mod P) - P/2| < d/2 (fp64: numpy's remainder, the same
## roundings; fp32: the circular phase distance); admissible: depth > 0.
##
## FP_CONTRACT is off: the fp64 folding must round as astropy's C and NumPy do,
## without fused multiply-adds (fma is written out where it is meant).
<%namespace name="common" file="common.mako"/>
#pragma OPENCL FP_CONTRACT OFF
% if method == "binned" and atomics == "int64":
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
${common.prelude(real)}
${common.argmax_pairs(wg)}
<%
    fp64 = real == "double"
    binned = method == "binned"
    bins_space = "__local" if binned and bins_local else "__global"
%>
#define WG ${wg}
% if binned:
// the prefix fill's first boundary: astropy's bins need G(1), the cyclic ones not
#define FIRST_BOUNDARY ${1 if compat == "astropy" else 2}
// cycles whose boundary searches the prefix fill issues together
#define BATCH ${batch}
% endif
% if fp64:
#define TO_REAL(x) convert_double(x)
% else:
// sums below 2^62 scaled into [-2, 2]: squares and quotients stay in float range
#define TO_REAL(x) (convert_float(x) * 0x1p-61f)
% endif
% if binned and atomics == "split":
#ifndef __ENDIAN_LITTLE__
#error "the split atomic adds need a little-endian device"
#endif
% endif

## The kernel arguments of the points and the object totals.
<%def name="point_args()">
% if fp64:
    __global const double *restrict pt_tau,
% else:
    __global const float *restrict pt_th,
    __global const float *restrict pt_tl,
% endif
    __global const long *restrict pt_uv,
    __global const long *restrict pt_v,
    __global const int *restrict obj_start,     // (n_objects + 1,) point offsets
    __global const long *restrict obj_total,    // (n_objects, 2): sum u v, sum v
    const int first_obj,
% if fp64:
    __global const double *restrict periods,
% else:
    __global const float *restrict freq_hi,     // freq_hi + freq_lo = 1 / P
    __global const float *restrict freq_lo,
% endif
    const int first_period, const int n_periods, const int key_stride,
</%def>

## The outputs, one per (object, period) of the launch.
<%def name="output_args()">
    __global real_t *restrict power,            // (rows, n_periods)
    __global int *restrict box,                 // (rows, n_periods) keys
    __global long *restrict sums)               // (rows, n_periods, 2)
</%def>

## Phase of the point with times (th, tl) in [0, 1) cycles at frequency fh + fl.
% if not fp64:
inline float fold(const float th, const float tl, const float fh, const float fl)
{
    // (fh + fl)(th + tl) in double-single: p + e is fh th exactly
    const float p = fh * th;
    const float e = fma(fh, th, -p);
    float r = (p - floor(p)) + (e + fma(fh, tl, fl * th));
    r -= floor(r);
    return r;
}
% endif

## Consider the box with sums (in_uv, in_v): admissible boxes whose objective
## is strictly greater than the work-item's best replace it.
<%def name="consider(in_uv, in_v, key, earlier_keys_first=True)">
        if (${in_v} > 0 && ${in_v} < total_v) {
            const real_t a = TO_REAL(${in_uv}), b = TO_REAL(${in_v});
% if fp64:
            // depth b d = c b - a d = U b - a V (c = U - a, d = V - b out of the
            // box; U, V the object's totals): one division
            const real_t d = whole_v - b;
            const real_t depth = fma(whole_uv, b, -(a * whole_v));
%   if objective == "likelihood":
            const real_t value = 0.5 * depth * depth / (b * d * d);
%   else:
            const real_t value = depth / sqrt(b * d * whole_v);
%   endif
% else:
            const real_t c = TO_REAL(total_uv - ${in_uv}), d = TO_REAL(total_v - ${in_v});
            const real_t depth = c / d - a / b;
%   if objective == "likelihood":
            const real_t value = (real_t) 0.5 * b * depth * depth;
%   else:
            const real_t value = depth / sqrt(1 / b + 1 / d);
%   endif
% endif
% if earlier_keys_first:
            if (depth ${">=" if binned else ">"} 0 && value > best) {
% else:
            // boxes come in another order than their keys: among equal values
            // the smallest key wins, as it would in key order
            if (depth ${">=" if binned else ">"} 0
                && (value > best || (value == best && ${key} < best_key))) {
% endif
                best = value;
                best_key = ${key};
                best_uv = ${in_uv};
                best_v = ${in_v};
            }
        }
</%def>

## The work-group's best box (first greatest value, smallest key among equal
## ones) into the outputs; `part` (2 WG longs) holds the arg-max pairs.
<%def name="write_best()">
    barrier(CLK_LOCAL_MEM_FENCE);
    __local real_t *val = (__local real_t *) part;
    __local int *idx = (__local int *) (part + WG);
    val[lid] = best;
    idx[lid] = best_key;
    wg_argmax(val, idx, lid);
    const int winner = idx[0];
    const long out = (long) get_group_id(1) * n_periods + get_group_id(0);
    if (lid == 0) {
        power[out] = val[0];
        box[out] = winner;
        if (winner == INT_MAX) {
            sums[2 * out] = 0;
            sums[2 * out + 1] = 0;
        }
    }
    if (winner != INT_MAX && best_key == winner) {
        sums[2 * out] = best_uv;
        sums[2 * out + 1] = best_v;
    }
</%def>

% if binned and fp64:
## astropy's bin of a point: its cycle floor(tau / P), then (int) (wrap_into(tau,
## P) / width) + 1, operation by operation (the same double roundings).
inline double cycle_of(const double tau, const double period)
{
    return floor(tau / period);
}

inline int bin_in_cycle(const double tau, const double turns, const double period,
                        const double width)
{
    const double whole = period * turns;
    const double wrapped = tau - whole;
    return (int) (wrapped / width) + 1;
}
% endif
% if binned and prefix and fp64:

## Whether a point at time t has a key (cycle, bin) of at least (n, b), whose
## edge in time lies in (below, above).
inline int reaches(const double t, const double n, const int b, const double below,
                   const double above, const double period, const double width)
{
    if (t >= above)
        return 1;
    if (t <= below)
        return 0;
    const double turns = cycle_of(t, period);
    return turns > n || (turns == n && bin_in_cycle(t, turns, period, width) >= b);
}

## Whether point j reaches (n, b), from its float time (within 2^-24 of tau[j],
## relative; tau >= 0) where that decides, else from tau[j].
inline int point_reaches(__global const float *restrict coarse,
                         __global const double *restrict tau, const int j, const double n,
                         const int b, const double below, const double above,
                         const double period, const double width)
{
    const double t = coarse[j];
    const double margin = t * 0x1p-23;          // t (1 - 2^-23) is exact in double
    if (t - margin >= above)
        return 1;
    if (t + margin <= below)
        return 0;
    return reaches(tau[j], n, b, below, above, period, width);
}

## The first of an object's `count` time-ordered points (index 0 .. count) whose
## key is at least (n, b), from point j (its guide entry at the boundary's edge)
## and the float times c0, c1, c2 of points j - 1, j, j + 1 (clamped into the
## object): j or j + 1 where those times decide, else by stepping from j.
inline int first_reaching(__global const float *restrict coarse,
                          __global const double *restrict tau, int j, const int count,
                          const double c0, const double c1, const double c2, const double n,
                          const int b, const double edge, const double slack,
                          const double period, const double width)
{
    const double below = edge - slack, above = edge + slack;
    // c (1 +- 2^-23) bounds the time of a point of float time c (exact in double)
    if (j > 0 && j + 1 < count && c0 + c0 * 0x1p-23 <= below) {
        if (c1 - c1 * 0x1p-23 >= above)
            return j;
        if (c1 + c1 * 0x1p-23 <= below && c2 - c2 * 0x1p-23 >= above)
            return j + 1;
    }
    while (j > 0 && point_reaches(coarse, tau, j - 1, n, b, below, above, period, width))
        --j;
    while (j < count && !point_reaches(coarse, tau, j, n, b, below, above, period, width))
        ++j;
    return j;
}
% elif binned and prefix:

## Double-single times (hi + lo, |lo| <= ulp(hi) / 2) of the edges.
inline float2 ds_normal(const float big, const float small)
{
    const float sum = big + small;
    return (float2) (sum, small - (sum - big));
}

## k (hi + lo) for a whole k < 2^24.
inline float2 ds_times(const float k, const float hi, const float lo)
{
    const float product = k * hi;
    return ds_normal(product, fma(k, hi, -product) + k * lo);
}

## a + b for a, b >= 0.
inline float2 ds_add(const float2 a, const float2 b)
{
    const float sum = a.x + b.x;
    const float part = sum - a.x;
    return ds_normal(sum, ((a.x - (sum - part)) + (b.x - part)) + (a.y + b.y));
}

inline int ds_less(const float2 a, const float2 b)
{
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

## Whether point j lies before `edge` (its low part read only on a tie).
inline int before(__global const float *restrict th, __global const float *restrict tl,
                  const int j, const float2 edge)
{
    const float high = th[j];
    return high < edge.x || (high == edge.x && tl[j] < edge.y);
}

## The first of an object's `count` time-ordered points (index 0 .. count) at
## or after `edge`, from point j (its guide entry there) and the high parts h0,
## h1, h2 of points j - 1, j, j + 1 (clamped into the object): j or j + 1
## where those decide, else by stepping from j.
inline int first_at(__global const float *restrict th, __global const float *restrict tl,
                    int j, const int count, const float h0, const float h1, const float h2,
                    const float2 edge)
{
    if (j > 0 && j + 1 < count && h0 < edge.x) {
        if (h1 > edge.x)
            return j;
        if (h1 < edge.x && h2 > edge.x)
            return j + 1;
    }
    while (j > 0 && !before(th, tl, j - 1, edge))
        --j;
    while (j < count && before(th, tl, j, edge))
        ++j;
    return j;
}
% endif
% if binned:
## bins[index] += value, exactly, from many work-items at once.
inline void add_exact(volatile ${bins_space} long *bins, const int index, const long value)
{
%   if atomics == "int64":
    atom_add(bins + index, value);
%   else:
    // value = hi 2^32 + lo: add lo to the low word, its carry and hi to the high word
    volatile ${bins_space} uint *word = (volatile ${bins_space} uint *) (bins + index);
    const uint lo = (uint) value;
    const uint old = atomic_add(word, lo);
    const uint high = (uint) (value >> 32) + ((uint) (old + lo) < old ? 1u : 0u);
    if (high != 0)
        atomic_add(word + 1, high);
%   endif
}

## Each point's weights added into its bin (any order of the points).
<%def name="atomic_fill()">
    for (int j = start + lid; j < end; j += WG) {
%   if fp64:
        const double tau = pt_tau[j];
        int index = bin_in_cycle(tau, cycle_of(tau, period), period, width);
%   else:
        int index = (int) (fold(pt_th[j], pt_tl[j], fh, fl) * scale) + 1;
%   endif
%   if compat == "cyclic":
        if (index > n_real)
            index -= n_real;
%   endif
        add_exact(bins_uv, index, pt_uv[j]);
        add_exact(bins_v, index, pt_v[j]);
    }
</%def>

## The same bins from the prefix sums of the time-ordered points (header notes):
## the searches of BATCH cycles issue their reads together (guide entries, the
## times around them, the prefix sums).
<%def name="prefix_fill()">
        const int count = end - start;
        const long table = (long) start + obj;
        const real_t object_inv_step = inv_step[obj];
%   if fp64:
        __global const float *restrict times = coarse + start;
        const double last_cycle = cycle_of(pt_tau[end - 1], period);
        const double slack = (pt_tau[end - 1] + period) * 0x1p-44;
        for (int b = FIRST_BOUNDARY + lid; b <= n_real + 1; b += WG) {
            const double offset = fmin((double) (b - 1) * width, period);
            ulong sum_uv = 0, sum_v = 0;
            for (double cycles = 0; cycles <= last_cycle; cycles += BATCH) {
                int first[BATCH];
                double c0[BATCH], c1[BATCH], c2[BATCH];
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    const double edge = (cycles + u) * period + offset;
                    first[u] = guide[table + (int) fmin(edge * object_inv_step, (double) count)];
                }
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    const int j = min(first[u], count - 1);
                    c0[u] = times[max(j - 1, 0)];
                    c1[u] = times[j];
                    c2[u] = times[min(j + 1, count - 1)];
                }
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    const double n = cycles + u;
                    first[u] = first_reaching(times, pt_tau + start, first[u], count, c0[u],
                                              c1[u], c2[u], n, b, n * period + offset, slack,
                                              period, width);
                }
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    if (cycles + u <= last_cycle) {
                        const long2 before_first = pre[table + first[u]];
                        sum_uv += as_ulong(before_first.x);
                        sum_v += as_ulong(before_first.y);
                    }
                }
            }
${store_boundary()}
        }
%   else:
        __global const float *restrict high = pt_th + start;
        const float2 last = (float2) (pt_th[end - 1], pt_tl[end - 1]);
        const float period_high = period_hi[period_index], period_low = period_lo[period_index];
        for (int b = FIRST_BOUNDARY + lid; b <= n_real + 1; b += WG) {
            const float2 offset = ds_times((float) (b - 1), width_hi, width_lo);
            ulong sum_uv = 0, sum_v = 0;
            // cycles n from 0 while n P <= the last point
            for (float cycles = 0; !ds_less(last, ds_times(cycles, period_high, period_low));
                 cycles += BATCH) {
                int first[BATCH], taken[BATCH];
                float2 edge[BATCH];
                float h0[BATCH], h1[BATCH], h2[BATCH];
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    const float2 cycle = ds_times(cycles + u, period_high, period_low);  // n P
                    const float2 next = ds_times(cycles + u + 1, period_high, period_low);
                    edge[u] = b > n_real ? next : ds_add(cycle, offset);
                    if (ds_less(next, edge[u]))
                        edge[u] = next;
                    taken[u] = !ds_less(last, cycle);
                    first[u] = guide[table + min((int) fmin(edge[u].x * object_inv_step,
                                                            (float) count), count)];
                }
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    const int j = min(first[u], count - 1);
                    h0[u] = high[max(j - 1, 0)];
                    h1[u] = high[j];
                    h2[u] = high[min(j + 1, count - 1)];
                }
                #pragma unroll
                for (int u = 0; u < BATCH; ++u)
                    first[u] = first_at(high, pt_tl + start, first[u], count, h0[u], h1[u],
                                        h2[u], edge[u]);
                #pragma unroll
                for (int u = 0; u < BATCH; ++u) {
                    if (taken[u]) {
                        const long2 before_first = pre[table + first[u]];
                        sum_uv += as_ulong(before_first.x);
                        sum_v += as_ulong(before_first.y);
                    }
                }
            }
${store_boundary()}
        }
%   endif
</%def>

## G(b) of the work-item's boundary b into bins[b - 1]; G(1), G(K) and G(K + 1)
## also into `ends` (uv, v pairs), which the prefix sums of the bins take.
<%def name="store_boundary()">
            bins_uv[b - 1] = as_long(sum_uv);
            bins_v[b - 1] = as_long(sum_v);
            const int end_slot = b == n_real + 1 ? 0 : b == 1 ? 1 : b == n_real ? 2 : -1;
            if (end_slot >= 0) {
                ends[2 * end_slot] = sum_uv;
                ends[2 * end_slot + 1] = sum_v;
            }
</%def>

## The padded inclusive prefix sums of the bins, in place, from G(b) in
## bins[b - 1] (header notes), each entry written by one work-item.
<%def name="prefix_sums_from_boundaries()">
    if (lid == 0) {
        bins_uv[0] = 0;
        bins_v[0] = 0;
    }
%   if compat == "cyclic":
    // bins[j] = G(j + 1) + T - G(K + 1) for j = 1 .. K; bins[K + r] = T + bins[r]
    const ulong shift_uv = as_ulong(total_uv) - ends[0], shift_v = as_ulong(total_v) - ends[1];
    for (int j = 1 + lid; j <= n_real; j += WG) {
        const ulong at_uv = as_ulong(bins_uv[j]) + shift_uv;
        const ulong at_v = as_ulong(bins_v[j]) + shift_v;
        bins_uv[j] = as_long(at_uv);
        bins_v[j] = as_long(at_v);
        if (j <= pad) {
            bins_uv[n_real + j] = as_long(as_ulong(total_uv) + at_uv);
            bins_v[n_real + j] = as_long(as_ulong(total_v) + at_v);
        }
    }
%   else:
    // bins[j] = G(j + 1) - G(1) for j < K; bins[K - 1 + r] = bins[K - 1] + bins[r]
    // for r = 1 .. pad (astropy's copies over bin K on); bins[K + pad] adds bin
    // K + 1 (G(1) + T - G(K + 1)) where the copies leave it (pad = 1)
    const ulong first_uv = ends[2], first_v = ends[3];
    const ulong below_uv = ends[4] - first_uv, below_v = ends[5] - first_v;
    for (int j = 1 + lid; j < n_real; j += WG) {
        const ulong at_uv = as_ulong(bins_uv[j]) - first_uv;
        const ulong at_v = as_ulong(bins_v[j]) - first_v;
        bins_uv[j] = as_long(at_uv);
        bins_v[j] = as_long(at_v);
        if (j <= pad) {
            const ulong copy_uv = below_uv + at_uv, copy_v = below_v + at_v;
            bins_uv[n_real - 1 + j] = as_long(copy_uv);
            bins_v[n_real - 1 + j] = as_long(copy_v);
            if (j == pad) {
                const int last_bin = pad == 1;
                bins_uv[n_real + pad] = as_long(copy_uv + (last_bin ? first_uv
                    + as_ulong(total_uv) - ends[0] : 0));
                bins_v[n_real + pad] = as_long(copy_v + (last_bin ? first_v
                    + as_ulong(total_v) - ends[1] : 0));
            }
        }
    }
%   endif
</%def>

## The padded inclusive prefix sums of the bins filled by atomic adds, for the
## objects where `when` holds (uniform over the work-group): its barriers stay
## outside the branches, for PoCL.
<%def name="atomic_prefix_sums(when)">
    if (${when}) {
        for (int i = lid; i <= n_bins; i += WG) {
            bins_uv[i] = 0;
            bins_v[i] = 0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (${when}) {
${atomic_fill()}
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    // wrap padding (sources and targets are disjoint)
    for (int r = 1 + lid; (${when}) && r <= pad; r += WG) {
%   if compat == "astropy":
        const int target = n_real - 1 + r, source = r;
%   else:
        const int target = n_real + r, source = (r - 1) % n_real + 1;
%   endif
        bins_uv[target] = bins_uv[source];
        bins_v[target] = bins_v[source];
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    // inclusive prefix sums of bins 0 .. n_bins: a chunk per work-item, then
    // the chunks' totals (exact integers, so any order gives the same sums)
    const int chunk = (n_bins + WG) / WG;
    const int lo = (${when}) ? min(lid * chunk, n_bins + 1) : 0;
    const int hi = (${when}) ? min(lo + chunk, n_bins + 1) : 0;
    long run_uv = 0, run_v = 0;
    for (int i = lo; i < hi; ++i) {
        run_uv += bins_uv[i];
        bins_uv[i] = run_uv;
        run_v += bins_v[i];
        bins_v[i] = run_v;
    }
    part[lid] = run_uv;
    part[WG + lid] = run_v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < WG; offset <<= 1) {
        const long add_uv = lid >= offset ? part[lid - offset] : 0;
        const long add_v = lid >= offset ? part[WG + lid - offset] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[lid] += add_uv;
        part[WG + lid] += add_v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long base_uv = lid > 0 ? part[lid - 1] : 0;
    const long base_v = lid > 0 ? part[WG + lid - 1] : 0;
    for (int i = lo; i < hi; ++i) {
        bins_uv[i] += base_uv;
        bins_v[i] += base_v;
    }
</%def>

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bls_binned(
${point_args()}
%   if fp64:
    const double width,                         // min(durations) / oversample
%   else:
    __global const float *restrict bin_scale,   // P / width
%   endif
    __global const int *restrict real_bins,     // K = ceil(P / width) per period
    __global const int *restrict box_bins,      // m per duration
    const int n_durations, const int pad,
%   if prefix:
    __global const int *restrict obj_sorted,    // per object: prefix fill (points in time order)
    __global const long2 *restrict pre,         // per object from obj_start + obj: the N + 1
                                                // exclusive prefix sums of its points (uv, v)
    __global const int *restrict guide,         // and its first point at or after k h, k <= N
    __global const real_t *restrict inv_step,   // 1 / h per object (0: all times equal)
%     if fp64:
    __global const float *restrict coarse,      // per point: (float) pt_tau
%     else:
    __global const float *restrict period_hi,   // P = period_hi + period_lo
    __global const float *restrict period_lo,
    const float width_hi, const float width_lo,
%     endif
%   endif
%   if bins_local:
    __local long *restrict bins_uv,             // (K + pad + 1) each
    __local long *restrict bins_v,
%   else:
    __global long *restrict scratch, const int slot_len,
%   endif
    __local long *restrict part,                // (2 WG,)
${output_args()}
{
    const int lid = get_local_id(0);
    const int obj = first_obj + get_group_id(1);
    const int period_index = first_period + get_group_id(0);
    const int start = obj_start[obj], end = obj_start[obj + 1];
    const long total_uv = obj_total[2 * obj], total_v = obj_total[2 * obj + 1];
    const int n_real = real_bins[period_index];
    const int n_bins = n_real + pad;            // prefix sums live in 0 .. n_bins
%   if not bins_local:
    __global long *bins_uv = scratch
        + 2 * (long) slot_len * (get_group_id(1) * get_num_groups(0) + get_group_id(0));
    __global long *bins_v = bins_uv + slot_len;
%   endif
%   if fp64:
    const double period = periods[period_index];
%   else:
    const float fh = freq_hi[period_index], fl = freq_lo[period_index];
    const float scale = bin_scale[period_index];
%   endif

%   if prefix:
    // the branches are uniform over the work-group, with no barrier inside
    const int sorted = obj_sorted[obj] && end > start;
    __local ulong *ends = (__local ulong *) part;
    if (sorted) {
${prefix_fill()}
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (sorted) {
${prefix_sums_from_boundaries()}
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
${atomic_prefix_sums("!sorted")}
%   else:
${atomic_prefix_sums("1")}
%   endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    real_t best = REAL_NEG_INF;
    int best_key = INT_MAX;
    long best_uv = 0, best_v = 0;
%   if fp64:
    const double whole_uv = TO_REAL(total_uv), whole_v = TO_REAL(total_v);
%   endif
    // each start's prefix sums read once for all durations; astropy's boxes end
    // by bin n_bins, the cyclic ones start before bin K
%   if compat == "astropy":
    const int n_starts = n_bins;
%   else:
    const int n_starts = n_real;
%   endif
    for (int s = lid; s < n_starts; s += WG) {
        const long below_uv = bins_uv[s], below_v = bins_v[s];
        for (int k = 0; k < n_durations; ++k) {
            const int m = box_bins[k];
%   if compat == "astropy":
            if (s + m > n_bins)
                continue;
%   endif
            const long in_uv = bins_uv[s + m] - below_uv;
            const long in_v = bins_v[s + m] - below_v;
${consider("in_uv", "in_v", "k * key_stride + s", False)}
        }
    }
${write_best()}
}
% else:
#define TILE ${tile}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bls_exact(
${point_args()}
    __global const int *restrict centres,       // (n_all_periods, n_durations) counts
%   if fp64:
    __global const double *restrict centre_step,    // (n_durations,) d / oversample
    __global const double *restrict half_duration,  // (n_durations,) d / 2
%   else:
    __global const float *restrict centre_step,     // (n_all_periods, n_durations) step / P
    __global const float *restrict half_width,      // (n_all_periods, n_durations) d / 2P
%   endif
    const int n_durations,
    __local long *restrict part,                // (2 WG,)
${output_args()}
{
    const int lid = get_local_id(0);
    const int obj = first_obj + get_group_id(1);
    const int period_index = first_period + get_group_id(0);
    const int start = obj_start[obj], end = obj_start[obj + 1];
    const long total_uv = obj_total[2 * obj], total_v = obj_total[2 * obj + 1];
%   if fp64:
    const double period = periods[period_index];
    const double half_period = 0.5 * period;
    __local double l_tau[TILE];
%   else:
    const float fh = freq_hi[period_index], fl = freq_lo[period_index];
    __local float l_phase[TILE];
%   endif
    __local long l_uv[TILE], l_v[TILE];

    real_t best = REAL_NEG_INF;
    int best_key = INT_MAX;
    long best_uv = 0, best_v = 0;
%   if fp64:
    const double whole_uv = TO_REAL(total_uv), whole_v = TO_REAL(total_v);
%   endif
    for (int k = 0; k < n_durations; ++k) {
        const int n_centres = centres[period_index * n_durations + k];
%   if fp64:
        const double step = centre_step[k], half_box = half_duration[k];
%   else:
        const float step = centre_step[period_index * n_durations + k];
        const float half_box = half_width[period_index * n_durations + k];
%   endif
        for (int first = 0; first < n_centres; first += WG) {
            const int i = first + lid;
%   if fp64:
            const double centre = (double) i * step;   // numpy's arange values
%   else:
            const float centre = (float) i * step;
%   endif
            long in_uv = 0, in_v = 0;
            for (int base = start; base < end; base += TILE) {
                const int count = min(TILE, end - base);
                barrier(CLK_LOCAL_MEM_FENCE);
                for (int q = lid; q < count; q += WG) {
%   if fp64:
                    l_tau[q] = pt_tau[base + q];
%   else:
                    l_phase[q] = fold(pt_th[base + q], pt_tl[base + q], fh, fl);
%   endif
                    l_uv[q] = pt_uv[base + q];
                    l_v[q] = pt_v[base + q];
                }
                barrier(CLK_LOCAL_MEM_FENCE);
                for (int q = 0; q < count; ++q) {
%   if fp64:
                    // numpy: abs((tau - c + P/2) % P - P/2) < d/2
                    const double shifted = (l_tau[q] - centre) + half_period;
                    double r = fmod(shifted, period);
                    if (r < 0)
                        r += period;
                    const int inside = fabs(r - half_period) < half_box;
%   else:
                    float distance = l_phase[q] - centre;
                    distance -= rint(distance);
                    const int inside = fabs(distance) < half_box;
%   endif
                    in_uv += inside ? l_uv[q] : 0;
                    in_v += inside ? l_v[q] : 0;
                }
            }
            if (i < n_centres) {
${consider("in_uv", "in_v", "k * key_stride + i")}
            }
        }
    }
${write_best()}
}
% endif

// The (key, sums) of the top-k peaks of a launch: slot q of row r holds grid
// index top_idx[r, q] (INT_MAX: none) of the launch's columns from first_bin.
__kernel void bls_gather(
    __global const int *restrict box, __global const long *restrict sums,
    const int row_len, const int first_bin, const int top_k, const int n_slots,
    __global const int *restrict top_idx,
    __global int *restrict top_box, __global long *restrict top_sums)
{
    const int slot = get_global_id(0);
    if (slot >= n_slots)
        return;
    const int index = top_idx[slot];
    if (index == INT_MAX) {
        top_box[slot] = INT_MAX;
        top_sums[2 * slot] = 0;
        top_sums[2 * slot + 1] = 0;
        return;
    }
    const long source = (long) (slot / top_k) * row_len + (index - first_bin);
    top_box[slot] = box[source];
    top_sums[2 * slot] = sums[2 * source];
    top_sums[2 * slot + 1] = sums[2 * source + 1];
}
