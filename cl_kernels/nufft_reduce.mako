//CL//
## The per-object statistics of nufft_prepare (nufft.mako) in many
## work-groups per object, for batches with long objects
## (clperiod.periodograms.nufft.prepare_on_device): nufft_prepare reduces each
## object in one work-group, which leaves a single long light curve to one
## compute unit.
##
## Render parameters (strict_undefined), as nufft_prepare's:
##   real           "float" | "double": the type of obj_yy and obj_scale
##   wg             work-group size (power of two)
##   use_dy         weights (min dy / dy)^2 (else 1)
##   center         subtract the weighted mean of y (fit_mean or center_data)
##   min_points     fewest rows an object needs
##   ok, too_few, zero_variance   the clperiod.Status codes
##
## An object's rows are split into chunks of consecutive rows, one work-group
## each: chunk_start holds each object's first chunk (n_objects + 1 entries,
## ascending; objects of fewer than min_points rows have none), and chunk c of
## the k chunks of an object of n rows covers its rows [c n / k, (c + 1) n / k).
## Four launches make the passes of object_statistics (lsprepare.mako), with
## the same arithmetic per row:
##   nufft_reduce_extremes   per chunk: max |y| and min dy;
##   nufft_reduce_sums       the object's exponent e of max |y| and dy_min from
##                           every chunk's extremes, then per chunk: sum w and
##                           sum w d_s (d_s = y 2^-e, less y[0] 2^-e when centring);
##   nufft_reduce_moments    also w_total and ybar from every chunk's sums, then
##                           per chunk: sum wn u, sum wn u^2 and sum wn y_s^2;
##   nufft_reduce_finish     one work-group per object: every chunk's partials
##                           to nufft_prepare's outputs (obj_stats, obj_n_eff,
##                           obj_yy, obj_scale, obj_psd, obj_status).
## The partials of an object are reduced in the same order by every work-group
## that reads them, so all use the same statistics; the sums differ from
## nufft_prepare's only in their order of addition.
<%page args="real, wg, use_dy, center, min_points, ok, too_few, zero_variance"/>
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define WG ${wg}
// obj_stats of nufft_prepare: first time t_0, sum w, ybar, residual mean r, min dy, e, f
#define N_STATS 7
typedef ${real} real_t;

% if use_dy:
#define WEIGHT(g) ((dy_min / dy[g]) * (dy_min / dy[g]))
% else:
#define WEIGHT(g) 1.0
% endif
% if center:
#define SCALED(g) (ldexp(y[g], -e) - y_ref)
% else:
#define SCALED(g) ldexp(y[g], -e)
% endif

// first j in [lo, hi) with starts[j] > value; starts ascending
inline int upper_bound(__global const int *restrict starts, int lo, int hi, const int value)
{
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (starts[mid] <= value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// the sum, maximum or minimum of every work-item's v, for every work-item
<%def name="group_reduction(name, combine)">
inline double group_${name}(__local double *restrict scratch, const double v)
{
    const int lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);  // the scratch's last reads are done
    scratch[lid] = v;
    for (int span = WG / 2; span > 0; span >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < span)
            scratch[lid] = ${combine("scratch[lid]", "scratch[lid + span]")};
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return scratch[0];
}
</%def>
${group_reduction("sum", lambda a, b: f"{a} + {b}")}
${group_reduction("max", lambda a, b: f"fmax({a}, {b})")}
${group_reduction("min", lambda a, b: f"fmin({a}, {b})")}

// column `column` of the (chunks, width) partials of chunks [c0, c1), reduced by `reduce`
<%def name="partials_reduction(name, identity, step)">
inline double partials_${name}(
    __local double *restrict scratch, __global const double *restrict part, const int width,
    const int column, const int c0, const int c1)
{
    double v = ${identity};
    for (int c = c0 + (int) get_local_id(0); c < c1; c += WG)
        v = ${step("v", "part[(long) c * width + column]")};
    return group_${name}(scratch, v);
}
</%def>
${partials_reduction("sum", "0.0", lambda a, b: f"{a} + {b}")}
${partials_reduction("max", "0.0", lambda a, b: f"fmax({a}, {b})")}
${partials_reduction("min", "INFINITY", lambda a, b: f"fmin({a}, {b})")}

// The object and rows [lo, hi) of this work-group's chunk (obj -1: none).
<%def name="chunk_rows()">
    __local double scratch[WG];
    const int chunk = (int) get_group_id(0);
    const int obj = upper_bound(chunk_start, 0, n_objects, chunk) - 1;
    const int c0 = chunk_start[obj], c1 = chunk_start[obj + 1];
    const int start = obj_start[obj], n = obj_n[obj];
    const int lo = start + (int) (((long) (chunk - c0) * n) / (c1 - c0));
    const int hi = start + (int) (((long) (chunk - c0 + 1) * n) / (c1 - c0));
</%def>

// The object's e, dy_min (and y_ref) from its chunks' extremes.
<%def name="object_extremes()">
    int e;
    frexp(partials_max(scratch, part_extremes, 2, 0, c0, c1), &e);
%   if use_dy:
    const double dy_min = partials_min(scratch, part_extremes, 2, 1, c0, c1);
%   else:
    const double dy_min = 1.0;
%   endif
%   if center:
    const double y_ref = ldexp(y[start], -e);
%   endif
</%def>

// The object's w_total and ybar from its chunks' sums.
<%def name="object_mean()">
    const double w_total = partials_sum(scratch, part_sums, 2, 0, c0, c1);
%   if center:
    const double ybar = partials_sum(scratch, part_sums, 2, 1, c0, c1) / w_total;
%   else:
    const double ybar = 0.0;
%   endif
</%def>

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nufft_reduce_extremes(
    __global const double *restrict y,
% if use_dy:
    __global const double *restrict dy,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const int *restrict chunk_start,
    const int n_objects,
    __global double *restrict part_extremes)  // (chunks, 2): max |y|, min dy
{
${chunk_rows()}
    double big = 0, small = INFINITY;
    for (int g = lo + (int) get_local_id(0); g < hi; g += WG) {
        big = fmax(big, fabs(y[g]));
%   if use_dy:
        small = fmin(small, dy[g]);
%   endif
    }
    big = group_max(scratch, big);
    small = group_min(scratch, small);
    if (get_local_id(0) == 0) {
        part_extremes[2 * (long) chunk] = big;
        part_extremes[2 * (long) chunk + 1] = small;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nufft_reduce_sums(
    __global const double *restrict y,
% if use_dy:
    __global const double *restrict dy,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const int *restrict chunk_start,
    const int n_objects,
    __global const double *restrict part_extremes,
    __global double *restrict part_sums)      // (chunks, 2): sum w, sum w d_s
{
${chunk_rows()}
${object_extremes()}
    double sw = 0, swd = 0;
    for (int g = lo + (int) get_local_id(0); g < hi; g += WG) {
        const double w = WEIGHT(g);
        sw += w;
        swd += w * SCALED(g);
    }
    sw = group_sum(scratch, sw);
    swd = group_sum(scratch, swd);
    if (get_local_id(0) == 0) {
        part_sums[2 * (long) chunk] = sw;
        part_sums[2 * (long) chunk + 1] = swd;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nufft_reduce_moments(
    __global const double *restrict y,
% if use_dy:
    __global const double *restrict dy,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const int *restrict chunk_start,
    const int n_objects,
    __global const double *restrict part_extremes,
    __global const double *restrict part_sums,
    __global double *restrict part_moments)   // (chunks, 3): sum wn u, wn u^2, wn y_s^2
{
${chunk_rows()}
${object_extremes()}
${object_mean()}
    double res = 0, yy = 0, second = 0;
    for (int g = lo + (int) get_local_id(0); g < hi; g += WG) {
        const double wn = WEIGHT(g) / w_total;
        const double u = SCALED(g) - ybar;
        const double ys = ldexp(y[g], -e);
        res += wn * u;
        yy += wn * u * u;
        second += wn * ys * ys;
    }
    res = group_sum(scratch, res);
    yy = group_sum(scratch, yy);
    second = group_sum(scratch, second);
    if (get_local_id(0) == 0) {
        part_moments[3 * (long) chunk] = res;
        part_moments[3 * (long) chunk + 1] = yy;
        part_moments[3 * (long) chunk + 2] = second;
    }
}

// One work-group per object: the outputs of nufft_prepare, from the partials
// (the status rules and the units of object_statistics in lsprepare.mako).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nufft_reduce_finish(
    __global const double *restrict t,
    __global const double *restrict y,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const int *restrict chunk_start,
    __global const double *restrict part_extremes,
    __global const double *restrict part_sums,
    __global const double *restrict part_moments,
    __global double *restrict obj_stats,      // (objects, N_STATS)
    __global int *restrict obj_n_eff,
    __global real_t *restrict obj_yy,
    __global real_t *restrict obj_scale,
    __global double *restrict obj_psd,
    __global char *restrict obj_status)
{
    __local double scratch[WG];
    const int obj = (int) get_group_id(0);
    const bool first = get_local_id(0) == 0;
    const int start = obj_start[obj], n = obj_n[obj];
    const int c0 = chunk_start[obj], c1 = chunk_start[obj + 1];
    if (n < ${min_points}) {  // uniform over the group
        if (first) {
            obj_n_eff[obj] = 0;
            obj_yy[obj] = NAN;
            obj_scale[obj] = 0;
            obj_psd[obj] = 0;
            obj_status[obj] = ${too_few};
        }
        return;
    }
${object_extremes()}
${object_mean()}
    double res = partials_sum(scratch, part_moments, 3, 0, c0, c1);
    double yy = partials_sum(scratch, part_moments, 3, 1, c0, c1);
    const double second = partials_sum(scratch, part_moments, 3, 2, c0, c1);
% if center:
    yy = fmax(yy - res * res, 0.0);
% else:
    res = 0.0;
% endif
    if (!first)
        return;
    const double eps = ${repr(float.fromhex("0x1p-52"))};
    if (yy <= eps * eps * second) {
        obj_n_eff[obj] = 0;
        obj_yy[obj] = NAN;
        obj_scale[obj] = 0;
        obj_psd[obj] = 0;
        obj_status[obj] = ${zero_variance};
        return;
    }
    int f;
    frexp(sqrt(yy), &f);
    const double spread = ldexp(sqrt(ldexp(yy, -2 * f)), e + f) / dy_min;
    const double psd = 0.5 * (w_total * spread * spread);
    obj_n_eff[obj] = n;
    obj_yy[obj] = (real_t) ldexp(yy, -2 * f);
    obj_scale[obj] = (real_t) psd;
    obj_psd[obj] = psd;
    obj_status[obj] = ${ok};
    __global double *stats = obj_stats + (long) obj * N_STATS;
    stats[0] = t[start];
    stats[1] = w_total;
    stats[2] = ybar;
    stats[3] = res;
    stats[4] = dy_min;
    stats[5] = (double) e;
    stats[6] = (double) f;
}
