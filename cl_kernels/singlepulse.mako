//CL//
## Single-pulse search: boxcar matched filters of de-dispersed time series
## (Adamek & Armour; AstroAccelerate's BoxDIT plan).
##
## Render parameters (strict_undefined):
##   raw         the input holds raw samples x, normalised on load as
##               z = (x - mean[row]) * inv_std[row] (non-finite -> 0); else the
##               input already holds a normalised (decimated) series
##   wmax        largest boxcar width of the level, in the level's samples
##   wmin        smallest boxcar width of the level
##   local_size  work-group size
##   per_item    autocovariance terms per work-item (tiles of local_size *
##               per_item samples)
##   box_per_item  boxcar starts per work-item and sub-tile
##   box_tiles   boxcar sub-tiles per work-group (local_size * box_per_item *
##               box_tiles starts, loaded into local memory at once)
##
## Every kernel runs on a 2-D range: dimension 0 = tiles along time (times
## local_size), dimension 1 = DM rows; rows are `stride` samples apart.
##
## * row_moments: per (row, work-group) count, mean and M2 of the finite
##   samples (optionally only |x - clip_mean| <= clip * clip_std), streaming
##   (Chan et al. eq. 1) per work-item, then merged pairwise in local memory
##   (eq. 2); the host merges the work-groups with eq. 2 in float64. Values
##   enter as (x - x0) * scale[row] (scale a power of two chosen by the host,
##   so the squares stay in float32 range), and the largest |(x - x0) * scale|
##   is returned with them.
## * decimate: out[i] = z[2i] + z[2i + 1].
## * autocovariance: per (row, work-group) sums of z[t] z[t + l] for a block
##   of 32 lags, over the owned t; the host divides by the number of terms.
## * boxcar: for each start i the running sums B_w = z[i] + ... + z[i+w-1],
##   w = 1..wmax, SNR_w = B_w * inv_sigma[row][w - 1] for w >= wmin; the best
##   SNR and width per start (first maximum) are appended to the detection
##   list, through one atomic counter, when SNR >= threshold and the start is
##   owned (own_lo <= i < own_hi). Boxcars must end inside the series.
##   For wmax <= 32 a cheap upper bound first rules out almost every start
##   (see the kernel); the few others are scored exactly as above, so the
##   detections are the same as scoring every start.
##
## Local tiles use a padded layout (4 words after every 32 samples) and are
## read as float4: work-items box_per_item or per_item samples apart then read
## their windows without bank conflicts (8-way conflicts on scalar reads made
## the boxcar 4x slower on the H100).
<%
    import math
    tile = local_size * per_item
    # the register window (per_item starts + 31 more samples, in float4s)
    # serves widths and lags up to 32
    window = wmax <= 32
    window_len = (per_item + 31 + 3) // 4 * 4
    box_halo = (wmax - 1 + 3) // 4 * 4
    box_cover = local_size * box_per_item * box_tiles
    box_window = box_per_item + box_halo
    box_top = box_per_item - 1 + wmax      # largest prefix-sum offset used
    # width groups of the boxcar bound: [2^k, 2^(k+1) - 1] within [wmin,
    # wmax]; a last group of one width joins the one before
    groups = []
    k = 0
    while (1 << k) <= wmax:
        lo, hi = max(wmin, 1 << k), min(wmax, (2 << k) - 1)
        if lo <= hi:
            groups.append([lo, hi])
        k += 1
    if len(groups) > 1 and groups[-1][0] == groups[-1][1]:
        groups[-2][1] = groups[-1][1]
        groups.pop()
    max_levels = [0] + [int(math.log2(hi - lo + 1)) for lo, hi in groups]
%>
#define LOCAL_SIZE ${local_size}
#define PER_ITEM ${per_item}
#define TILE ${tile}
#define WMAX ${wmax}
#define WMIN ${wmin}
#define WINDOW ${window_len}
#define BOX_PER_ITEM ${box_per_item}
#define BOX_TILE (LOCAL_SIZE * BOX_PER_ITEM)
#define BOX_COVER ${box_cover}
#define BOX_SPAN ${box_cover + box_halo}
#define BOX_WINDOW ${box_window}

// padded local layout: sample s at word AT(s); PADDED(len) words hold len
// samples; TILE4(buf, f) is the float4 of samples 4f .. 4f + 3
#define AT(s) ((s) + (((s) >> 5) << 2))
#define PADDED(len) ((len) + ((len) >> 5) * 4 + 4)
#define TILE4(buf, f) (((__local float4 *) (buf))[AT(4 * (f)) >> 2])

% if raw:
#define LOAD(row, t) normalised(x[(long) (row) * stride + (t)], mean[row], inv_std[row])
inline float normalised(const float v, const float m, const float inv)
{
    return isfinite(v) ? (v - m) * inv : 0.0f;
}
#define SOURCE_ARGS __global const float *restrict x, __global const float *restrict mean, __global const float *restrict inv_std
#define SOURCE x, mean, inv_std
% else:
#define LOAD(row, t) (x[(long) (row) * stride + (t)])
#define SOURCE_ARGS __global const float *restrict x
#define SOURCE x
% endif

__kernel void row_moments(
    __global const float *restrict x,
    const long stride,
    const int n,                       // samples per row
    const int block,                   // samples per work-group
    const int clip,                    // 0: all finite samples; 1: clipped
    __global const float *restrict clip_mean,
    __global const float *restrict clip_half_width,
    __global const float *restrict scale,  // per row: values enter as (x - x0) * scale
    __global float *restrict out)      // [6][row][group]: count, mean (relative
                                       // to x0), M2, non-finite samples, x0 and
                                       // max |x - x0|; mean, M2, max scaled
{
    const int row = get_global_id(1);
    const int lid = get_local_id(0);
    const int group = get_group_id(0);
    __global const float *xr = x + (long) row * stride;
    // per work-item: Chan et al.'s streaming update (eq. 1), T_j = T_{j-1} + x_j,
    // S_j = S_{j-1} + (j x_j - T_j)^2 / (j (j - 1)); then their pairwise merge
    // (eq. 2) in local memory. The pass is bound by memory, so the update's
    // reciprocal (native, a few ulp) costs nothing measurable.
    // Values are shifted by x0, a sample of the block, so T does not grow
    // with a large offset (float32).
    const float c0 = clip ? clip_mean[row] : 0, hw = clip ? clip_half_width[row] : 0;
    const int t_begin = group * block;
    const float x0 = clip ? c0 : (t_begin < n && isfinite(xr[t_begin]) ? xr[t_begin] : 0.0f);
    const float s = scale[row];
    float cnt = 0, tsum = 0, ssum = 0, dev = 0;
    int bad = 0;
    const int t_end = min(n, (group + 1) * block);
    for (int t = t_begin + lid; t < t_end; t += LOCAL_SIZE) {
        const float raw = xr[t];
        if (!isfinite(raw)) {
            ++bad;
            continue;
        }
        if (clip && fabs(raw - c0) > hw)
            continue;
        const float v = (raw - x0) * s;
        dev = fmax(dev, fabs(v));
        cnt += 1;
        tsum += v;
        if (cnt > 1) {
            const float d = cnt * v - tsum;
            ssum += d * d * native_recip(cnt * (cnt - 1));
        }
    }
    const float mu = cnt > 0 ? tsum / cnt : 0;   // relative to x0 until the host adds it
    const float m2 = ssum;
    __local float l_cnt[LOCAL_SIZE], l_mu[LOCAL_SIZE], l_m2[LOCAL_SIZE], l_dev[LOCAL_SIZE];
    __local int l_bad[LOCAL_SIZE];
    l_cnt[lid] = cnt; l_mu[lid] = mu; l_m2[lid] = m2; l_bad[lid] = bad; l_dev[lid] = dev;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = LOCAL_SIZE / 2; step > 0; step >>= 1) {
        if (lid < step) {              // Chan et al. eq. 2
            const float na = l_cnt[lid], nb = l_cnt[lid + step], nab = na + nb;
            if (nb > 0) {
                const float d = l_mu[lid + step] - l_mu[lid];
                l_mu[lid] += d * nb / nab;
                l_m2[lid] += l_m2[lid + step] + d * d * na * nb / nab;
                l_cnt[lid] = nab;
            }
            l_bad[lid] += l_bad[lid + step];
            l_dev[lid] = fmax(l_dev[lid], l_dev[lid + step]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        const int total = get_num_groups(0) * get_global_size(1);
        __global float *o = out + row * get_num_groups(0) + group;
        o[0] = l_cnt[0];
        o[total] = l_mu[0];
        o[2 * total] = l_m2[0];
        o[3 * total] = l_bad[0];   // exact: at most `block` samples
        o[4 * total] = x0;
        o[5 * total] = l_dev[0];
    }
}

// out[i] = z[factor i] + ... + z[factor i + factor - 1]. For factors of 8
// and more a work-group loads its LOCAL_SIZE * factor samples coalesced into
// local memory (up to DECIMATE_SPAN at a time), then each work-item adds its
// factor samples starting at a rotated offset (no bank conflicts): 2.4x
// faster than direct loads for factor 32 on the H100.
#define DECIMATE_SPAN 4096
__kernel void decimate(
    SOURCE_ARGS,
    const long stride,
    const int n_out,
    const int factor,                  // a power of two
    __global float *restrict out,
    const long out_stride)
{
    __local float buf[DECIMATE_SPAN];
    const int row = get_global_id(1);
    const int lid = get_local_id(0);
    if (factor < 8) {                  // a few neighbours: direct loads coalesce well
        const int i = get_global_id(0);
        if (i < n_out) {
            float sum = 0;
            for (int j = 0; j < factor; ++j)
                sum += LOAD(row, (long) factor * i + j);
            out[(long) row * out_stride + i] = sum;
        }
        return;
    }
    const int first_out = get_group_id(0) * LOCAL_SIZE;
    const int outs = min(LOCAL_SIZE, n_out - first_out);   // outputs of this group
    const int per_pass = max(1, DECIMATE_SPAN / factor);  // outputs per local pass
    float sum = 0;
    for (int o0 = 0; o0 < outs; o0 += per_pass) {
        const int count = min(per_pass, outs - o0) * factor;
        const long src0 = (long) (first_out + o0) * factor;
        for (int k = lid; k < count; k += LOCAL_SIZE)
            buf[k] = LOAD(row, src0 + k);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int mine = lid - o0;
        if (mine >= 0 && mine < per_pass && mine * factor < count)
            for (int j = 0; j < factor; ++j)
                sum += buf[mine * factor + ((j + mine) & (factor - 1))];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < outs)
        out[(long) row * out_stride + first_out + lid] = sum;
}

#define LAGS 32
#define TILE_SPAN (TILE + WMAX + LAGS + 3)

// Loads the tile [base, base + TILE_SPAN) of a row (zeros past n).
inline void load_tile(__local float *tile, const int row, const int base, const int n,
                      SOURCE_ARGS, const long stride)
{
    for (int k = get_local_id(0); k < TILE_SPAN; k += LOCAL_SIZE) {
        const int t = base + k;
        tile[AT(k)] = t < n ? LOAD(row, t) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

// sums of z[t] z[t + lag0 + l], l < LAGS, over the owned t of a segment of
// `segment` samples per work-group (a fixed span of native samples, so the
// partials do not depend on chunking); one launch per block of 32 lags
__kernel void autocovariance(
    SOURCE_ARGS,
    const long stride,
    const int n,                       // samples in the row (the halo included)
    const int own_hi,                  // terms with t < own_hi
    const int lag0,
    const int segment,
    __global float *restrict out)      // [row][group][LAGS]
{
    __local float4 tile4[PADDED(TILE_SPAN) / 4];
    __local float *tile = (__local float *) tile4;
    __local float red[LOCAL_SIZE];
    const int row = get_global_id(1);
    const int lid = get_local_id(0);
    const int seg_lo = get_group_id(0) * segment;
    const int seg_hi = min(own_hi, seg_lo + segment);
    float acc[LAGS];
#pragma unroll
    for (int l = 0; l < LAGS; ++l)
        acc[l] = 0;
    for (int base = seg_lo; base < seg_hi; base += TILE) {
        load_tile(tile, row, base, n, SOURCE, stride);
% if window:
        // PER_ITEM consecutive t per work-item, samples in registers (lag0 = 0)
        const int k0 = lid * PER_ITEM;
        float win[WINDOW];
#pragma unroll
        for (int q = 0; q < WINDOW / 4; ++q) {
            const float4 v = TILE4(tile, k0 / 4 + q);
            win[4 * q] = v.x; win[4 * q + 1] = v.y; win[4 * q + 2] = v.z; win[4 * q + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < PER_ITEM; ++j) {
            const float z = base + k0 + j < seg_hi ? win[j] : 0.0f;
#pragma unroll
            for (int l = 0; l < LAGS; ++l)
                acc[l] += z * win[j + l];
        }
% else:
        for (int k = lid; k < TILE && base + k < seg_hi; k += LOCAL_SIZE) {
            const float z = tile[AT(k)];
#pragma unroll
            for (int l = 0; l < LAGS; ++l)
                acc[l] += z * tile[AT(k + lag0 + l)];
        }
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global float *o = out + ((long) row * get_num_groups(0) + get_group_id(0)) * LAGS;
    for (int l = 0; l < LAGS; ++l) {
        red[lid] = acc[l];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int step = LOCAL_SIZE / 2; step > 0; step >>= 1) {
            if (lid < step)
                red[lid] += red[lid + step];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            o[l] = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

inline void append(const int row, const int i, const int w, const float snr, const int scale,
                   const long start_offset, volatile __global int *count, const int capacity,
                   __global int *det_row, __global long *det_start, __global int *det_width,
                   __global float *det_snr)
{
    const int slot = atomic_inc(count);
    if (slot < capacity) {
        det_row[slot] = row;
        det_start[slot] = start_offset + (long) i * scale;
        det_width[slot] = w * scale;
        det_snr[slot] = snr;
    }
}

% if raw:
#define BOX_NORM(v, t) ((t) < n && isfinite(v) ? ((v) - m_row) * s_row : 0.0f)
% else:
#define BOX_NORM(v, t) ((t) < n ? (v) : 0.0f)
% endif

// SNR of the best width of start i (first maximum over the widths that end
// inside the series), its width in best_w; k is i's sample in the tile
inline float score(__local const float *tile, __local const float *inv, const int k, const int i,
                   const int n, int *best_w)
{
    float sum = 0, best = -INFINITY;
    *best_w = 0;
    for (int w = 1; w <= WMAX; ++w) {
        sum += tile[AT(k + w - 1)];
        const float snr = sum * inv[w - 1];
        if (w >= WMIN && snr > best && i + w <= n) {
            best = snr;
            *best_w = w;
        }
    }
    return best;
}

// Each work-group searches BOX_COVER starts of one row. Its samples (and the
// WMAX - 1 after them) are loaded once, as float4 where the row is aligned,
// normalised and stored in local memory.
__kernel void boxcar(
    SOURCE_ARGS,
    const long stride,
    const int n,                       // samples in the row (the halo included)
    const int own_lo,
    const int own_hi,
    __global const float *restrict inv_sigma,   // [row][WMAX]
    const float threshold,
    const int scale,                   // native samples per sample of this level
    const long start_offset,           // native index of sample 0
    const int aligned,                 // rows start on 16-byte boundaries
    volatile __global int *restrict count,
    const int capacity,
    __global int *restrict det_row,
    __global long *restrict det_start,
    __global int *restrict det_width,
    __global float *restrict det_snr)
{
    __local float4 tile4[PADDED(BOX_SPAN) / 4];
    __local float *tile = (__local float *) tile4;
    __local float inv[WMAX];
    const int row = get_global_id(1);
    const int lid = get_local_id(0);
    const int base = get_group_id(0) * BOX_COVER;
% if raw:
    const float m_row = mean[row], s_row = inv_std[row];
% endif
    for (int k = lid; k < WMAX; k += LOCAL_SIZE)
        inv[k] = inv_sigma[row * WMAX + k];
    __global const float *xr = x + (long) row * stride + base;
    const int left = n - base;         // samples of the row from base on
    for (int f = lid; f < BOX_SPAN / 4; f += LOCAL_SIZE) {
        const int t = 4 * f;
        const float4 v = aligned && t + 3 < left
            ? *(__global const float4 *) (xr + t)
            : (float4)(t < left ? xr[t] : 0.0f, t + 1 < left ? xr[t + 1] : 0.0f,
                       t + 2 < left ? xr[t + 2] : 0.0f, t + 3 < left ? xr[t + 3] : 0.0f);
        TILE4(tile, f) = (float4)(BOX_NORM(v.x, t), BOX_NORM(v.y, t + 1),
                                  BOX_NORM(v.z, t + 2), BOX_NORM(v.w, t + 3));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
% if window:
    // Bound: with prefix sums p[m] of the window, B_w = p[j + w] - p[j], so in
    // a group of widths [a, b] no SNR reaches the threshold unless
    // max(p[j + a .. j + b]) - p[j] >= threshold / max(inv[a-1 .. b-1]).
    // The range maxima come from a sparse table (2 maxima of power-of-two
    // ranges); `margin` covers the rounding of the prefix and running sums
    // (< 100 ulp of the sum of |z| over the window) and thr[] is lowered by
    // 4e-6 for the division and the SNR product, so no start that reaches the
    // threshold when scored exactly is ruled out.
    float thr[${len(groups)}];
% for g, (lo, hi) in enumerate(groups):
    {
        float ivmax = 0.0f;
        for (int w = ${lo}; w <= ${hi}; ++w)
            ivmax = fmax(ivmax, inv[w - 1]);
        thr[${g}] = ivmax > 0.0f ? threshold / ivmax * (1.0f - 4e-6f) : INFINITY;
    }
% endfor
    for (int sub = 0; sub < BOX_COVER / BOX_TILE; ++sub) {
        const int k0 = sub * BOX_TILE + lid * BOX_PER_ITEM;
        float p[${box_top + 1}];
        float sabs = 0.0f;
        p[0] = 0.0f;
#pragma unroll
        for (int q = 0; q < BOX_WINDOW / 4; ++q) {
            const float4 v = TILE4(tile, k0 / 4 + q);
            const float z[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                if (4 * q + c < ${box_top}) {
                    p[4 * q + c + 1] = p[4 * q + c] + z[c];
                    sabs += fabs(z[c]);
                }
            }
        }
        const float margin = 1e-5f * sabs;
% for lv in range(1, max(max_levels) + 1):
<% half = 1 << (lv - 1); size = box_top - (1 << lv) + 2; prev = "p" if lv == 1 else "m%d" % (lv - 1) %>
        float m${lv}[${size}];   // m${lv}[m] = max(p[m .. m + ${(1 << lv) - 1}])
#pragma unroll
        for (int m = 0; m < ${size}; ++m)
            m${lv}[m] = fmax(${prev}[m], ${prev}[m + ${half}]);
% endfor
        // non-finite sums (overflow) are scored exactly
        int flagged = sabs < INFINITY ? 0 : -1;
#pragma unroll
        for (int j = 0; j < BOX_PER_ITEM; ++j) {
            const float lo = p[j] - margin;
            bool hit = false;
% for g, (lo, hi) in enumerate(groups):
<%
    lv = int(math.log2(hi - lo + 1))
    name = "p" if lv == 0 else "m%d" % lv
    first, second = lo, hi - (1 << lv) + 1
%>
% if first == second:
            hit = hit || ${name}[j + ${first}] - lo >= thr[${g}];
% else:
            hit = hit || fmax(${name}[j + ${first}], ${name}[j + ${second}]) - lo >= thr[${g}];
% endif
% endfor
            flagged |= hit ? 1 << j : 0;
        }
        for (int j = 0; flagged && j < BOX_PER_ITEM; ++j) {
            const int i = base + k0 + j;
            if (!(flagged & (1 << j)) || i < own_lo || i >= own_hi)
                continue;
            int best_w;
            const float best = score(tile, inv, k0 + j, i, n, &best_w);
            if (best >= threshold)
                append(row, i, best_w, best, scale, start_offset, count, capacity,
                       det_row, det_start, det_width, det_snr);
        }
    }
% else:
    for (int k = lid; k < BOX_COVER; k += LOCAL_SIZE) {
        const int i = base + k;
        if (i < own_lo || i >= own_hi)
            continue;
        int best_w;
        const float best = score(tile, inv, k, i, n, &best_w);
        if (best >= threshold)
            append(row, i, best_w, best, scale, start_offset, count, capacity,
                   det_row, det_start, det_width, det_snr);
    }
% endif
}
