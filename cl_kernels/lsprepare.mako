//CL//
## Lomb-Scargle input preparation on the device: from a catalog's raw
## t, y (and dy) to the per-point and per-object inputs of ``ls_tiles``
## (see lombscargle.mako), the work ``clperiod.periodograms.lombscargle._prepare`` does on
## the host. Always fp64 arithmetic (the times need it); the outputs are in
## the tile kernel's type.
##
## Render parameters (strict_undefined):
##   real        "float" | "double": the tile kernel's type (its input layout)
##   wg          work-group size (power of two)
##   use_dy      weights dy^-2 (else 1)
##   center      subtract the weighted mean of y (fit_mean or center_data)
##   min_points  fewest observations an object needs
##   ok, too_few, zero_variance   the clperiod.Status codes
##   arbitrary   the tile kernel reads its frequencies from an array: the
##               per-point inputs are the times (fp32: as float pairs
##               pt_th + pt_tl), w and w y', without grid or phase steps
##
## One work-group per object, four passes over its rows, the steps of
## clperiod.periodograms.standardize.standardize (see there) in the same order:
##   1. the exponent e of max |y|, min dy, the time range;
##   2. with y_s = y 2^-e, d_s = y_s - y_s[0] when centring (else y_s) and
##      w = (min dy / dy)^2: sum w, sum w d_s, and the reference row: the
##      first row nearest the middle of the time range (see reference_times
##      in periodograms/inputs.py);
##   3. with wn = w / sum w and u = d_s - ybar (ybar = sum w d_s / sum w
##      when centring, else 0): the residual mean r = sum wn u, yy =
##      sum wn u^2 - r^2 and the second moment sum wn y_s^2 (the
##      zero-variance test); the unit 2^f with yy 4^-f in [1/4, 1), and the
##      psd scale 1/2 sum dy^-2 (y - ybar)^2;
##   4. per row, times from the reference, the phase-step inputs of the grid
##      spacing (uniform grids) and the weights wn, wn (u - r) 2^-f.
## Objects with too few points or zero variance get obj_n_eff = 0 and
## yy = NaN (the tile kernel then writes NaN powers and no peak).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
<%
    fp64 = real == "double"
    step = "cd" if fp64 else "vd"
%>
#define WG ${wg}
typedef ${real} real_t;

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ls_prepare(
    __global const double *restrict t,
    __global const double *restrict y,
% if use_dy:
    __global const double *restrict dy,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
% if arbitrary and fp64:
    __global double *restrict pt_t,
% elif arbitrary:
    __global float *restrict pt_th,
    __global float *restrict pt_tl,
% else:
    const double f_min, const double df, const double two_pi_df,
%   if fp64:
    __global double *restrict pt_t,
%   else:
    __global float *restrict pt_a,
    __global float *restrict pt_bh,
    __global float *restrict pt_bl,
%   endif
    __global real_t *restrict pt_${step},
    __global real_t *restrict pt_sd,
% endif
    __global real_t *restrict pt_w,
    __global real_t *restrict pt_wy,
    __global int *restrict obj_n_eff,
    __global real_t *restrict obj_yy,
    __global real_t *restrict obj_scale,
    __global double *restrict obj_psd,
    __global char *restrict obj_status)
{
${object_statistics(use_dy, center, min_points, ok, too_few, zero_variance)}
    // pass 4: the per-point inputs
    for (int i = lid; i < n; i += WG) {
        const int g = start + i;
        const double tr = ot[i] - t_ref;
        const double wn = WEIGHT(i) / w_total;
% if arbitrary and fp64:
        pt_t[g] = tr;
% elif arbitrary:
        const float t_hi = (float) tr;
        pt_th[g] = t_hi;
        pt_tl[g] = (float) (tr - (double) t_hi);
% else:
        const double step = two_pi_df * tr;
%   if fp64:
        double c;
        const double s = sincos(step, &c);
        pt_t[g] = tr;
        pt_cd[g] = c;
        pt_sd[g] = s;
%   else:
        const double half_sin = sin(0.5 * step);
        pt_vd[g] = (float) (4 * (half_sin * half_sin));
        pt_sd[g] = (float) sin(step);
        double a = f_min * tr;
        double b = df * tr;
        a -= rint(a);
        b -= rint(b);
        const float b_hi = (float) b;
        pt_a[g] = (float) a;
        pt_bh[g] = b_hi;
        pt_bl[g] = (float) (b - (double) b_hi);
%   endif
% endif
        pt_w[g] = (real_t) wn;
        pt_wy[g] = (real_t) (wn * ldexp((SCALED(i) - ybar) - res, -f));
    }
% if arbitrary:
    // PoCL 3.1 crashes on the short loop above for objects of fewer rows than
    // WG (work-items without a row) unless a barrier follows; every work-item
    // reaches it (the returns above are taken by the whole group)
    barrier(CLK_GLOBAL_MEM_FENCE);
% endif
}

## Passes 1-3 of one object (one work-group): the statistics of the
## standardisation and the object outputs obj_n_eff, obj_yy, obj_scale,
## obj_psd and obj_status (a group whose object has too few points or zero
## variance writes them and returns). Leaves in scope for the per-point pass:
## start, n, ot, oy, e, dy_min, WEIGHT(i), SCALED(i), w_total, ybar, t_ref,
## res and f. Needs WG and the kernel arguments t, y, dy (with use_dy),
## obj_start, obj_n and the object outputs. With contiguous, each work-item
## reads one run of consecutive rows (CPU caches) instead of every WG-th row.
<%def name="object_statistics(use_dy, center, min_points, ok, too_few, zero_variance, contiguous=False)">
    __local double ra[WG], rb[WG], rc[WG], rd[WG];
    __local int rrow[WG];
    const int obj = get_group_id(0);
    const int lid = get_local_id(0);
    const int start = obj_start[obj];
    const int n = obj_n[obj];
    if (n < ${min_points}) {  // uniform over the group
        if (lid == 0) {
            obj_n_eff[obj] = 0;
            obj_yy[obj] = NAN;
            obj_scale[obj] = 0;
            obj_psd[obj] = 0;
            obj_status[obj] = ${too_few};
        }
        return;
    }
    __global const double *ot = t + start;
    __global const double *oy = y + start;
% if contiguous:
    const int per_item = (n + WG - 1) / WG;
    const int row_lo = min(n, lid * per_item), row_hi = min(n, row_lo + per_item);
<%   rows = "for (int i = row_lo; i < row_hi; ++i)" %>
% else:
<%   rows = "for (int i = lid; i < n; i += WG)" %>
% endif

    // pass 1: largest |y|, smallest dy, time range
    double big = 0, small = INFINITY, lo = INFINITY, hi = -INFINITY;
    ${rows} {
        big = fmax(big, fabs(oy[i]));
% if use_dy:
        small = fmin(small, dy[start + i]);
% endif
        lo = fmin(lo, ot[i]);
        hi = fmax(hi, ot[i]);
    }
    ra[lid] = big; rb[lid] = small; rc[lid] = lo; rd[lid] = hi;
    for (int span = WG / 2; span > 0; span >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < span) {
            ra[lid] = fmax(ra[lid], ra[lid + span]);
            rb[lid] = fmin(rb[lid], rb[lid + span]);
            rc[lid] = fmin(rc[lid], rc[lid + span]);
            rd[lid] = fmax(rd[lid], rd[lid + span]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int e;
    frexp(ra[0], &e);
% if use_dy:
    const double dy_min = rb[0];
#define WEIGHT(i) ((dy_min / dy[start + (i)]) * (dy_min / dy[start + (i)]))
% else:
    const double dy_min = 1.0;
#define WEIGHT(i) 1.0
% endif
% if center:
    const double y_ref = ldexp(oy[0], -e);
#define SCALED(i) (ldexp(oy[i], -e) - y_ref)
% else:
#define SCALED(i) ldexp(oy[i], -e)
% endif
    const double epoch = 0.5 * (rc[0] + rd[0]);
    barrier(CLK_LOCAL_MEM_FENCE);

    // pass 2: sum w, sum w d_s, nearest row to the epoch
    double sw = 0, swd = 0, near = INFINITY;
    int row = n;
    ${rows} {
        const double w = WEIGHT(i);
        sw += w;
        swd += w * SCALED(i);
        const double d = fabs(ot[i] - epoch);
        if (d < near) {  // rows rise with i: the first row of a tie stays
            near = d;
            row = i;
        }
    }
    ra[lid] = sw; rb[lid] = swd; rd[lid] = near; rrow[lid] = row;
    for (int span = WG / 2; span > 0; span >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < span) {
            ra[lid] += ra[lid + span];
            rb[lid] += rb[lid + span];
            const double d = rd[lid + span];
            const int r = rrow[lid + span];
            if (d < rd[lid] || (d == rd[lid] && r < rrow[lid])) {
                rd[lid] = d;
                rrow[lid] = r;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const double w_total = ra[0];
% if center:
    const double ybar = rb[0] / w_total;
% else:
    const double ybar = 0.0;
% endif
    const double t_ref = ot[rrow[0]];
    barrier(CLK_LOCAL_MEM_FENCE);

    // pass 3: residual mean, yy, second moment
    double res = 0, yy = 0, second = 0;
    ${rows} {
        const double wn = WEIGHT(i) / w_total;
        const double u = SCALED(i) - ybar;
        const double ys = ldexp(oy[i], -e);
        res += wn * u;
        yy += wn * u * u;
        second += wn * ys * ys;
    }
    ra[lid] = res; rb[lid] = yy; rc[lid] = second;
    for (int span = WG / 2; span > 0; span >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < span) {
            ra[lid] += ra[lid + span];
            rb[lid] += rb[lid + span];
            rc[lid] += rc[lid + span];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
% if center:
    res = ra[0];
    yy = fmax(rb[0] - res * res, 0.0);
% else:
    res = 0.0;
    yy = rb[0];
% endif
    second = rc[0];
    const double eps = ${repr(float.fromhex("0x1p-52"))};
    if (yy <= eps * eps * second) {
        if (lid == 0) {
            obj_n_eff[obj] = 0;
            obj_yy[obj] = NAN;
            obj_scale[obj] = 0;
            obj_psd[obj] = 0;
            obj_status[obj] = ${zero_variance};
        }
        return;
    }
    int f;
    frexp(sqrt(yy), &f);
    if (lid == 0) {
        const double spread = ldexp(sqrt(ldexp(yy, -2 * f)), e + f) / dy_min;
        const double psd = 0.5 * (w_total * spread * spread);
        obj_n_eff[obj] = n;
        obj_yy[obj] = (real_t) ldexp(yy, -2 * f);
        obj_scale[obj] = (real_t) psd;
        obj_psd[obj] = psd;
        obj_status[obj] = ${ok};
    }

</%def>
