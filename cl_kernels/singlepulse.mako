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
##   local_size  work-group size (tiles hold local_size * per_item samples)
##   per_item    boxcar starts / autocovariance terms per work-item
##
## Every kernel runs on a 2-D range: dimension 0 = tiles along time (times
## local_size), dimension 1 = DM rows; rows are `stride` samples apart.
##
## * row_moments: per (row, work-group) count, mean and M2 of the finite
##   samples (optionally only |x - clip_mean| <= clip * clip_std), streaming
##   (Chan et al. eq. 1) per work-item, then merged pairwise in local memory
##   (eq. 2); the host merges the work-groups with eq. 2 in float64.
## * decimate: out[i] = z[2i] + z[2i + 1].
## * autocovariance: per (row, work-group) sums of z[t] z[t + l] for a block
##   of 32 lags, over the owned t; the host divides by the number of terms.
## * boxcar: for each start i the running sums B_w = z[i] + ... + z[i+w-1],
##   w = 1..wmax, SNR_w = B_w * inv_sigma[row][w - 1] for w >= wmin; the best
##   SNR and width per start (first maximum) are appended to the detection
##   list, through one atomic counter, when SNR >= threshold and the start is
##   owned (own_lo <= i < own_hi). Boxcars must end inside the series.
<%
    tile = local_size * per_item
    # the register window (per_item starts + 31 more samples, in float4s)
    # serves widths and lags up to 32
    window = wmax <= 32
    window_len = (per_item + 31 + 3) // 4 * 4
%>
#define LOCAL_SIZE ${local_size}
#define PER_ITEM ${per_item}
#define TILE ${tile}
#define WMAX ${wmax}
#define WMIN ${wmin}
#define WINDOW ${window_len}

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
    __global float *restrict out_count,
    __global float *restrict out_mean,
    __global float *restrict out_m2,
    __global int *restrict out_bad,    // non-finite samples per (row, group)
    __global float *restrict out_shift)   // x0: out_mean is relative to it
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
    float cnt = 0, tsum = 0, ssum = 0;
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
        const float v = raw - x0;
        cnt += 1;
        tsum += v;
        if (cnt > 1) {
            const float d = cnt * v - tsum;
            ssum += d * d * native_recip(cnt * (cnt - 1));
        }
    }
    const float mu = cnt > 0 ? tsum / cnt : 0;   // relative to x0 until the host adds it
    const float m2 = ssum;
    __local float l_cnt[LOCAL_SIZE], l_mu[LOCAL_SIZE], l_m2[LOCAL_SIZE];
    __local int l_bad[LOCAL_SIZE];
    l_cnt[lid] = cnt; l_mu[lid] = mu; l_m2[lid] = m2; l_bad[lid] = bad;
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
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        const int k = row * get_num_groups(0) + group;
        out_count[k] = l_cnt[0];
        out_mean[k] = l_mu[0];
        out_shift[k] = x0;
        out_m2[k] = l_m2[0];
        out_bad[k] = l_bad[0];
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
        tile[k] = t < n ? LOAD(row, t) : 0.0f;
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
    __local float tile[TILE_SPAN];
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
            const float4 v = vload4(q, tile + k0);
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
            const float z = tile[k];
#pragma unroll
            for (int l = 0; l < LAGS; ++l)
                acc[l] += z * tile[k + lag0 + l];
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
    volatile __global int *restrict count,
    const int capacity,
    __global int *restrict det_row,
    __global long *restrict det_start,
    __global int *restrict det_width,
    __global float *restrict det_snr)
{
    __local float tile[TILE_SPAN];
    __local float inv[WMAX];
    const int row = get_global_id(1);
    const int lid = get_local_id(0);
    const int base = get_group_id(0) * TILE;
    for (int k = lid; k < WMAX; k += LOCAL_SIZE)
        inv[k] = inv_sigma[row * WMAX + k];
    load_tile(tile, row, base, n, SOURCE, stride);
% if window:
    // PER_ITEM consecutive starts per work-item, their samples and the
    // inverse noise of every width in registers
    const int k0 = lid * PER_ITEM;
    float iv[WMAX];
#pragma unroll
    for (int w = 0; w < WMAX; ++w)
        iv[w] = inv[w];
    float win[WINDOW];
#pragma unroll
    for (int q = 0; q < WINDOW / 4; ++q) {
        const float4 v = vload4(q, tile + k0);
        win[4 * q] = v.x; win[4 * q + 1] = v.y; win[4 * q + 2] = v.z; win[4 * q + 3] = v.w;
    }
    // fast pass: the best SNR of each start (add, multiply, max per width),
    // the PER_ITEM starts interleaved so their sums are independent chains
    float sum[PER_ITEM], best[PER_ITEM];
#pragma unroll
    for (int j = 0; j < PER_ITEM; ++j) {
        sum[j] = 0;
        best[j] = -INFINITY;
    }
#pragma unroll
    for (int w = 1; w <= WMAX; ++w) {
#pragma unroll
        for (int j = 0; j < PER_ITEM; ++j) {
            sum[j] += win[j + w - 1];
            if (w >= WMIN)
                best[j] = fmax(best[j], sum[j] * iv[w - 1]);
        }
    }
#pragma unroll
    for (int j = 0; j < PER_ITEM; ++j) {
        const int i = base + k0 + j;
        if (best[j] < threshold || i < own_lo || i >= own_hi)
            continue;
        // rare: which width, among those that fit in the series (first
        // maximum); from the tile, so that win[] stays in registers
        float acc = 0, top = -INFINITY;
        int best_w = 0;
        for (int w = 1; w <= WMAX; ++w) {
            acc += tile[k0 + j + w - 1];
            const float snr = acc * inv[w - 1];
            if (w >= WMIN && snr > top && i + w <= n) {
                top = snr;
                best_w = w;
            }
        }
        if (top >= threshold)
            append(row, i, best_w, top, scale, start_offset, count, capacity,
                   det_row, det_start, det_width, det_snr);
    }
% else:
    for (int k = lid; k < TILE; k += LOCAL_SIZE) {
        const int i = base + k;
        if (i < own_lo || i >= own_hi)
            continue;
        float sum = 0, best = -INFINITY;
        int best_w = 0;
        for (int w = 1; w <= WMAX; ++w) {
            sum += tile[k + w - 1];
            const float snr = sum * inv[w - 1];
            if (w >= WMIN && snr > best && i + w <= n) {
                best = snr;
                best_w = w;
            }
        }
        if (best >= threshold)
            append(row, i, best_w, best, scale, start_offset, count, capacity,
                   det_row, det_start, det_width, det_snr);
    }
% endif
}
